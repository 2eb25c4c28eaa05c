import { Migration } from "@mikro-orm/migrations";

/** Temporary access to a router itself (docs/api.md "Temporary router access"). */
export class RouterAccessMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "router_access" ("id" uuid not null, "router_id" uuid not null, "entry_point" varchar(253) not null, "port" int not null, "service" text not null, "level" text not null, "username" varchar(32) not null, "allow_only_cidr" varchar(18) not null, "status" text not null default 'active', "expires_at" timestamptz not null, "created_at" timestamptz not null, "closed_at" timestamptz null, "applied_at" timestamptz null, "created_by_type" varchar(16) null, "created_by_id" varchar(255) null, primary key ("id"));`,
    );
    this.addSql(`create index "router_access_router_id_index" on "router_access" ("router_id");`);
    this.addSql(`create index "router_access_status_expires_at_index" on "router_access" ("status", "expires_at");`);
    this.addSql(
      `create unique index "router_access_active_port_unique" on "router_access" ("entry_point", "port") where "status" = 'active';`,
    );
    this.addSql(
      `alter table "router_access" add constraint "router_access_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "router_access" add constraint "router_access_service_check" check ("service" in ('winbox', 'ssh', 'webfig'));`,
    );
    this.addSql(
      `alter table "router_access" add constraint "router_access_level_check" check ("level" in ('read', 'full'));`,
    );
    this.addSql(
      `alter table "router_access" add constraint "router_access_status_check" check ("status" in ('active', 'expired', 'revoked'));`,
    );
  }
}
