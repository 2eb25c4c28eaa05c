import { Migration } from "@mikro-orm/migrations";

/**
 * The address each router's tunnel was last seen from (behind NAT: its NAT's mapping), written by
 * the hub when it changes (docs/operations.md "The management tunnel"). A restarted hub primes its
 * peers with it, so it can start the WireGuard handshake itself instead of waiting for the router's
 * next rekey.
 */
export class WireguardEndpointsMigration extends Migration {
  override up(): void {
    this.addSql(`alter table "router_wireguard_peers" add column "endpoint" varchar(64) null;`);
  }
}
