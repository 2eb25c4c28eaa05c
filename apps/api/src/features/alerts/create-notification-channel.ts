import { successEnvelope, ZChannel, ZCreateChannelInput } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const createNotificationChannel = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/notification-channels",
      tags: ["notifications"],
      summary: "Create a notification channel",
      description:
        "Types: email `{to}`, slack `{webhook_url}`, teams `{webhook_url}`, telegram `{bot_token, chat_id}`, pagerduty `{routing_key}`. Secrets are sealed and answered masked. At most 50 per organization (the 51st: 429).",
    },
    successStatus: 201,
  })
  .input(ZCreateChannelInput)
  .output(successEnvelope(ZChannel))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.notificationChannels.create(
        ctx.auth.organizationId,
        auditOrigin(ctx),
        input,
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
