import { Migration } from "@mikro-orm/migrations";

/**
 * Availability history (docs/api.md "Availability"): hourly downtime is kept METRICS_RETENTION_DAYS
 * (400) days, pruned by age. BRIN on `hour` serves the prune (append-mostly time column, tiny) and
 * is never picked to read one router's range, which the primary key (router_id, hour) serves.
 */
export class AvailabilityMigration extends Migration {
  override up(): void {
    this.addSql(`create index "router_downtime_hours_hour_brin" on "router_downtime_hours" using brin ("hour");`);
  }
}
