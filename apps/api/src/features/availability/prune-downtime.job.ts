import type { Clock } from "@fleet/shared";
import type { Logger } from "pino";

export interface PruneDowntimeDeps {
  downtime: { prune(before: Date): Promise<number> };
  clock: Clock;
  /** `METRICS_RETENTION_DAYS`. */
  retentionDays: number;
  logger: Logger;
}

/**
 * Retention of hourly downtime (docs/api.md "Availability": `METRICS_RETENTION_DAYS`): deletes hours
 * older than the retention, in batches. Run by a cluster-wide schedule; tests call it directly.
 */
export const pruneDowntime = async (deps: PruneDowntimeDeps): Promise<number> => {
  const before = new Date(deps.clock.now().getTime() - deps.retentionDays * 86_400_000);
  const removed = await deps.downtime.prune(before);
  if (removed > 0) deps.logger.info({ removed, before: before.toISOString() }, "pruned hourly downtime");
  return removed;
};
