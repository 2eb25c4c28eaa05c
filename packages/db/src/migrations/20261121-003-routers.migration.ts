import { Migration } from "@mikro-orm/migrations";

/** The router inventory. Faults, hourly metrics and OEM data come in their own migrations. */
export class RoutersMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "routers" ("id" uuid not null, "organization_id" uuid not null, "team_id" uuid not null, "name" varchar(100) not null default '', "identity" varchar(255) not null default '', "serial_number" varchar(255) not null default '', "software_version" varchar(100) not null default '', "software_id" varchar(100) not null default '', "model" varchar(100) not null default '', "board_name" varchar(100) not null default '', "hardwareboard" boolean not null default false, "uptime_seconds" bigint null, "has_pulse" boolean not null default false, "last_seen_at" timestamptz null, "last_seen_from" varchar(45) null, "tunnel_ip" varchar(45) null, "reported_metadata" jsonb not null default '{}', "user_metadata" jsonb not null default '{}', "heartbeat_token_hash" varchar(64) not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "routers_organization_id_index" on "routers" ("organization_id");`);
    this.addSql(`create index "routers_team_id_index" on "routers" ("team_id");`);
    this.addSql(
      `alter table "routers" add constraint "routers_heartbeat_token_hash_unique" unique ("heartbeat_token_hash");`,
    );
    this.addSql(
      `alter table "routers" add constraint "routers_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "routers" add constraint "routers_team_id_foreign" foreign key ("team_id") references "teams" ("id") on delete cascade;`,
    );
  }
}
