import { type Database, DAY_MS, dayOf, type HealthSeriesRepository, type Query } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import type { Logger } from "pino";

/** Days of partitions made ahead, so a heartbeat never waits for DDL at midnight. */
const DAYS_AHEAD = 2;

export interface HealthPartitionsDeps {
  series: Pick<
    HealthSeriesRepository,
    "ensurePartition" | "partitions" | "dropPartition" | "stagedDays" | "compactDay"
  >;
  query: Query;
  /** Each staged day is compacted in a transaction of its own. */
  db: Pick<Database, "transaction">;
  clock: Clock;
  /** `RESOURCE_RETENTION_DAYS`: the 5-minute tier. */
  resourceRetentionDays: number;
  /** `METRICS_RETENTION_DAYS`: the hourly tier. */
  metricsRetentionDays: number;
  logger: Logger;
}

const SAMPLE_TABLES = ["router_resource_samples", "router_traffic_samples", "router_health_staged"] as const;
/**
 * A day is compacted once it has been over this long: the daemons write a period's sample at their
 * first flush after it ends (seconds), so its last periods are in by then. A later one (a daemon
 * that could not write for longer) lands in a new staged partition, merged by the next run.
 */
const COMPACT_AFTER_MS = 30 * 60_000;
const HOURLY_TABLES = ["router_resource_hourly", "router_traffic_hourly"] as const;

/**
 * The health series' partitions (docs/scale.md "Health samples"): makes today's and the next days'
 * (and months') ahead, compacts the staged 5-minute samples of closed days, and drops the
 * partitions whose every day is past the retention: a catalog change, no row deleted one by one.
 * Cluster-wide, hourly; never throws. Returns the dropped names.
 */
export const maintainHealthPartitions = async (deps: HealthPartitionsDeps): Promise<string[]> => {
  const today = dayOf(deps.clock.nowMs());
  const dropped: string[] = [];
  try {
    const closed = dayOf(deps.clock.nowMs() - COMPACT_AFTER_MS - DAY_MS);
    for (const day of await deps.series.stagedDays()) {
      if (day > closed) continue;
      const routers = await deps.db.transaction((query) => deps.series.compactDay(query, day));
      if (routers) deps.logger.info({ day, routers }, "compacted a day of health samples");
    }
    for (let day = today; day <= today + DAYS_AHEAD; day++) {
      for (const table of [...SAMPLE_TABLES, ...HOURLY_TABLES])
        await deps.series.ensurePartition(deps.query, table, day);
    }
    const cutoff: Record<string, number> = {};
    for (const table of SAMPLE_TABLES) cutoff[table] = today - deps.resourceRetentionDays;
    for (const table of HOURLY_TABLES) cutoff[table] = today - deps.metricsRetentionDays;
    for (const partition of await deps.series.partitions()) {
      // Every day it holds is older than the retention (`end` is exclusive).
      if (partition.end <= (cutoff[partition.table] ?? Number.NEGATIVE_INFINITY)) {
        await deps.series.dropPartition(partition.name);
        dropped.push(partition.name);
      }
    }
    if (dropped.length > 0) deps.logger.info({ dropped }, "dropped expired health partitions");
  } catch (error) {
    deps.logger.error({ err: error }, "health partitions not maintained; retrying at the next run");
  }
  return dropped;
};
