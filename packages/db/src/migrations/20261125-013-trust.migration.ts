import { Migration } from "@mikro-orm/migrations";

/**
 * Trust between tenants (docs/api.md "Authentication", "Routers and heartbeats"):
 * - `api_keys.team_id`: a key made with a token that names a team is bound to that team.
 * - `tunnel_addresses`: what the system remembers of an address after its router is gone: the last
 *   router and organization there, the host key last pinned at it (pins are per address as well as
 *   per router), and the quarantine that keeps it from another router until it ends or the
 *   offboarding job confirmed the device was cleaned. No foreign keys: the row outlives its router.
 * - `rate_limit_counters`: request counts per credential or address and one-minute window, shared
 *   by every API process (each adds its local counts in batches).
 */
export class TrustMigration extends Migration {
  override up(): void {
    this.addSql(`alter table "api_keys" add column "team_id" uuid null;`);
    this.addSql(`create index "api_keys_team_id_index" on "api_keys" ("team_id");`);
    this.addSql(
      `alter table "api_keys" add constraint "api_keys_team_id_foreign" foreign key ("team_id") references "teams" ("id") on delete cascade;`,
    );
    this.addSql(
      `create table "tunnel_addresses" ("tunnel_ip" varchar(45) not null, "router_id" uuid not null, "organization_id" uuid not null, "host_key_fingerprint" varchar(100) null, "pinned_at" timestamptz null, "removed_at" timestamptz null, "quarantined_until" timestamptz null, "offboarded_at" timestamptz null, primary key ("tunnel_ip"));`,
    );
    this.addSql(`create index "tunnel_addresses_router_id_index" on "tunnel_addresses" ("router_id");`);
    this.addSql(
      `create table "rate_limit_counters" ("bucket" varchar(300) not null, "window_start" timestamptz not null, "hits" int not null, primary key ("bucket", "window_start"));`,
    );
    this.addSql(`create index "rate_limit_counters_window_start_index" on "rate_limit_counters" ("window_start");`);
  }
}
