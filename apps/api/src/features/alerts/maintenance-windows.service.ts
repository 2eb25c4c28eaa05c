import {
  type AuditOrigin,
  type Database,
  insertAuditEntry,
  MaintenanceWindowsRepository,
  NotificationsRepository,
  queryOf,
} from "@fleet/db";
import {
  ALERT_LIMITS,
  AppError,
  type Clock,
  type TCreateMaintenanceWindowInput,
  type TMaintenanceWindow,
} from "@fleet/shared";
import { ownSelector, storedSelector } from "./alert-rules.service.ts";
import { toMaintenanceWindowResponse } from "./alerts.mapper.ts";

export interface MaintenanceWindowsDeps {
  db: Pick<Database, "query" | "transaction">;
  clock: Clock;
}

const notFound = () => new AppError("not_found", "Maintenance window not found.");
const CAP_RETRY_AFTER_SECONDS = 60;

/**
 * Maintenance windows of an organization (docs/api.md "Alerts and maintenance windows"): one-off or
 * weekly in a time zone; audited `maintenance.created` and `maintenance.deleted`. With `teamId` (a
 * team-bound credential) every method sees only that team's windows (another's is 404), and a
 * window it makes covers only its team's routers.
 */
export class MaintenanceWindowsService {
  readonly #d: MaintenanceWindowsDeps;
  constructor(deps: MaintenanceWindowsDeps) {
    this.#d = deps;
  }

  async create(
    organizationId: string,
    origin: AuditOrigin,
    input: TCreateMaintenanceWindowInput,
    teamId?: string,
  ): Promise<TMaintenanceWindow> {
    const selector = storedSelector(input.routers);
    const now = this.#d.clock.now();
    const max = ALERT_LIMITS.windowsPerOrganization;
    const created = await this.#d.db.transaction(async (query) => {
      const windows = new MaintenanceWindowsRepository(query);
      await new NotificationsRepository(query).lockOrganization(organizationId);
      const routers = await ownSelector(query, organizationId, selector, teamId);
      if ((await windows.count(organizationId)) >= max) return null;
      const window = await windows.insert({
        organizationId,
        teamId: teamId ?? null,
        name: input.name,
        routers,
        startsAt: input.weekly || !input.starts_at ? null : new Date(input.starts_at),
        endsAt: input.weekly || !input.ends_at ? null : new Date(input.ends_at),
        weekly: input.weekly ? { ...input.weekly, days: [...new Set(input.weekly.days)] } : null,
        createdAt: now,
      });
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: now,
        action: "maintenance.created",
        actor: origin.actor,
        teamId: window.teamId,
        sourceIp: origin.sourceIp,
        target: { type: "maintenance_window", id: window.id },
        details: { name: window.name },
      });
      return window;
    });
    if (!created) {
      throw new AppError(
        "rate_limited",
        `This organization already has ${max} maintenance windows, the most allowed. Delete one to create another.`,
        {
          extra: { limit: max, retry_after_seconds: CAP_RETRY_AFTER_SECONDS },
          retryAfterSeconds: CAP_RETRY_AFTER_SECONDS,
        },
      );
    }
    return toMaintenanceWindowResponse(created);
  }

  async list(organizationId: string, teamId?: string): Promise<TMaintenanceWindow[]> {
    return (await new MaintenanceWindowsRepository(queryOf(this.#d.db)).list(organizationId, teamId)).map(
      toMaintenanceWindowResponse,
    );
  }

  async get(organizationId: string, id: string, teamId?: string): Promise<TMaintenanceWindow> {
    const window = await new MaintenanceWindowsRepository(queryOf(this.#d.db)).get(organizationId, id, teamId);
    if (!window) throw notFound();
    return toMaintenanceWindowResponse(window);
  }

  async delete(organizationId: string, id: string, origin: AuditOrigin, teamId?: string): Promise<void> {
    const now = this.#d.clock.now();
    const deleted = await this.#d.db.transaction(async (query) => {
      const removed = await new MaintenanceWindowsRepository(query).delete(organizationId, id, teamId);
      if (!removed) return false;
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: now,
        action: "maintenance.deleted",
        actor: origin.actor,
        teamId: removed.teamId,
        sourceIp: origin.sourceIp,
        target: { type: "maintenance_window", id },
        details: { name: removed.name },
      });
      return true;
    });
    if (!deleted) throw notFound();
  }
}
