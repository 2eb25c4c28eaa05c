import { Migration } from "@mikro-orm/migrations";

/**
 * A heartbeat's write keeps the liveness it replaced (docs/architecture.md "Liveness: what a
 * heartbeat writes"): `previous_has_pulse` and `previous_seen_at` are set from the row's own values
 * by the same UPDATE, so the flush reads the state before each heartbeat from its RETURNING instead
 * of a second lookup of every row (PostgreSQL before 18 has no `RETURNING old`). No index covers
 * them: the update stays heap-only (HOT). Existing rows start empty, which the daemon reads as "no
 * pulse before", the same as a router's first heartbeat.
 */
export class LivenessPreviousMigration extends Migration {
  override up(): void {
    this.addSql(
      `alter table "router_liveness" add column "previous_has_pulse" boolean null, add column "previous_seen_at" timestamptz null;`,
    );
  }
}
