import { successEnvelope, ZUpdateChannelBody, ZChannel, ZUpdateChannelInput } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const updateNotificationChannel = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "PATCH",
      path: "/api/notification-channels/{id}",
      tags: ["notifications"],
      summary: "Rename a channel or replace its config",
      description:
        "`config` is replaced whole and checked against the channel's type; a secret sent back as its mask keeps its value.",
    },
    successStatus: 200,
    rest: { body: ZUpdateChannelBody },
  })
  .input(ZUpdateChannelInput)
  .output(successEnvelope(ZChannel))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.notificationChannels.update(
        ctx.auth.organizationId,
        input,
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
