import { Migration } from "@mikro-orm/migrations";

/**
 * Liveness leaves `routers` (docs/architecture.md "Liveness: what a heartbeat writes"): `has_pulse`, `last_seen_at`,
 * `last_seen_from` and `uptime_seconds` move to the narrow `router_liveness`, which heartbeats
 * update in place. Fillfactor 75 leaves room on each page for the next version of a row, and no
 * index covers a column a heartbeat changes, so every heartbeat is a HOT update (no index entries).
 * The sweeper's index on (has_pulse, last_seen_at) goes: it scans the narrow table instead.
 * Existing values are copied (only routers that carry any: no row means never seen).
 */
export class RouterLivenessMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "router_liveness" ("router_id" uuid not null, "has_pulse" boolean not null default false, "last_seen_at" timestamptz null, "last_seen_from" varchar(45) null, "uptime_seconds" bigint null, primary key ("router_id")) with (fillfactor = 75);`,
    );
    this.addSql(
      `alter table "router_liveness" add constraint "router_liveness_router_id_foreign" foreign key ("router_id") references "routers" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `insert into "router_liveness" ("router_id", "has_pulse", "last_seen_at", "last_seen_from", "uptime_seconds")
       select "id", "has_pulse", "last_seen_at", "last_seen_from", "uptime_seconds" from "routers"
       where "has_pulse" or "last_seen_at" is not null or "last_seen_from" is not null or "uptime_seconds" is not null;`,
    );
    this.addSql(`drop index "routers_has_pulse_last_seen_at_index";`);
    this.addSql(
      `alter table "routers" drop column "has_pulse", drop column "last_seen_at", drop column "last_seen_from", drop column "uptime_seconds";`,
    );
  }
}
