import { Migration } from "@mikro-orm/migrations";

/** The partitioned health series (docs/scale.md "Health samples"): daily partitions of the 5-minute tier, monthly of the hourly. */
export const HEALTH_SERIES_TABLES = {
  resourceSamples: "router_resource_samples",
  resourceHourly: "router_resource_hourly",
  trafficSamples: "router_traffic_samples",
  trafficHourly: "router_traffic_hourly",
} as const;

/**
 * Health kept over time (docs/api.md "Health"). One row per router (and interface) per UTC day,
 * `day` counted in days since 1970-01-01; `data` packs that day's fixed-size records
 * (health-packing.ts), appended as periods close, so a day of 5-minute samples is one row and one
 * index entry, not 288 (row headers alone would be 8 KiB). Range partitions on `day` (created and
 * dropped by the health-partitions job): retention drops whole partitions, never deletes rows.
 * `router_interfaces_latest`: the latest state and rates per interface.
 */
export class HealthSeriesMigration extends Migration {
  override up(): void {
    const { resourceSamples, resourceHourly, trafficSamples, trafficHourly } = HEALTH_SERIES_TABLES;
    for (const table of [resourceSamples, resourceHourly]) {
      this.addSql(
        `create table "${table}" ("router_id" uuid not null, "day" int not null, "data" bytea not null, primary key ("router_id", "day")) partition by range ("day");`,
      );
    }
    for (const table of [trafficSamples, trafficHourly]) {
      this.addSql(
        `create table "${table}" ("router_id" uuid not null, "name" varchar(100) not null, "day" int not null, "data" bytea not null, primary key ("router_id", "name", "day")) partition by range ("day");`,
      );
    }
    for (const table of Object.values(HEALTH_SERIES_TABLES)) {
      this.addSql(
        `alter table "${table}" add constraint "${table}_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
      );
    }
    this.addSql(
      `create table "router_interfaces_latest" ("router_id" uuid not null, "name" varchar(100) not null, "reported_at" timestamptz not null, "running" boolean null, "rx_bytes" double precision null, "tx_bytes" double precision null, "rx_errors" double precision null, "tx_errors" double precision null, "rx_bps" double precision null, "tx_bps" double precision null, primary key ("router_id", "name"));`,
    );
    this.addSql(
      `alter table "router_interfaces_latest" add constraint "router_interfaces_latest_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );
  }
}
