import type { AuditListFilter, AuditRecord } from "@fleet/db";
import { AppError, AUDIT_ACTIONS, EVENT_LIMITS, type TAuditLogPage, type TAuditLogQuery, isUuid } from "@fleet/shared";
import { decodeCursor, encodeCursor, toAuditEntry } from "./audit-log.mapper.ts";

export interface AuditLogReader {
  list(filter: AuditListFilter): Promise<AuditRecord[]>;
}

/** The organization's audit log, newest first, one page at a time (docs/api.md "Audit log and webhooks"). */
export class AuditLogService {
  readonly #audit: AuditLogReader;
  constructor(audit: AuditLogReader) {
    this.#audit = audit;
  }

  /** `teamId` (a team-bound credential): only that team's entries (docs/api.md "Audit log and webhooks"). */
  async list(organizationId: string, query: TAuditLogQuery, teamId?: string): Promise<Omit<TAuditLogPage, "status">> {
    const limit = query.limit ?? EVENT_LIMITS.auditPage.default;
    const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    if (before === null) {
      throw new AppError("validation_failed", "The cursor is not one this API handed out.", {
        fields: { cursor: ["must be a next_cursor from a previous page"] },
      });
    }
    if (query.action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(query.action)) {
      throw new AppError("validation_failed", `Unknown action '${query.action}'.`, {
        fields: { action: [`must be one of ${AUDIT_ACTIONS.join(", ")}`] },
      });
    }
    // A router id that cannot exist matches nothing (like an unknown one).
    if (query.router_id !== undefined && !isUuid(query.router_id)) {
      return { data: [], next_cursor: null };
    }
    // One row more than asked tells whether another page exists.
    const rows = await this.#audit.list({
      organizationId,
      teamId,
      limit: limit + 1,
      routerId: query.router_id,
      action: query.action,
      before,
    });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      data: page.map(toAuditEntry),
      next_cursor: rows.length > limit && last ? encodeCursor(last) : null,
    };
  }
}
