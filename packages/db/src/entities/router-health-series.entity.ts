import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

// The partitioned health series (migrations 131 and 160, docs/scale.md "Health samples"): `day` in
// days since 1970-01-01, `data` packed records (repositories/health-packing.ts). The 5-minute tier
// holds one compacted row per router (and interface) per day (`part` 4; 0-3: quarter days written
// before migration 160); the hourly tier one appended row per day (`part` 0). Partitions are made,
// and dropped, by the health-partitions job.

/** A resource series' columns: a router's day, in parts, of packed records. */
const resourceSeries = () => ({
  router: () => p.manyToOne(Router).primary().deleteRule("cascade"),
  day: p.integer().primary(),
  part: p.smallint().primary(),
  data: p.blob(),
});
/** A traffic series' columns: the same per interface `name` (second in the primary key). */
const trafficSeries = () => {
  const { router, ...rest } = resourceSeries();
  return { router, name: p.string().length(100).primary(), ...rest };
};

/** 5-minute resource samples (daily partitions, RESOURCE_RETENTION_DAYS). */
export const RouterResourceSamples = defineEntity({
  name: "RouterResourceSamples",
  tableName: "router_resource_samples",
  properties: resourceSeries(),
});
export type TRouterResourceSamples = InferEntity<typeof RouterResourceSamples>;

/** Hourly resource min/avg/max (monthly partitions, METRICS_RETENTION_DAYS). */
export const RouterResourceHourly = defineEntity({
  name: "RouterResourceHourly",
  tableName: "router_resource_hourly",
  properties: resourceSeries(),
});
export type TRouterResourceHourly = InferEntity<typeof RouterResourceHourly>;

/** 5-minute interface rates (daily partitions). */
export const RouterTrafficSamples = defineEntity({
  name: "RouterTrafficSamples",
  tableName: "router_traffic_samples",
  properties: trafficSeries(),
});
export type TRouterTrafficSamples = InferEntity<typeof RouterTrafficSamples>;

/** Hourly interface rates (monthly partitions). */
export const RouterTrafficHourly = defineEntity({
  name: "RouterTrafficHourly",
  tableName: "router_traffic_hourly",
  properties: trafficSeries(),
});
export type TRouterTrafficHourly = InferEntity<typeof RouterTrafficHourly>;

/** The latest state, counters and rates of the interfaces a router reports: one row per router (migration 161). */
export const RouterInterfacesState = defineEntity({
  name: "RouterInterfacesState",
  tableName: "router_interfaces_state",
  properties: {
    router: () => p.manyToOne(Router).primary().deleteRule("cascade").updateRule("cascade"),
    reportedAt: p.datetime(),
    interfaces: p.json(),
    /** The oldest entry time of the write that last set the row (migration 190). */
    writtenFrom: p.datetime().nullable(),
  },
});
export type TRouterInterfacesState = InferEntity<typeof RouterInterfacesState>;

/** The 5-minute tier while its day is open (migration 160): one row per router per period, compacted daily. */
export const RouterHealthStaged = defineEntity({
  name: "RouterHealthStaged",
  tableName: "router_health_staged",
  properties: {
    router: () => p.manyToOne(Router).primary().deleteRule("cascade"),
    day: p.integer().primary(),
    second: p.integer().primary(),
    data: p.blob(),
  },
});
export type TRouterHealthStaged = InferEntity<typeof RouterHealthStaged>;
