import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";
import { Router } from "./router.entity.ts";

/**
 * The measures an organization sets (docs/api.md "Health thresholds"): `{"cpu": {"above",
 * "for_seconds"} | null, ...}`; a measure it never named follows the defaults (migration 140).
 */
export const OrganizationHealthThresholds = defineEntity({
  name: "OrganizationHealthThresholds",
  tableName: "organization_health_thresholds",
  properties: {
    organization: () => p.manyToOne(Organization).primary().deleteRule("cascade"),
    thresholds: p.json<Record<string, unknown>>(),
    updatedAt: p.datetime(),
  },
});
export type TOrganizationHealthThresholds = InferEntity<typeof OrganizationHealthThresholds>;

/** A router's overrides, in the same form: a measure it never named follows its organization. */
export const RouterHealthThresholds = defineEntity({
  name: "RouterHealthThresholds",
  tableName: "router_health_thresholds",
  properties: {
    router: () => p.manyToOne(Router).primary().deleteRule("cascade"),
    thresholds: p.json<Record<string, unknown>>(),
    updatedAt: p.datetime(),
  },
});
export type TRouterHealthThresholds = InferEntity<typeof RouterHealthThresholds>;

/**
 * The resource evaluator's state of one router and measure: above its threshold since
 * `aboveSince`, back below since `belowSince` while its fault (`faultId`) is still open. No row:
 * below and no fault.
 */
export const RouterHealthState = defineEntity({
  name: "RouterHealthState",
  tableName: "router_health_states",
  properties: {
    router: () => p.manyToOne(Router).primary().deleteRule("cascade"),
    measure: p.string().length(16).primary(),
    aboveSince: p.datetime().nullable(),
    belowSince: p.datetime().nullable(),
    faultId: p.uuid().nullable(),
  },
});
export type TRouterHealthState = InferEntity<typeof RouterHealthState>;
