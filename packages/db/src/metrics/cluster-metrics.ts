import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { Gauge } from "prom-client";
import type { Database } from "../database.ts";

/**
 * Figures of the whole cluster (open faults, queue depths, the oldest job) are read from the
 * database, so every process could export them, and a sum over processes would multiply them.
 * Instead each has a lease in `cluster_leases`: at scrape time a process takes or renews it, and
 * only its holder exports the figure (docs/operations.md "Metrics"). The lease outlives a few
 * scrape intervals, so the holder stays put while it lives; when it stops (or dies), another
 * process takes over at its next scrape (at once after a graceful stop, which releases it).
 */
export const LEASE_SECONDS = 90;

/** This process, as a lease holder. */
export const PROCESS_HOLDER = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;

/** Takes or renews `name` for `holder`; true when `holder` has it now. The database's clock decides. */
export const holdClusterLease = async (db: Database, name: string, holder = PROCESS_HOLDER): Promise<boolean> => {
  const rows = await db.query(
    `insert into cluster_leases (name, holder, expires_at) values ($1, $2, now() + make_interval(secs => $3))
     on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at
     where cluster_leases.holder = excluded.holder or cluster_leases.expires_at < now()
     returning name`,
    [name, holder, LEASE_SECONDS],
    { prepare: "fleet_cluster_lease" },
  );
  return rows.length > 0;
};

/** Gives up every lease `holder` has (graceful stop), so another process takes over at once. */
export const releaseClusterLeases = async (db: Database, holder = PROCESS_HOLDER): Promise<void> => {
  await db.query("delete from cluster_leases where holder = $1", [holder]);
};

type Sampler<T extends string> = (set: (labels: Partial<Record<T, string>>, value: number) => void) => Promise<boolean>;

/**
 * A gauge with samples only while `sample` says this process holds the figure's lease (it sets
 * the values and returns true); otherwise the metric has no series at all from this process.
 */
export const clusterGauge = <T extends string>(config: {
  name: string;
  help: string;
  labelNames: readonly T[];
  sample: Sampler<T>;
}): Gauge<T> => {
  let exported = false;
  class LeaderGauge extends Gauge<T> {
    override async get() {
      const metric = await super.get();
      return exported ? metric : { ...metric, values: [] };
    }
  }
  return new LeaderGauge({
    name: config.name,
    help: config.help,
    labelNames: config.labelNames,
    async collect() {
      this.reset();
      exported = await config.sample((labels, value) => this.set(labels, value)).catch(() => false);
    },
  });
};

/** The process's PostgreSQL pool (pg.Pool's own counters), read at scrape time. */
interface PoolReading {
  total: number;
  idle: number;
  waiting: number;
  max: number;
}
const pools = new Set<() => PoolReading>();
new Gauge({
  name: "fleet_db_pool_connections",
  help: "Connections of this process's database pool: total (open), idle, waiting (callers queued for one).",
  labelNames: ["state"] as const,
  collect() {
    this.reset();
    for (const read of pools) {
      const { total, idle, waiting } = read();
      this.inc({ state: "total" }, total);
      this.inc({ state: "idle" }, idle);
      this.inc({ state: "waiting" }, waiting);
    }
  },
});
new Gauge({
  name: "fleet_db_pool_max",
  help: "Connections this process's database pool may open (DATABASE_POOL_MAX).",
  collect() {
    this.reset();
    for (const read of pools) this.inc(read().max);
  },
});

export const watchPool = (read: () => PoolReading): (() => void) => {
  pools.add(read);
  return () => pools.delete(read);
};
