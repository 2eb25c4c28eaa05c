import {
  successEnvelope,
  ZHealthThresholdsBody,
  ZRouterHealthThresholds,
  ZRouterHealthThresholdsInput,
} from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { teamProcedure } from "../../trpc/init.ts";

export const updateRouterHealthThresholds = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "PUT",
      path: "/api/routers/{router_id}/health-thresholds",
      tags: ["health"],
      summary: "Override health thresholds for one router",
      description: "Replaces only the measures named; null: not watched on this router whatever its organization says.",
    },
    successStatus: 200,
    rest: { body: ZHealthThresholdsBody },
  })
  .input(ZRouterHealthThresholdsInput)
  .output(successEnvelope(ZRouterHealthThresholds))
  .mutation(
    jsend(async ({ ctx, input }) => {
      const { router_id, ...body } = input;
      return ctx.services.healthThresholds.updateRouter(ctx.teamId, router_id, body);
    }),
  );
