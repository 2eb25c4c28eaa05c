import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";
import { Router } from "./router.entity.ts";
import { Team } from "./team.entity.ts";

// docs/api.md "Alerts and maintenance windows". The tables of one feature in one file (as
// billing-mirror.entity.ts): each is only read and written by the alert repositories.

/** A place people are told (email, Slack, Teams, Telegram, PagerDuty); secrets sealed in `secretCiphertext`. */
export const NotificationChannel = defineEntity({
  name: "NotificationChannel",
  tableName: "notification_channels",
  indexes: [
    { name: "notification_channels_organization_id_created_at_index", properties: ["organization", "createdAt"] },
  ],
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** Set when a team-bound credential made it: only that team sees it (migration 120). */
    team: () => p.manyToOne(Team).deleteRule("cascade").nullable().index(),
    name: p.string().length(100),
    type: p.string().length(16),
    /** The parts of the configuration that are not secret (recipients, chat id, the URL's origin). */
    config: p.json<Record<string, unknown>>(),
    /** AES-256-GCM of the secret parts (JSON), as webhook secrets. */
    secretCiphertext: p.text().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type TNotificationChannel = InferEntity<typeof NotificationChannel>;

/** One message to one channel: the delivery log; `idempotencyKey` makes the engine's fan-out safe to repeat. */
export const NotificationDelivery = defineEntity({
  name: "NotificationDelivery",
  tableName: "notification_deliveries",
  uniques: [
    {
      name: "notification_deliveries_channel_id_idempotency_key_unique",
      properties: ["channel", "idempotencyKey"],
    },
  ],
  indexes: [
    { name: "notification_deliveries_channel_id_created_at_index", properties: ["channel", "createdAt", "id"] },
  ],
  properties: {
    id: p.uuid().primary(),
    channel: () => p.manyToOne(NotificationChannel).deleteRule("cascade"),
    organizationId: p.uuid(),
    event: p.string().length(64),
    routerId: p.uuid().nullable(),
    status: p.string().length(16),
    attempts: p.integer().default(0),
    error: p.string().length(500).nullable(),
    /** The message in neutral form; each channel type renders (and escapes) it at send time. */
    message: p.json<Record<string, unknown>>(),
    idempotencyKey: p.string().length(200).nullable(),
    createdAt: p.datetime(),
    sentAt: p.datetime().nullable(),
  },
});
export type TNotificationDelivery = InferEntity<typeof NotificationDelivery>;

export const AlertRule = defineEntity({
  name: "AlertRule",
  tableName: "alert_rules",
  indexes: [{ name: "alert_rules_organization_id_created_at_index", properties: ["organization", "createdAt"] }],
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** Set when a team-bound credential made it: only that team sees it (migration 120). */
    team: () => p.manyToOne(Team).deleteRule("cascade").nullable().index(),
    name: p.string().length(100),
    events: p.json<string[]>(),
    /** `{team_id?, tags?, router_ids?}`; empty: every router of the organization. */
    routers: p.json<Record<string, unknown>>(),
    minOfflineSeconds: p.integer().default(0),
    quietHours: p.json<Record<string, unknown>>().nullable(),
    createdAt: p.datetime(),
  },
});
export type TAlertRule = InferEntity<typeof AlertRule>;

export const AlertRuleChannel = defineEntity({
  name: "AlertRuleChannel",
  tableName: "alert_rule_channels",
  properties: {
    rule: () => p.manyToOne(AlertRule).primary().deleteRule("cascade"),
    channel: () => p.manyToOne(NotificationChannel).primary().deleteRule("cascade").index(),
  },
});
export type TAlertRuleChannel = InferEntity<typeof AlertRuleChannel>;

/** One-off (`startsAt`..`endsAt`) or weekly (`weekly`: timezone, days, from, duration_minutes). */
export const MaintenanceWindow = defineEntity({
  name: "MaintenanceWindow",
  tableName: "maintenance_windows",
  indexes: [
    { name: "maintenance_windows_organization_id_created_at_index", properties: ["organization", "createdAt"] },
  ],
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** Set when a team-bound credential made it: only that team sees it (migration 120). */
    team: () => p.manyToOne(Team).deleteRule("cascade").nullable().index(),
    name: p.string().length(100),
    routers: p.json<Record<string, unknown>>(),
    startsAt: p.datetime().nullable(),
    endsAt: p.datetime().nullable(),
    weekly: p.json<Record<string, unknown>>().nullable(),
    createdAt: p.datetime(),
  },
});
export type TMaintenanceWindow = InferEntity<typeof MaintenanceWindow>;

/**
 * The alert engine's outbox, filled by the `audit_to_alerts` trigger on `audit_log` (migration 101)
 * and emptied by the engine. No foreign keys: the trigger's insert stays one row.
 */
export const AlertEvent = defineEntity({
  name: "AlertEvent",
  tableName: "alert_events",
  indexes: [{ name: "alert_events_occurred_at_index", properties: ["occurredAt"] }],
  properties: {
    auditId: p.uuid().primary(),
    organizationId: p.uuid(),
    routerId: p.uuid().nullable(),
    action: p.string().length(64),
    occurredAt: p.datetime(),
    details: p.json<Record<string, unknown>>(),
  },
});
export type TAlertEvent = InferEntity<typeof AlertEvent>;

/**
 * A notification of one rule waiting for its time (`dueAt`): after `min_offline_seconds`, the end
 * of quiet hours or of a maintenance window, or the close of a storm. Kept a while once processed:
 * storms are counted from them.
 */
export const AlertPending = defineEntity({
  name: "AlertPending",
  tableName: "alert_pending",
  indexes: [
    { name: "alert_pending_state_due_at_index", properties: ["state", "dueAt"] },
    { name: "alert_pending_rule_id_router_id_index", properties: ["rule", "router"] },
    { name: "alert_pending_organization_id_kind_due_at_index", properties: ["organizationId", "kind", "dueAt"] },
  ],
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    rule: () => p.manyToOne(AlertRule).deleteRule("cascade"),
    router: () => p.manyToOne(Router).deleteRule("cascade").nullable(),
    kind: p.string().length(16),
    event: p.string().length(64),
    occurredAt: p.datetime(),
    dueAt: p.datetime(),
    state: p.string().length(16),
    stormId: p.uuid().nullable(),
    details: p.json<Record<string, unknown>>(),
    processedAt: p.datetime().nullable(),
  },
});
export type TAlertPending = InferEntity<typeof AlertPending>;

/** A router whose going offline a rule notified: its recovery is notified once, with the same key. */
export const AlertRouterState = defineEntity({
  name: "AlertRouterState",
  tableName: "alert_router_state",
  properties: {
    rule: () => p.manyToOne(AlertRule).primary().deleteRule("cascade"),
    router: () => p.manyToOne(Router).primary().deleteRule("cascade"),
    offlineAt: p.datetime(),
    dedupKey: p.string().length(200),
  },
});
export type TAlertRouterState = InferEntity<typeof AlertRouterState>;

/** The open storm of an organization, per kind (offline, recovered): grouped until `closesAt`. */
export const AlertStorm = defineEntity({
  name: "AlertStorm",
  tableName: "alert_storms",
  properties: {
    organization: () => p.manyToOne(Organization).primary().deleteRule("cascade"),
    kind: p.string().length(16).primary(),
    id: p.uuid(),
    openedAt: p.datetime(),
    closesAt: p.datetime(),
  },
});
export type TAlertStorm = InferEntity<typeof AlertStorm>;
