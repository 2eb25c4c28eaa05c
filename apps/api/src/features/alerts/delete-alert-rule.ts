import { ZIdPath, ZNoContent } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

export const deleteAlertRule = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/api/alert-rules/{id}",
      tags: ["alert rules"],
      summary: "Delete an alert rule",
    },
    successStatus: 204,
  })
  .input(ZIdPath)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.alertRules.delete(ctx.auth.organizationId, input.id, await ctx.services.teams.bound(ctx.auth));
  });
