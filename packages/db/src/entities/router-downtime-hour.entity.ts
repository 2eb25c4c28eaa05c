import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

/**
 * Seconds a router was down in one UTC hour (docs/api.md "Metric (hourly)"): one small row per router and hour
 * with downtime, never one per heartbeat. Hours without a row had no downtime.
 */
export const RouterDowntimeHour = defineEntity({
  name: "RouterDowntimeHour",
  tableName: "router_downtime_hours",
  // Retention deletes by age (docs/api.md "Availability"); reads go by the primary key.
  indexes: [
    { name: "router_downtime_hours_hour_brin", properties: ["hour"], type: "brin" },
    // Reports sum a router's range from the index alone (index-only scan), never visiting the table.
    {
      name: "router_downtime_hours_router_hour_covering",
      properties: ["router", "hour"],
      include: ["secondsDown"],
    },
  ],
  properties: {
    router: () => p.manyToOne(Router).primary().deleteRule("cascade"),
    /** Start of the UTC hour. */
    hour: p.datetime().primary(),
    secondsDown: p.integer(),
  },
});
export type TRouterDowntimeHour = InferEntity<typeof RouterDowntimeHour>;
