import { successEnvelope, ZChannel, ZIdPath } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getNotificationChannel = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/notification-channels/{id}",
      tags: ["notifications"],
      summary: "One notification channel",
    },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(ZChannel))
  .query(
    jsend(async ({ ctx, input }) =>
      ctx.services.notificationChannels.get(
        ctx.auth.organizationId,
        input.id,
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
