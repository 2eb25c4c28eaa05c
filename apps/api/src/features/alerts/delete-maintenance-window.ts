import { ZIdPath, ZNoContent } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const deleteMaintenanceWindow = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/api/maintenance-windows/{id}",
      tags: ["maintenance windows"],
      summary: "Delete a maintenance window",
    },
    successStatus: 204,
  })
  .input(ZIdPath)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.maintenanceWindows.delete(
      ctx.auth.organizationId,
      input.id,
      auditOrigin(ctx),
      await ctx.services.teams.bound(ctx.auth),
    );
  });
