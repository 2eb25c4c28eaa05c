import { Migration } from "@mikro-orm/migrations";

/**
 * One-time adoption script URLs (docs/routeros.md "Adoption"). Only the SHA-256 of the URL's
 * token is kept; the heartbeat token the script carries is derived from the URL's token, so it is
 * not stored either. `counts_from`: heartbeats from then on use the URL up (a re-adoption leaves the old
 * token's last cached acceptances time to drain). A router's rows go with it.
 */
export class RouterAdoptionsMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "router_adoptions" ("token_hash" varchar(64) not null, "router_id" uuid not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "counts_from" timestamptz not null, primary key ("token_hash"));`,
    );
    this.addSql(`create index "router_adoptions_router_id_index" on "router_adoptions" ("router_id");`);
    this.addSql(
      `alter table "router_adoptions" add constraint "router_adoptions_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );
  }
}
