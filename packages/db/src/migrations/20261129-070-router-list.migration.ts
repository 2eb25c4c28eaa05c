import { Migration } from "@mikro-orm/migrations";

/**
 * docs/api.md "Listing a fleet": keyset pages of a team's routers in name order walk this index from
 * the cursor on (case-insensitive, byte order so PostgreSQL and PGlite agree), whatever the page's
 * depth. It leads with `team_id`, so the plain team index it replaces has nothing left to do.
 */
export const ROUTER_LIST_INDEX = {
  name: "routers_team_name_id_index",
  expression: `create index "routers_team_name_id_index" on "routers" ("team_id", (lower("name")) collate "C", "id")`,
};

export class RouterListMigration extends Migration {
  override up(): void {
    this.addSql(`${ROUTER_LIST_INDEX.expression};`);
    this.addSql(`drop index "routers_team_id_index";`);
  }
}
