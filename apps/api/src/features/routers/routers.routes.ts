import { router } from "../../trpc/init.ts";
import { enrollRouter } from "./enroll-router.ts";
import { getRouterFaults } from "./get-router-faults.ts";
import { getRouterMetadata } from "./get-router-metadata.ts";
import { getRouterMetrics } from "./get-router-metrics.ts";
import { getRouterOem } from "./get-router-oem.ts";
import { listRouters } from "./list-routers.ts";
import { moveRouter } from "./move-router.ts";
import { onRouterStatus } from "./on-router-status.ts";
import { reissueAdoption } from "./reissue-adoption.ts";
import { removeRouter } from "./remove-router.ts";
import { updateRouterMetadata } from "./update-router-metadata.ts";

/** docs/api.md "tRPC": `routers.*` (plus the `onStatus` subscription). */
export const routersRouter = router({
  list: listRouters,
  enroll: enrollRouter,
  remove: removeRouter,
  metadata: getRouterMetadata,
  updateMetadata: updateRouterMetadata,
  oem: getRouterOem,
  metrics: getRouterMetrics,
  faults: getRouterFaults,
  onStatus: onRouterStatus,
  adoption: reissueAdoption,
  update: moveRouter,
});
