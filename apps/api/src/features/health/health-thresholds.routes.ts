import { router } from "../../trpc/init.ts";
import { getHealthThresholds } from "./get-health-thresholds.ts";
import { getRouterHealthThresholds } from "./get-router-health-thresholds.ts";
import { updateHealthThresholds } from "./update-health-thresholds.ts";
import { updateRouterHealthThresholds } from "./update-router-health-thresholds.ts";

/** docs/api.md "Health thresholds". */
export const healthThresholdsRouter = router({
  get: getHealthThresholds,
  update: updateHealthThresholds,
  getRouter: getRouterHealthThresholds,
  updateRouter: updateRouterHealthThresholds,
});
