import { successEnvelope, ZMaintenanceWindow } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listMaintenanceWindows = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/maintenance-windows",
      tags: ["maintenance windows"],
      summary: "List the organization's maintenance windows",
    },
    successStatus: 200,
  })
  .input(z.void())
  .output(successEnvelope(z.array(ZMaintenanceWindow)))
  .query(
    jsend(async ({ ctx }) =>
      ctx.services.maintenanceWindows.list(ctx.auth.organizationId, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
