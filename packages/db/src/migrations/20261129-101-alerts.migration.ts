import { Migration } from "@mikro-orm/migrations";

/**
 * The trigger that copies the audit entries alerts may need into `alert_events`, the alert engine's
 * outbox (docs/api.md "Alerts and maintenance windows"). Only for organizations with an alert rule,
 * so the heartbeat daemon's sweeper pays one index probe per entry and no row for the others; the
 * relay's connection events are never copied. The AuditLogEntry entity declares it from these same
 * strings (its `triggers`), so the schema comparison sees what this migration created.
 */
export const AUDIT_TO_ALERTS_TRIGGER = {
  name: "audit_to_alerts",
  body:
    "if new.action not like '%.connection.%' and exists (select 1 from alert_rules a where a.organization_id = new.organization_id) then " +
    "insert into alert_events (audit_id, organization_id, router_id, action, occurred_at, details) " +
    "values (new.id, new.organization_id, new.router_id, new.action, new.occurred_at, new.details); end if; return null;",
} as const;

/**
 * Alerts that reach people (docs/api.md "Alerts and maintenance windows"): notification channels and
 * their delivery log, alert rules and the channels they notify, maintenance windows, and the alert
 * engine's state (its outbox, the notifications waiting for their time, per rule and router what
 * was notified, and the open storm of each organization).
 */
export class AlertsMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "notification_channels" ("id" uuid not null, "organization_id" uuid not null, "name" varchar(100) not null, "type" varchar(16) not null, "config" jsonb not null, "secret_ciphertext" text null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "notification_channels_organization_id_created_at_index" on "notification_channels" ("organization_id", "created_at");`,
    );
    this.addSql(
      `create table "notification_deliveries" ("id" uuid not null, "channel_id" uuid not null, "organization_id" uuid not null, "event" varchar(64) not null, "router_id" uuid null, "status" varchar(16) not null, "attempts" int not null default 0, "error" varchar(500) null, "message" jsonb not null, "idempotency_key" varchar(200) null, "created_at" timestamptz not null, "sent_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create index "notification_deliveries_channel_id_created_at_index" on "notification_deliveries" ("channel_id", "created_at", "id");`,
    );
    this.addSql(
      `alter table "notification_deliveries" add constraint "notification_deliveries_channel_id_idempotency_key_unique" unique ("channel_id", "idempotency_key");`,
    );
    this.addSql(
      `create table "alert_rules" ("id" uuid not null, "organization_id" uuid not null, "name" varchar(100) not null, "events" jsonb not null, "routers" jsonb not null, "min_offline_seconds" int not null default 0, "quiet_hours" jsonb null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "alert_rules_organization_id_created_at_index" on "alert_rules" ("organization_id", "created_at");`,
    );
    this.addSql(
      `create table "alert_rule_channels" ("rule_id" uuid not null, "channel_id" uuid not null, primary key ("rule_id", "channel_id"));`,
    );
    this.addSql(`create index "alert_rule_channels_channel_id_index" on "alert_rule_channels" ("channel_id");`);
    this.addSql(
      `create table "maintenance_windows" ("id" uuid not null, "organization_id" uuid not null, "name" varchar(100) not null, "routers" jsonb not null, "starts_at" timestamptz null, "ends_at" timestamptz null, "weekly" jsonb null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "maintenance_windows_organization_id_created_at_index" on "maintenance_windows" ("organization_id", "created_at");`,
    );
    this.addSql(
      `create table "alert_events" ("audit_id" uuid not null, "organization_id" uuid not null, "router_id" uuid null, "action" varchar(64) not null, "occurred_at" timestamptz not null, "details" jsonb not null, primary key ("audit_id"));`,
    );
    this.addSql(`create index "alert_events_occurred_at_index" on "alert_events" ("occurred_at");`);
    this.addSql(
      `create table "alert_pending" ("id" uuid not null, "organization_id" uuid not null, "rule_id" uuid not null, "router_id" uuid null, "kind" varchar(16) not null, "event" varchar(64) not null, "occurred_at" timestamptz not null, "due_at" timestamptz not null, "state" varchar(16) not null, "storm_id" uuid null, "details" jsonb not null, "processed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "alert_pending_state_due_at_index" on "alert_pending" ("state", "due_at");`);
    this.addSql(`create index "alert_pending_rule_id_router_id_index" on "alert_pending" ("rule_id", "router_id");`);
    this.addSql(
      `create index "alert_pending_organization_id_kind_due_at_index" on "alert_pending" ("organization_id", "kind", "due_at");`,
    );
    this.addSql(
      `create table "alert_router_state" ("rule_id" uuid not null, "router_id" uuid not null, "offline_at" timestamptz not null, "dedup_key" varchar(200) not null, primary key ("rule_id", "router_id"));`,
    );
    this.addSql(
      `create table "alert_storms" ("organization_id" uuid not null, "kind" varchar(16) not null, "id" uuid not null, "opened_at" timestamptz not null, "closes_at" timestamptz not null, primary key ("organization_id", "kind"));`,
    );
    for (const [table, column, target] of [
      ["notification_channels", "organization_id", "organizations"],
      ["notification_deliveries", "channel_id", "notification_channels"],
      ["alert_rules", "organization_id", "organizations"],
      ["maintenance_windows", "organization_id", "organizations"],
      ["alert_pending", "rule_id", "alert_rules"],
      ["alert_pending", "router_id", "routers"],
      ["alert_storms", "organization_id", "organizations"],
    ] as const) {
      this.addSql(
        `alter table "${table}" add constraint "${table}_${column}_foreign" foreign key ("${column}") references "${target}" ("id") on delete cascade;`,
      );
    }
    // Foreign keys that are part of a primary key: MikroORM declares them with "on update cascade".
    for (const [table, column, target] of [
      ["alert_rule_channels", "rule_id", "alert_rules"],
      ["alert_rule_channels", "channel_id", "notification_channels"],
      ["alert_router_state", "rule_id", "alert_rules"],
      ["alert_router_state", "router_id", "routers"],
    ] as const) {
      this.addSql(
        `alter table "${table}" add constraint "${table}_${column}_foreign" foreign key ("${column}") references "${target}" ("id") on update cascade on delete cascade;`,
      );
    }
    const { name, body } = AUDIT_TO_ALERTS_TRIGGER;
    // Named as MikroORM names a trigger's function (<table>_<trigger>_fn), with its begin/end wrapper.
    this.addSql(
      `create function "audit_log_${name}_fn"() returns trigger as $$ begin ${body} end; $$ language plpgsql;`,
    );
    this.addSql(
      `create trigger "${name}" after insert on "audit_log" for each row execute function "audit_log_${name}_fn"();`,
    );
  }
}
