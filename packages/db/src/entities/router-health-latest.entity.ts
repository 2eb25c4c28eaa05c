import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

/**
 * The latest health values a router reported (docs/api.md "Health"): one narrow row per router that
 * ever reported any, upserted by the daemon's batched flush (fillfactor 75, no secondary index:
 * heap-only updates). Percentages are of the totals the router reported; null: not reported.
 */
export const RouterHealthLatest = defineEntity({
  name: "RouterHealthLatest",
  tableName: "router_health_latest",
  properties: {
    router: () => p.manyToOne(Router).primary().deleteRule("cascade"),
    reportedAt: p.datetime(),
    cpuLoad: p.float().nullable(),
    memoryUsedPercent: p.float().nullable(),
    diskUsedPercent: p.float().nullable(),
    temperature: p.float().nullable(),
    voltage: p.float().nullable(),
    pingLossPercent: p.float().nullable(),
    pingRttMs: p.float().nullable(),
  },
});
export type TRouterHealthLatest = InferEntity<typeof RouterHealthLatest>;
