import type { PgBoss } from "pg-boss";
import { Counter, Gauge, Histogram } from "prom-client";

/**
 * Job engine metrics (docs/operations.md "Metrics and probes"). Duration and failures are counted
 * by the process that ran the job; queue depths are read from pg-boss at scrape time (its queue
 * table holds counts the monitor keeps current), so idle processes cost nothing.
 */
const engines = new Set<PgBoss>();

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

new Gauge({
  name: "fleet_jobs",
  help: "Jobs by queue and state (queued includes deferred), as pg-boss last counted them.",
  labelNames: ["queue", "state"] as const,
  async collect() {
    this.reset();
    const [boss] = engines;
    if (!boss) return;
    try {
      for (const queue of await boss.getQueues()) {
        this.set({ queue: queue.name, state: "queued" }, queue.queuedCount ?? 0);
        this.set({ queue: queue.name, state: "deferred" }, queue.deferredCount ?? 0);
        this.set({ queue: queue.name, state: "active" }, queue.activeCount ?? 0);
        this.set({ queue: queue.name, state: "failed" }, queue.failedCount ?? 0);
      }
    } catch {
      // The database is briefly away: no sample this scrape.
    }
  },
});

/** One job attempt ended. */
export const recordJob = (queue: string, outcome: "completed" | "failed" | "deadletter", ms: number): void => {
  jobDuration.observe({ queue, outcome }, ms / 1000);
  if (outcome !== "completed") jobFailures.inc({ queue, outcome });
};

/** The engines of this process, for the queue-depth gauge. */
export const watchEngine = (boss: PgBoss): void => {
  engines.add(boss);
};
export const unwatchEngine = (boss: PgBoss): void => {
  engines.delete(boss);
};
