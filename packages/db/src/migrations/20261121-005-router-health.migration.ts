import { Migration } from "@mikro-orm/migrations";

/**
 * Router health: faults (one ongoing per router, enforced by a partial unique index so concurrent
 * sweepers open each fault once), downtime per router and UTC hour, the daemons' coverage record
 * (restart rule), and the index the fault sweeper scans.
 */
export class RouterHealthMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "heartbeat_coverage" ("id" smallint primary key, "covered_since" timestamptz not null, "alive_at" timestamptz not null, "outage_started_at" timestamptz null, "interval_ms" int not null);`,
    );
    this.addSql(
      `create table "router_faults" ("id" uuid not null, "router_id" uuid not null, "type" varchar(20) not null, "severity" varchar(20) not null, "message" varchar(400) not null, "cause" varchar(200) not null, "status" text not null, "created_at" timestamptz not null, "resolved_at" timestamptz null, "duration_seconds" int null, primary key ("id"));`,
    );
    this.addSql(
      `create index "router_faults_router_id_created_at_index" on "router_faults" ("router_id", "created_at");`,
    );
    this.addSql(
      `create unique index "router_faults_one_ongoing_unique" on "router_faults" ("router_id") where "status" = 'ongoing';`,
    );
    this.addSql(
      `create table "router_downtime_hours" ("router_id" uuid not null, "hour" timestamptz not null, "seconds_down" int not null, primary key ("router_id", "hour"));`,
    );
    this.addSql(`create index "routers_has_pulse_last_seen_at_index" on "routers" ("has_pulse", "last_seen_at");`);
    this.addSql(
      `alter table "router_faults" add constraint "router_faults_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "router_faults" add constraint "router_faults_status_check" check ("status" in ('ongoing', 'completed'));`,
    );
    this.addSql(
      `alter table "router_downtime_hours" add constraint "router_downtime_hours_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );
  }
}
