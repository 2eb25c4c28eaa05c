import { successEnvelope, ZChannel } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listNotificationChannels = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/notification-channels",
      tags: ["notifications"],
      summary: "List the organization's notification channels",
    },
    successStatus: 200,
  })
  .input(z.void())
  .output(successEnvelope(z.array(ZChannel)))
  .query(
    jsend(async ({ ctx }) =>
      ctx.services.notificationChannels.list(ctx.auth.organizationId, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
