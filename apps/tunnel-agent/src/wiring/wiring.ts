import type { Database, JobEngine } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import cron from "node-cron";
import type { Logger } from "pino";
import type { TunnelAgentConfig } from "../config.ts";

/** What every feature's wiring gets: built once by `startTunnelAgent`. */
export interface AgentContext {
  config: TunnelAgentConfig;
  db: Database;
  logger: Logger;
  /** The process's job engine (router jobs, the cluster-wide expiry sweep and backup schedule). */
  jobs: JobEngine;
  /** The one clock of the agent's rules (expiry, backups, host keys); tests pass a `ManualClock`. */
  clock: Clock;
}

/**
 * Something a feature runs by itself once the agent has started (a timer, a node-cron task, a
 * pg-boss worker or schedule). `startTunnelAgent` starts them after the start-up steps, so nothing
 * runs on a half-started agent, and stops them before it closes the features.
 */
export interface AgentSchedule {
  /** Runs only with the agent's own job loop: a caller with `manualJobs` drives the queue itself. */
  jobLoop?: boolean;
  /** Starts it; the answer stops it. */
  start(): Promise<() => Promise<void>>;
}

/** One feature, wired: its services, what it runs by itself, and how to stop it. */
export interface Wired<S> {
  services: S;
  schedules: AgentSchedule[];
  /** Stops what the feature started; `startTunnelAgent` calls these in reverse order of wiring. */
  close(): Promise<void>;
}

/**
 * A per-process schedule on node-cron (seconds field first): `run` is the plain function tests call
 * directly; a run still going when the next slot comes is skipped, and a failure is logged as `failed`.
 */
export const cronSchedule = (
  task: { name: string; cron: string; run: () => Promise<unknown>; failed: string },
  logger: Logger,
): AgentSchedule => ({
  start: async () => {
    const scheduled = cron.schedule(
      task.cron,
      () => task.run().then(undefined, (error: unknown) => logger.error({ err: error }, task.failed)),
      { noOverlap: true, name: task.name, unref: true },
    );
    return async () => {
      await scheduled.stop();
    };
  },
});
