import { Migration } from "@mikro-orm/migrations";

/**
 * The text `q` searches on a router's own row (docs/api.md "Listing a fleet": a case-insensitive
 * substring of identity, name, serial number or model), fields joined by a unit separator no field
 * or `q` may hold (the text rule), so a match never spans two fields.
 */
export const routerSearchText = (table = "") =>
  `(${table}"identity" || E'\\x1f' || ${table}"name" || E'\\x1f' || ${table}"serial_number" || E'\\x1f' || ${table}"model")`;

/**
 * A trigram index serves substring search: `q` reads the routers that hold its trigrams, not the
 * team. `fastupdate = off`: a pending list (until a vacuum, which PGlite never runs by itself) makes
 * the planner scan the team instead; these fields change only at enrollment and on reported facts.
 */
export const ROUTER_SEARCH_INDEX = {
  name: "routers_search_trgm_index",
  expression: `create index "routers_search_trgm_index" on "routers" using gin (${routerSearchText()} gin_trgm_ops) with (fastupdate = off)`,
};

export class RouterSearchMigration extends Migration {
  override up(): void {
    this.addSql(`create extension if not exists pg_trgm;`);
    this.addSql(`${ROUTER_SEARCH_INDEX.expression};`);
  }
}
