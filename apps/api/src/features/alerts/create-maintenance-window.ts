import { successEnvelope, ZCreateMaintenanceWindowInput, ZMaintenanceWindow } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const createMaintenanceWindow = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/maintenance-windows",
      tags: ["maintenance windows"],
      summary: "Create a maintenance window",
      description:
        "One-off (`starts_at`, `ends_at`) or `weekly` in a time zone. Routers inside notify nothing, their faults say `maintenance`, and availability counts the time apart.",
    },
    // Another organization's channel, team or router named in the body.
    rest: { errors: [404] },
    successStatus: 201,
  })
  .input(ZCreateMaintenanceWindowInput)
  .output(successEnvelope(ZMaintenanceWindow))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.maintenanceWindows.create(
        ctx.auth.organizationId,
        auditOrigin(ctx),
        input,
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
