import type { PgBoss } from "pg-boss";
import { Counter, Histogram } from "prom-client";
import type { Database } from "../database.ts";
import { clusterGauge, holdClusterLease } from "./cluster-metrics.ts";

/**
 * Job engine metrics (docs/operations.md "Metrics and probes"). Duration and failures are counted
 * by the process that ran the job; queue depths are read from pg-boss at scrape time (its queue
 * table holds counts the monitor keeps current), so idle processes cost nothing.
 */
const engines = new Set<{ boss: PgBoss; db: Database }>();

export const jobDuration = new Histogram({
  name: "fleet_job_duration_seconds",
  help: "Time a job handler ran, by queue and outcome (completed, failed, deadletter).",
  labelNames: ["queue", "outcome"] as const,
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
});

export const jobFailures = new Counter({
  name: "fleet_job_failures_total",
  help: "Failed job attempts by queue and outcome (failed: will retry or dead-letter; deadletter: permanent).",
  labelNames: ["queue", "outcome"] as const,
});

/** pg-boss's own queues (e.g. `__pgboss__send-it` of its scheduler) are its business, not ours. */
const ours = (queue: string) => !queue.startsWith("__pgboss");

// Cluster-wide: exported by the holder of the lease only (cluster-metrics.ts).
clusterGauge({
  name: "fleet_jobs",
  help: "Jobs by queue and state (queued includes deferred), as pg-boss last counted them; exported by one process of the cluster.",
  labelNames: ["queue", "state"] as const,
  async sample(set) {
    const [engine] = engines;
    if (!engine || !(await holdClusterLease(engine.db, "metrics.jobs"))) return false;
    for (const queue of await engine.boss.getQueues()) {
      if (!ours(queue.name)) continue;
      set({ queue: queue.name, state: "queued" }, queue.queuedCount ?? 0);
      set({ queue: queue.name, state: "deferred" }, queue.deferredCount ?? 0);
      set({ queue: queue.name, state: "active" }, queue.activeCount ?? 0);
      set({ queue: queue.name, state: "failed" }, queue.failedCount ?? 0);
    }
    return true;
  },
});

clusterGauge({
  name: "fleet_job_oldest_ready_age_seconds",
  help: "Age of the oldest job ready to run (queued, due, not started) by queue; 0 when none waits. Exported by one process of the cluster.",
  labelNames: ["queue"] as const,
  async sample(set) {
    const [engine] = engines;
    if (!engine || !(await holdClusterLease(engine.db, "metrics.jobs-age"))) return false;
    for (const queue of await engine.boss.getQueues()) if (ours(queue.name)) set({ queue: queue.name }, 0);
    const rows = await engine.db.query<{ queue: string; seconds: number | string }>(
      `select name as queue, extract(epoch from now() - min(created_on))::float8 as seconds
       from pgboss.job where state in ('created', 'retry') and start_after <= now() group by name`,
    );
    for (const row of rows) if (ours(row.queue)) set({ queue: row.queue }, Math.max(0, Number(row.seconds)));
    return true;
  },
});

/** One job attempt ended. */
export const recordJob = (queue: string, outcome: "completed" | "failed" | "deadletter", ms: number): void => {
  jobDuration.observe({ queue, outcome }, ms / 1000);
  if (outcome !== "completed") jobFailures.inc({ queue, outcome });
};

/** The engines of this process, for the queue-depth gauge. */
export const watchEngine = (boss: PgBoss, db: Database): void => {
  engines.add({ boss, db });
};
export const unwatchEngine = (boss: PgBoss): void => {
  for (const engine of engines) if (engine.boss === boss) engines.delete(engine);
};
