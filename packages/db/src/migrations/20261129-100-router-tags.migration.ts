import { Migration } from "@mikro-orm/migrations";

/**
 * Router tags (docs/api.md "Routers"): a JSON array of strings set through `PATCH /api/routers/{id}`,
 * read by `?tag=`, alert rules and maintenance windows. No index: every reader is scoped to a team or
 * an organization first, whose index narrows the rows to one fleet.
 */
export class RouterTagsMigration extends Migration {
  override up(): void {
    this.addSql(`alter table "routers" add column "tags" jsonb not null default '[]';`);
  }
}
