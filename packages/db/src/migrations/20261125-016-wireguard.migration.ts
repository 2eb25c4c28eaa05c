import { Migration } from "@mikro-orm/migrations";

/**
 * The management tunnel's bindings (docs/routeros.md "The management tunnel"): a router's WireGuard
 * public key, bound by its first heartbeat after adoption. The unique key makes one device key
 * belong to one router; the row goes with its router.
 */
export class WireguardMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "router_wireguard_peers" ("router_id" uuid not null, "public_key" varchar(44) not null, "bound_at" timestamptz not null, "handshake_at" timestamptz null, "up" boolean not null default false, primary key ("router_id"));`,
    );
    this.addSql(
      `alter table "router_wireguard_peers" add constraint "router_wireguard_peers_public_key_unique" unique ("public_key");`,
    );
    this.addSql(
      `alter table "router_wireguard_peers" add constraint "router_wireguard_peers_router_id_foreign" foreign key ("router_id") references "routers" ("id") on update cascade on delete cascade;`,
    );
  }
}
