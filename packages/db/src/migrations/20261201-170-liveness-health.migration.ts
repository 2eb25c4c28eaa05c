import { Migration } from "@mikro-orm/migrations";

/**
 * The latest health values join the liveness row (docs/architecture.md "Liveness: what a heartbeat
 * writes"): the heartbeat that moves `last_seen_at` writes them in the same heap-only update,
 * instead of a second statement upserting `router_health_latest` (a third of the database's CPU
 * per heartbeat with health, bench/health-flush-bench.ts). No index covers them, so the update
 * stays HOT. `health_reported_at` null: never reported. Existing values are copied, then the
 * table goes.
 */
export class LivenessHealthMigration extends Migration {
  override up(): void {
    this.addSql(
      `alter table "router_liveness" add column "health_reported_at" timestamptz null, add column "cpu_load" real null, add column "memory_used_percent" real null, add column "disk_used_percent" real null, add column "temperature" real null, add column "voltage" real null, add column "ping_loss_percent" real null, add column "ping_rtt_ms" real null;`,
    );
    this.addSql(
      `insert into "router_liveness" as l ("router_id", "health_reported_at", "cpu_load", "memory_used_percent", "disk_used_percent", "temperature", "voltage", "ping_loss_percent", "ping_rtt_ms")
       select "router_id", "reported_at", "cpu_load", "memory_used_percent", "disk_used_percent", "temperature", "voltage", "ping_loss_percent", "ping_rtt_ms"
       from "router_health_latest"
       on conflict ("router_id") do update set "health_reported_at" = excluded."health_reported_at",
         "cpu_load" = excluded."cpu_load", "memory_used_percent" = excluded."memory_used_percent",
         "disk_used_percent" = excluded."disk_used_percent", "temperature" = excluded."temperature",
         "voltage" = excluded."voltage", "ping_loss_percent" = excluded."ping_loss_percent", "ping_rtt_ms" = excluded."ping_rtt_ms";`,
    );
    this.addSql(`drop table "router_health_latest";`);
  }
}
