import { successEnvelope, ZHealthThresholds } from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const getHealthThresholds = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/health-thresholds",
      tags: ["health"],
      summary: "The organization's health thresholds",
      description: "Every measure as it applies to the organization's routers without an override; null: not watched.",
    },
    successStatus: 200,
  })
  .output(successEnvelope(ZHealthThresholds))
  .query(jsend(({ ctx }) => ctx.services.healthThresholds.get(ctx.auth.organizationId)));
