import { ZIdPath, ZNoContent } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

export const deleteNotificationChannel = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/api/notification-channels/{id}",
      tags: ["notifications"],
      summary: "Delete a channel, its delivery log and its place in rules",
    },
    successStatus: 204,
  })
  .input(ZIdPath)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.notificationChannels.delete(
      ctx.auth.organizationId,
      input.id,
      await ctx.services.teams.bound(ctx.auth),
    );
  });
