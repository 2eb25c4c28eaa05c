import { router } from "../../trpc/init.ts";
import { countRouters } from "./count-routers.ts";
import { enrollRouter } from "./enroll-router.ts";
import { getRouter } from "./get-router.ts";
import { getRouterFaults } from "./get-router-faults.ts";
import { getRouterMetadata } from "./get-router-metadata.ts";
import { getRouterMetrics } from "./get-router-metrics.ts";
import { getRouterOem } from "./get-router-oem.ts";
import { getRouterInterfaces } from "./get-router-interfaces.ts";
import { getRouterResources } from "./get-router-resources.ts";
import { getRouterTraffic } from "./get-router-traffic.ts";
import { listRouters } from "./list-routers.ts";
import { onRouterStatus } from "./on-router-status.ts";
import { reissueAdoption } from "./reissue-adoption.ts";
import { removeRouter } from "./remove-router.ts";
import { updateRouter } from "./update-router.ts";
import { updateRouterMetadata } from "./update-router-metadata.ts";

/** docs/api.md "tRPC": `routers.*` (plus the `onStatus` subscription). */
export const routersRouter = router({
  list: listRouters,
  get: getRouter,
  counts: countRouters,
  enroll: enrollRouter,
  remove: removeRouter,
  metadata: getRouterMetadata,
  update: updateRouter,
  updateMetadata: updateRouterMetadata,
  oem: getRouterOem,
  metrics: getRouterMetrics,
  faults: getRouterFaults,
  onStatus: onRouterStatus,
  adoption: reissueAdoption,
  resources: getRouterResources,
  interfaces: getRouterInterfaces,
  traffic: getRouterTraffic,
});
