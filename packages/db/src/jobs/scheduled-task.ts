import type { JobEngine } from "./job-engine.ts";

/** A plain function run on a cron schedule once per cluster (docs/operations.md "Metrics and probes"). */
export interface ScheduledTask {
  /** Queue name, e.g. `billing.reconcile`. */
  queue: string;
  /** Five-field cron (minute precision), read in `tz`. */
  cron: string;
  /** Defaults to the server's time zone. */
  tz?: string;
  /** What one run does; tests call the same function directly. A throw is logged by the caller's hook. */
  run: () => Promise<unknown>;
  /** Attempts after a failed run before waiting for the next slot (default 0). */
  retryLimit?: number;
}

export interface RegisteredTask {
  /** Stops this process's worker; the schedule stays for the other processes. */
  stop(): Promise<void>;
}

/**
 * Registers a cluster-wide schedule and this process's worker for it: however many processes
 * register the same task, pg-boss sends one job per cron slot and one of them runs it.
 */
export const registerScheduledTask = async (engine: JobEngine, task: ScheduledTask): Promise<RegisteredTask> => {
  await engine.defineQueue({ name: task.queue, retryLimit: task.retryLimit ?? 0, deleteAfterSeconds: 7 * 24 * 3600 });
  await engine.work(task.queue, { pollingIntervalSeconds: 5 }, async () => {
    await task.run();
  });
  await engine.schedule(task.queue, task.cron, {}, { tz: task.tz ?? Intl.DateTimeFormat().resolvedOptions().timeZone });
  return { stop: () => engine.offWork(task.queue) };
};
