import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

/**
 * A fault of a router (docs/api.md "Fault"). Opened by the heartbeat daemon's sweeper after
 * MISSED_HEARTBEATS missed periods, completed by the router's next heartbeat; a `resource` fault
 * (`cause` the measure) by the resource evaluator (docs/api.md "Health thresholds"). The partial
 * unique indexes keep at most one ongoing `site` fault per router and one ongoing `resource` fault
 * per router and measure, so concurrent sweepers open each fault once.
 */
export const RouterFault = defineEntity({
  name: "RouterFault",
  tableName: "router_faults",
  indexes: [{ name: "router_faults_router_id_created_at_index", properties: ["router", "createdAt"] }],
  uniques: [
    {
      name: "router_faults_one_ongoing_unique",
      properties: ["router"],
      where: `"status" = 'ongoing' and "type" = 'site'`,
    },
    {
      name: "router_faults_one_ongoing_resource_unique",
      properties: ["router", "cause"],
      where: `"status" = 'ongoing' and "type" = 'resource'`,
    },
  ],
  properties: {
    id: p.uuid().primary(),
    router: () => p.manyToOne(Router).deleteRule("cascade"),
    type: p.string().length(20),
    severity: p.string().length(20),
    message: p.string().length(400),
    cause: p.string().length(200),
    status: p.enum(["ongoing", "completed"] as const),
    /** The first missed heartbeat: last heartbeat + one interval (docs/api.md "Routers and heartbeats"). */
    createdAt: p.datetime(),
    resolvedAt: p.datetime().nullable(),
    /** Whole seconds from createdAt to resolvedAt. */
    durationSeconds: p.integer().nullable(),
  },
});
export type TRouterFault = InferEntity<typeof RouterFault>;
