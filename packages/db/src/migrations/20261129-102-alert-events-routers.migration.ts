import { Migration } from "@mikro-orm/migrations";

/**
 * The `audit_to_alerts` trigger of migration 101 copies only what alerts are about: entries of a
 * router, and fleet changes (`change.*`). An organization's own API actions (a maintenance window
 * created, a key revoked) never wait in the alert outbox. The AuditLogEntry entity declares the
 * trigger from this body.
 */
export const AUDIT_TO_ALERTS_BODY =
  "if (new.router_id is not null or new.action like 'change.%') and new.action not like '%.connection.%' " +
  "and exists (select 1 from alert_rules a where a.organization_id = new.organization_id) then " +
  "insert into alert_events (audit_id, organization_id, router_id, action, occurred_at, details) " +
  "values (new.id, new.organization_id, new.router_id, new.action, new.occurred_at, new.details); end if; return null;";

export class AlertEventsRoutersMigration extends Migration {
  override up(): void {
    this.addSql(
      `create or replace function "audit_log_audit_to_alerts_fn"() returns trigger as $$ begin ${AUDIT_TO_ALERTS_BODY} end; $$ language plpgsql;`,
    );
  }
}
