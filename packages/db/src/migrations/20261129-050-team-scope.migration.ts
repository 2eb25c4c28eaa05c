import { Migration } from "@mikro-orm/migrations";

/**
 * Team-bound credentials see and change only their team (docs/api.md "Audit log and webhooks"):
 * - `audit_log.team_id`: the team an entry belongs to (its router's team, or the team of the
 *   credential that acted); null for organization-wide entries. No foreign key, like `router_id`:
 *   the history outlives what it names. Existing entries take their router's team where it remains.
 * - `webhooks.team_id`: set when a team-bound credential made it; it then receives only that
 *   team's events and only that team's credentials (and organization-wide ones) see it.
 */
export class TeamScopeMigration extends Migration {
  override up(): void {
    this.addSql(`alter table "audit_log" add column "team_id" uuid null;`);
    this.addSql(
      `create index "audit_log_org_team_occurred_index" on "audit_log" ("organization_id", "team_id", "occurred_at", "id");`,
    );
    this.addSql(
      `update "audit_log" a set "team_id" = r."team_id" from "routers" r where a."router_id" = r."id" and a."team_id" is null;`,
    );
    this.addSql(`alter table "webhooks" add column "team_id" uuid null;`);
    this.addSql(`create index "webhooks_team_id_index" on "webhooks" ("team_id");`);
    this.addSql(
      `alter table "webhooks" add constraint "webhooks_team_id_foreign" foreign key ("team_id") references "teams" ("id") on delete cascade;`,
    );
  }
}
