import { Migration } from "@mikro-orm/migrations";

/**
 * When the router last answered at its tunnel address through its tunnel (docs/routeros.md "The
 * management tunnel"): a handshake alone only proves someone holds the bound key, so `tunnel_status`
 * is `up` only while both are recent (a router that bound a key it does not hold never answers).
 */
export class TunnelAnsweredMigration extends Migration {
  override up(): void {
    this.addSql(`alter table "router_wireguard_peers" add column "answered_at" timestamptz null;`);
  }
}
