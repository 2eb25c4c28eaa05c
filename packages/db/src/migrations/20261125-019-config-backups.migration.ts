import { Migration } from "@mikro-orm/migrations";

/** Configuration backups (docs/api.md "Configuration backups"): versions per router and the schedule's bookkeeping. */
export class ConfigBackupsMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "router_config_backups" ("id" uuid not null, "router_id" uuid not null, "created_at" timestamptz not null, "checked_at" timestamptz not null, "sha256" varchar(64) not null, "bytes" int not null, "lines" int not null, "content" text not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "router_config_backups_router_created_index" on "router_config_backups" ("router_id", "created_at", "id");`,
    );
    this.addSql(
      `alter table "router_config_backups" add constraint "router_config_backups_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );
    this.addSql(
      `create table "router_backup_states" ("router_id" uuid not null, "queued_at" timestamptz null, "failed_at" timestamptz null, "failure_reason" varchar(500) null, primary key ("router_id"));`,
    );
    this.addSql(
      `alter table "router_backup_states" add constraint "router_backup_states_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );
  }
}
