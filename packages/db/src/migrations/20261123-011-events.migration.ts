import { Migration } from "@mikro-orm/migrations";

/** API keys, the audit log (also the webhook outbox), webhooks and their delivery log; forward creators. */
export class EventsMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "audit_log" ("id" uuid not null, "organization_id" uuid not null, "occurred_at" timestamptz not null, "action" varchar(64) not null, "actor_type" text not null, "actor_id" varchar(255) null, "target_type" varchar(32) not null, "target_id" varchar(255) not null, "router_id" uuid null, "source_ip" varchar(45) null, "details" jsonb not null, "dispatched_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "audit_log_org_occurred_index" on "audit_log" ("organization_id", "occurred_at", "id");`);
    this.addSql(
      `create index "audit_log_org_router_occurred_index" on "audit_log" ("organization_id", "router_id", "occurred_at", "id");`,
    );
    this.addSql(
      `create index "audit_log_org_action_occurred_index" on "audit_log" ("organization_id", "action", "occurred_at", "id");`,
    );
    this.addSql(`create index "audit_log_occurred_at_brin" on "audit_log" using brin ("occurred_at");`);
    this.addSql(
      `create index "audit_log_undispatched_index" on "audit_log" ("occurred_at") where "dispatched_at" is null;`,
    );
    this.addSql(
      `create table "api_keys" ("id" uuid not null, "organization_id" uuid not null, "created_by" varchar(255) not null, "name" varchar(100) not null, "prefix" varchar(16) not null, "key_hash" varchar(64) not null, "scopes" varchar(200) not null, "created_at" timestamptz not null, "expires_at" timestamptz null, "last_used_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "api_keys" add constraint "api_keys_key_hash_unique" unique ("key_hash");`);
    this.addSql(
      `create index "api_keys_organization_id_created_at_index" on "api_keys" ("organization_id", "created_at");`,
    );
    this.addSql(
      `create table "webhooks" ("id" uuid not null, "organization_id" uuid not null, "url" varchar(2048) not null, "events" jsonb not null, "description" varchar(500) not null, "format" text not null default 'standard', "secret_ciphertext" text not null, "created_at" timestamptz not null, "failing_since" timestamptz null, "disabled_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create index "webhooks_organization_id_created_at_index" on "webhooks" ("organization_id", "created_at");`,
    );
    this.addSql(
      `create table "webhook_deliveries" ("id" uuid not null, "webhook_id" uuid not null, "audit_id" uuid null, "message_id" varchar(64) not null, "event_type" varchar(64) not null, "body" text not null, "status" text not null default 'pending', "attempts" int not null default 0, "created_at" timestamptz not null, "last_attempt_at" timestamptz null, "response_status" int null, "response_body" varchar(1024) null, "last_error" varchar(500) null, primary key ("id"));`,
    );
    this.addSql(
      `create index "webhook_deliveries_webhook_id_created_at_index" on "webhook_deliveries" ("webhook_id", "created_at", "id");`,
    );
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_webhook_id_audit_id_unique" unique ("webhook_id", "audit_id");`,
    );
    this.addSql(
      `alter table "forwards" add "created_by_type" varchar(16) null, add "created_by_id" varchar(255) null;`,
    );
    this.addSql(
      `alter table "audit_log" add constraint "audit_log_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "audit_log" add constraint "audit_log_actor_type_check" check ("actor_type" in ('user', 'api_key', 'router', 'system'));`,
    );
    this.addSql(
      `alter table "api_keys" add constraint "api_keys_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "webhooks" add constraint "webhooks_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "webhooks" add constraint "webhooks_format_check" check ("format" in ('standard', 'slack'));`,
    );
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_webhook_id_foreign" foreign key ("webhook_id") references "webhooks" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_status_check" check ("status" in ('pending', 'succeeded', 'failed'));`,
    );
  }
}
