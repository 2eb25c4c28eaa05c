import { successEnvelope, ZCreatedWebhook, ZCreateWebhookInput } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const createWebhook = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/webhooks",
      tags: ["webhooks"],
      summary: "Create an outbound webhook",
      description:
        'Audit actions (or "*") are POSTed to `url`, signed per Standard Webhooks with `secret` (shown only here). `url` must be https to a publicly routed address. `"format": "slack"` sends `{"text"}` for Slack incoming webhooks. At most 20 per organization (the 21st: 429 with `Retry-After`).',
      successDescription: "Created",
    },
    successStatus: 201,
    noStore: true,
  })
  .input(ZCreateWebhookInput)
  .output(successEnvelope(ZCreatedWebhook))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.webhooks.create(
        ctx.auth.organizationId,
        auditOrigin(ctx),
        input,
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
