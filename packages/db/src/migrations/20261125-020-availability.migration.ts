import { Migration } from "@mikro-orm/migrations";

/**
 * Availability history (docs/api.md "Availability"): hourly downtime is kept METRICS_RETENTION_DAYS
 * (400) days, pruned by age. BRIN on `hour` serves the prune (append-mostly time column, tiny) and
 * is never picked to read one router's range, which the primary key (router_id, hour) serves.
 */
export class AvailabilityMigration extends Migration {
  override up(): void {
    this.addSql(`create index "router_downtime_hours_hour_brin" on "router_downtime_hours" using brin ("hour");`);
    // Reports sum a router's range from this index alone (index-only scans), never visiting the table.
    this.addSql(
      `create index "router_downtime_hours_router_hour_covering" on "router_downtime_hours" ("router_id", "hour") include ("seconds_down");`,
    );
  }
}
