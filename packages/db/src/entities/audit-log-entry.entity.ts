import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { AUDIT_TO_ALERTS_TRIGGER } from "../migrations/20261129-101-alerts.migration.ts";
import { AUDIT_TO_ALERTS_BODY } from "../migrations/20261129-102-alert-events-routers.migration.ts";
import { Organization } from "./organization.entity.ts";

/**
 * One audited action (docs/api.md "Audit log and webhooks"), written in the transaction of the
 * change it records. The table is also the outbox of webhook delivery: `dispatchedAt` stays null
 * until the dispatcher has queued a delivery for every matching webhook, so a crash between the
 * change and the delivery loses nothing. `routerId` has no foreign key: the history of a removed
 * router stays. Timestamps are whole milliseconds, which keeps the list cursor exact.
 */
export const AuditLogEntry = defineEntity({
  name: "AuditLogEntry",
  tableName: "audit_log",
  indexes: [
    { name: "audit_log_org_occurred_index", properties: ["organization", "occurredAt", "id"] },
    { name: "audit_log_org_router_occurred_index", properties: ["organization", "routerId", "occurredAt", "id"] },
    { name: "audit_log_org_action_occurred_index", properties: ["organization", "action", "occurredAt", "id"] },
    // A team-bound credential's view (docs/api.md "Audit log and webhooks").
    { name: "audit_log_org_team_occurred_index", properties: ["organization", "teamId", "occurredAt", "id"] },
    // Retention deletes by age: BRIN suits an append-mostly time column, stays tiny, and is never
    // mistaken by the planner for a way to read one organization's page in order.
    { name: "audit_log_occurred_at_brin", properties: ["occurredAt"], type: "brin" },
    // The outbox: only rows the dispatcher has not handled yet, so the index stays tiny.
    { name: "audit_log_undispatched_index", properties: ["occurredAt"], where: `"dispatched_at" is null` },
  ],
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    occurredAt: p.datetime(),
    action: p.string().length(64),
    actorType: p.enum(["user", "api_key", "router", "system"] as const),
    actorId: p.string().length(255).nullable(),
    targetType: p.string().length(32),
    targetId: p.string().length(255),
    routerId: p.uuid().nullable(),
    /** The entry's team: its router's, or the acting team-bound credential's; null: organization-wide. No foreign key, like `routerId`. */
    teamId: p.uuid().nullable(),
    sourceIp: p.string().length(45).nullable(),
    details: p.json<Record<string, unknown>>(),
    dispatchedAt: p.datetime().nullable(),
  },
  triggers: [
    // The alert engine's outbox (migrations 101, 102): router entries of organizations with alert rules.
    {
      name: AUDIT_TO_ALERTS_TRIGGER.name,
      body: AUDIT_TO_ALERTS_BODY,
      timing: "after",
      events: ["insert"],
      forEach: "row",
    },
  ],
});
export type TAuditLogEntry = InferEntity<typeof AuditLogEntry>;
