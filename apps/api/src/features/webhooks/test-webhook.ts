import { successEnvelope, ZIdPath, ZWebhookDelivery } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const testWebhook = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/webhooks/{id}/test",
      tags: ["webhooks"],
      summary: "Send a webhook.test event",
      description: "Queues the event at once; its delivery appears in the delivery log.",
    },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(ZWebhookDelivery))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.webhooks.test(ctx.auth.organizationId, input.id, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
