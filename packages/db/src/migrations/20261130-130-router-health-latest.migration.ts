import { Migration } from "@mikro-orm/migrations";

/**
 * The latest health values per router (docs/api.md "Health"): one narrow row, upserted by the
 * daemon's batched flush, read by the router list and the thresholds. Fillfactor 75 and no index
 * but the primary key keep each heartbeat's update heap-only, like `router_liveness`.
 */
export class RouterHealthLatestMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "router_health_latest" ("router_id" uuid not null, "reported_at" timestamptz not null, "cpu_load" real null, "memory_used_percent" real null, "disk_used_percent" real null, "temperature" real null, "voltage" real null, "ping_loss_percent" real null, "ping_rtt_ms" real null, primary key ("router_id")) with (fillfactor = 75);`,
    );
    this.addSql(
      `alter table "router_health_latest" add constraint "router_health_latest_router_id_foreign" foreign key ("router_id") references "routers" ("id") on update cascade on delete cascade;`,
    );
  }
}
