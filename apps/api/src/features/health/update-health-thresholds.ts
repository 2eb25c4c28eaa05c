import { successEnvelope, ZHealthThresholds, ZHealthThresholdsBody } from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const updateHealthThresholds = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "PUT",
      path: "/api/health-thresholds",
      tags: ["health"],
      summary: "Change the organization's health thresholds",
      description:
        'Replaces only the measures named (`cpu`, `memory`, `disk`, `temperature`, `ping_loss`), each `{"above", "for_seconds": 0..86400}` or null (not watched). A credential bound to a team: 403.',
    },
    successStatus: 200,
  })
  .input(ZHealthThresholdsBody)
  .output(successEnvelope(ZHealthThresholds))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.healthThresholds.update(ctx.auth.organizationId, input, ctx.auth.teamId),
    ),
  );
