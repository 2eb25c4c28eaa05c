import { ZDeliveriesPage, ZDeliveriesQuery } from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const listNotificationDeliveries = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/notification-channels/{id}/deliveries",
      tags: ["notifications"],
      summary: "The channel's delivery log, newest first",
      description: "Pages of up to `limit` (1..100, default 50); pass `next_cursor` back as `cursor`.",
    },
    successStatus: 200,
  })
  .input(ZDeliveriesQuery)
  .output(ZDeliveriesPage)
  .query(
    jsend.page(async ({ ctx, input }) =>
      ctx.services.notificationChannels.deliveries(
        ctx.auth.organizationId,
        input,
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
