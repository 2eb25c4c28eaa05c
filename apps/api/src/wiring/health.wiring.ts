import { RoutersRepository } from "@fleet/db";
import { HealthThresholdsService } from "../features/health/health-thresholds.service.ts";
import { ResourceEvaluator } from "../features/health/resource-evaluator.ts";
import type { Wired, WiringContext } from "./wiring.ts";

export interface HealthServices {
  healthThresholds: HealthThresholdsService;
}

/**
 * Health beyond up and down (docs/api.md "Health thresholds"): thresholds per organization and
 * router, and the evaluator that opens and completes `resource` faults. The evaluator runs with the
 * cluster-wide schedules (`evaluate`): the API harness leaves both off, and tests call
 * `evaluateResources` directly.
 */
export const wireHealth = (
  { db, clock, logger }: WiringContext,
  options: { evaluate: boolean },
): Wired<HealthServices> => {
  const evaluator = options.evaluate
    ? new ResourceEvaluator({ db, clock, logger: logger.child({ part: "resource-evaluator" }) })
    : null;
  return {
    services: { healthThresholds: new HealthThresholdsService({ db, clock, routers: new RoutersRepository(db) }) },
    schedules: [],
    close: async () => {
      await evaluator?.close();
    },
  };
};
