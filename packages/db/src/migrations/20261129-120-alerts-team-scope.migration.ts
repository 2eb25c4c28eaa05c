import { Migration } from "@mikro-orm/migrations";

/**
 * Team-bound credentials and alerts (docs/api.md "Alerts and maintenance windows"), as webhooks
 * (migration 050): a channel, rule or maintenance window made by a team-bound credential belongs to
 * its team (`team_id`); only that team's credentials (and organization-wide ones) see it, and its
 * rule or window selects only that team's routers. Null: organization-wide.
 */
export class AlertsTeamScopeMigration extends Migration {
  override up(): void {
    for (const table of ["notification_channels", "alert_rules", "maintenance_windows"] as const) {
      this.addSql(`alter table "${table}" add column "team_id" uuid null;`);
      this.addSql(`create index "${table}_team_id_index" on "${table}" ("team_id");`);
      this.addSql(
        `alter table "${table}" add constraint "${table}_team_id_foreign" foreign key ("team_id") references "teams" ("id") on delete cascade;`,
      );
    }
  }
}
