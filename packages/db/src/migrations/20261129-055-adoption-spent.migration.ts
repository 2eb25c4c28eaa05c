import { Migration } from "@mikro-orm/migrations";

/**
 * When the first heartbeat with an adoption's token spent its URL (docs/routeros.md "Adoption"). The
 * heartbeat daemon writes it before it acknowledges that heartbeat, so the URL answers 410 from the
 * ack on (docs/routeros.md "Adoption"); the batched liveness write comes later.
 */
export class AdoptionSpentMigration extends Migration {
  override up(): void {
    this.addSql(`alter table "router_adoptions" add column "spent_at" timestamptz null;`);
    // URLs a heartbeat already used: marked, so the daemon has no first beat to write for them.
    this.addSql(
      `update "router_adoptions" a set "spent_at" = l."last_seen_at" from "router_liveness" l where l."router_id" = a."router_id" and l."last_seen_at" >= a."counts_from";`,
    );
  }
}
