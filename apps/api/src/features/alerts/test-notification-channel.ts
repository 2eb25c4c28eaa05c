import { successEnvelope, ZIdPath, ZQueuedNotification } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const testNotificationChannel = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/notification-channels/{id}/test",
      tags: ["notifications"],
      summary: "Send a test message",
      description: "Queues the message at once; its delivery appears in the delivery log after its first attempt.",
    },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(ZQueuedNotification))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.notificationChannels.test(
        ctx.auth.organizationId,
        input.id,
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
