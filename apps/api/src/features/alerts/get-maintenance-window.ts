import { successEnvelope, ZIdPath, ZMaintenanceWindow } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getMaintenanceWindow = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/maintenance-windows/{id}",
      tags: ["maintenance windows"],
      summary: "One maintenance window",
    },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(ZMaintenanceWindow))
  .query(
    jsend(async ({ ctx, input }) =>
      ctx.services.maintenanceWindows.get(ctx.auth.organizationId, input.id, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
