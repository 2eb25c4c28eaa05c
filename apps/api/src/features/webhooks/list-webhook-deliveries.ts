import { successEnvelope, ZIdPath, ZWebhookDelivery } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listWebhookDeliveries = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/webhooks/{id}/deliveries",
      tags: ["webhooks"],
      summary: "The webhook's delivery log, newest first (last 100)",
    },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(z.array(ZWebhookDelivery)))
  .query(
    jsend(async ({ ctx, input }) =>
      ctx.services.webhooks.deliveries(ctx.auth.organizationId, input.id, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
