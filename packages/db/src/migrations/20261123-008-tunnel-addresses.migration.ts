import { Migration } from "@mikro-orm/migrations";

/** Canonical dotted-quad IPv4 (no leading zeros), as the API accepts it. */
const CANONICAL_IPV4 =
  "^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$";

/** The default TUNNEL_NETWORK (docs/operations.md "Configuration"); the migration cannot see the configured one. */
const DEFAULT_NETWORK = "100.64.0.0/10";

/**
 * Tunnel addresses become the system's to assign (docs/api.md "Routers and heartbeats"): a router
 * keeps the address it reported only where that address is a canonical IPv4 host address inside the
 * default network and no other router reported it too; every other router is left without one (its
 * forwards answer 409 until an operator assigns one), and the tunnel agent names those routers in
 * its start-up log. One router per address from now on (unique index). SSH host keys are pinned per
 * router instead of per `host:port`; a pin carries over to the router now holding that address.
 */
export class TunnelAddressesMigration extends Migration {
  override up(): void {
    // CASE keeps the inet cast away from values that are not addresses (SQL has no short-circuit).
    this.addSql(
      `update "routers" set "tunnel_ip" = null where "tunnel_ip" is not null and (case when "tunnel_ip" ~ '${CANONICAL_IPV4}' then not ("tunnel_ip"::inet << '${DEFAULT_NETWORK}'::inet) or "tunnel_ip" = host(network('${DEFAULT_NETWORK}'::inet)) or "tunnel_ip" = host(broadcast('${DEFAULT_NETWORK}'::inet)) else true end);`,
    );
    this.addSql(
      `update "routers" set "tunnel_ip" = null where "tunnel_ip" in (select "tunnel_ip" from "routers" where "tunnel_ip" is not null group by "tunnel_ip" having count(*) > 1);`,
    );
    this.addSql(`alter table "routers" add constraint "routers_tunnel_ip_unique" unique ("tunnel_ip");`);

    this.addSql(`alter table "ssh_host_keys" add column "router_id" uuid null;`);
    this.addSql(
      `update "ssh_host_keys" k set "router_id" = r."id" from "routers" r where r."tunnel_ip" is not null and r."tunnel_ip" = k."host";`,
    );
    this.addSql(`delete from "ssh_host_keys" where "router_id" is null;`);
    // Pins of one address on several ports: the first pin wins, as it did on first contact.
    this.addSql(
      `delete from "ssh_host_keys" k using "ssh_host_keys" older where older."router_id" = k."router_id" and (older."created_at", older."id") < (k."created_at", k."id");`,
    );
    this.addSql(`alter table "ssh_host_keys" drop constraint "ssh_host_keys_host_port_unique";`);
    this.addSql(`alter table "ssh_host_keys" drop column "host", drop column "port";`);
    this.addSql(`alter table "ssh_host_keys" alter column "router_id" set not null;`);
    this.addSql(`alter table "ssh_host_keys" add constraint "ssh_host_keys_router_id_unique" unique ("router_id");`);
    this.addSql(
      `alter table "ssh_host_keys" add constraint "ssh_host_keys_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );
  }
}
