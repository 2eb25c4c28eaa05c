import type { Clock } from "@fleet/shared";
import type { Logger } from "pino";

const DAY_MS = 86_400_000;

export interface PruneAuditLogDeps {
  audit: { prune(before: Date): Promise<number> };
  clock: Clock;
  /** `AUDIT_RETENTION_DAYS`. */
  retentionDays: number;
  logger: Logger;
}

/**
 * Retention of the audit log (docs/operations.md "Configuration": `AUDIT_RETENTION_DAYS`): deletes
 * entries older than the retention period. A plain function, so any scheduler (a timer in the API
 * today, the cluster-wide job queue later) and tests call the same thing. Never throws.
 */
export const pruneAuditLog = async (deps: PruneAuditLogDeps): Promise<number> => {
  const before = new Date(deps.clock.now().getTime() - deps.retentionDays * DAY_MS);
  try {
    const removed = await deps.audit.prune(before);
    if (removed > 0) deps.logger.info({ removed, before: before.toISOString() }, "pruned the audit log");
    return removed;
  } catch (error) {
    deps.logger.warn({ err: error }, "audit log retention failed; retrying at the next run");
    return 0;
  }
};
