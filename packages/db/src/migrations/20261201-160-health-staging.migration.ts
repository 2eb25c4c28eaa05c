import { Migration } from "@mikro-orm/migrations";

/** The staged 5-minute samples (docs/scale.md "Health samples"). */
export const HEALTH_STAGING_TABLE = "router_health_staged";

/**
 * Where the 5-minute tier is written while a day is open (docs/scale.md "Health samples"): one row
 * per router per sample period (its resources and every interface's traffic), inserted once and
 * never rewritten, in daily partitions. The health-partitions job compacts a closed day into one
 * row per router (and interface) of `router_resource_samples`/`router_traffic_samples` (`part` 4)
 * and drops the day's partition: no dead rows, no vacuum. Reads merge both.
 */
export class HealthStagingMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "${HEALTH_STAGING_TABLE}" ("router_id" uuid not null, "day" int not null, "second" int not null, "data" bytea not null, primary key ("router_id", "day", "second")) partition by range ("day");`,
    );
    this.addSql(
      `alter table "${HEALTH_STAGING_TABLE}" add constraint "${HEALTH_STAGING_TABLE}_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );
  }
}
