import { Migration } from "@mikro-orm/migrations";

/**
 * Health thresholds and `resource` faults (docs/api.md "Health thresholds"): what an organization
 * and a router watch (only the measures they set; the rest follow the defaults, then the
 * organization), and per router and measure the evaluator's state: since when the measure is above
 * its threshold or back below it, and the fault it opened. A router now has at most one ongoing
 * `site` fault and one ongoing `resource` fault per measure (`cause`), so the one-ongoing index
 * becomes two partial indexes.
 */
export class HealthThresholdsMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "organization_health_thresholds" ("organization_id" uuid not null, "thresholds" jsonb not null, "updated_at" timestamptz not null, primary key ("organization_id"));`,
    );
    this.addSql(
      `create table "router_health_thresholds" ("router_id" uuid not null, "thresholds" jsonb not null, "updated_at" timestamptz not null, primary key ("router_id"));`,
    );
    this.addSql(
      `create table "router_health_states" ("router_id" uuid not null, "measure" varchar(16) not null, "above_since" timestamptz null, "below_since" timestamptz null, "fault_id" uuid null, primary key ("router_id", "measure"));`,
    );
    // Foreign keys that are part of a primary key: MikroORM declares them with "on update cascade".
    for (const [table, column, target] of [
      ["organization_health_thresholds", "organization_id", "organizations"],
      ["router_health_thresholds", "router_id", "routers"],
    ] as const) {
      this.addSql(
        `alter table "${table}" add constraint "${table}_${column}_foreign" foreign key ("${column}") references "${target}" ("id") on update cascade on delete cascade;`,
      );
    }
    this.addSql(
      `alter table "router_health_states" add constraint "router_health_states_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );
    this.addSql(`drop index "router_faults_one_ongoing_unique";`);
    this.addSql(
      `create unique index "router_faults_one_ongoing_unique" on "router_faults" ("router_id") where "status" = 'ongoing' and "type" = 'site';`,
    );
    this.addSql(
      `create unique index "router_faults_one_ongoing_resource_unique" on "router_faults" ("router_id", "cause") where "status" = 'ongoing' and "type" = 'resource';`,
    );
  }
}
