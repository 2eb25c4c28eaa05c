import { successEnvelope, ZRouterHealthThresholds, ZRouterIdInput } from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { teamProcedure } from "../../trpc/init.ts";

export const getRouterHealthThresholds = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/health-thresholds",
      tags: ["health"],
      summary: "The health thresholds that apply to a router",
      description: "Its overrides (listed in `overridden`) over its organization's thresholds.",
    },
    successStatus: 200,
  })
  .input(ZRouterIdInput)
  .output(successEnvelope(ZRouterHealthThresholds))
  .query(jsend(({ ctx, input }) => ctx.services.healthThresholds.getRouter(ctx.teamId, input.router_id)));
