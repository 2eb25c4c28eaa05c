import { Migration } from "@mikro-orm/migrations";

/**
 * Fleet changes (docs/api.md "Changes"): a script or firmware upgrade rolled out in canary waves.
 * `changes` holds the change, its strategy and the dispatcher's state; `change_routers` one row per
 * targeted router, its wave (0: canary), its result and the executor's resumable step (`phase`).
 */
export class ChangesMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "changes" ("id" uuid not null, "organization_id" uuid not null, "team_id" uuid null, "name" varchar(100) not null, "kind" varchar(16) not null, "script" text null, "firmware_channel" varchar(16) null, "firmware_version" varchar(64) null, "selector" jsonb not null, "canary" int not null, "wave_size" int not null, "wave_interval_seconds" int not null, "max_failures" int not null, "guard_seconds" int not null, "requires_approval" boolean not null default false, "start_at" timestamptz null, "state" varchar(24) not null, "created_by_type" varchar(16) not null, "created_by" varchar(100) null, "approved_by" varchar(100) null, "approved_at" timestamptz null, "started_at" timestamptz null, "finished_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "changes_organization_id_created_at_id_index" on "changes" ("organization_id", "created_at", "id");`,
    );
    this.addSql(`create index "changes_team_id_index" on "changes" ("team_id");`);
    this.addSql(
      `create table "change_routers" ("id" uuid not null, "change_id" uuid not null, "router_id" uuid not null, "wave" int not null, "position" int not null, "state" varchar(24) not null, "phase" varchar(32) null, "script" text null, "output" text null, "started_at" timestamptz null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "change_routers" add constraint "change_routers_change_id_router_id_unique" unique ("change_id", "router_id");`,
    );
    this.addSql(
      `create index "change_routers_change_id_wave_position_index" on "change_routers" ("change_id", "wave", "position");`,
    );
    this.addSql(`create index "change_routers_router_id_index" on "change_routers" ("router_id");`);
    for (const [table, column, target] of [
      ["changes", "organization_id", "organizations"],
      ["changes", "team_id", "teams"],
      ["change_routers", "change_id", "changes"],
      ["change_routers", "router_id", "routers"],
    ] as const) {
      this.addSql(
        `alter table "${table}" add constraint "${table}_${column}_foreign" foreign key ("${column}") references "${target}" ("id") on delete cascade;`,
      );
    }
  }
}
