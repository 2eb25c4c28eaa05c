import type { Database, JobEngine, ScheduledTask } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import type { Logger } from "pino";
import type { ApiConfig } from "../config.ts";

/** What every feature's wiring gets: built once by `startApi`. */
export interface WiringContext {
  config: ApiConfig;
  db: Database;
  logger: Logger;
  /** The process's job engine (router jobs and cluster-wide schedules). */
  jobs: JobEngine;
  /** Time of domain rules (forward expiry, quarantines, audit retention); tests pass a `ManualClock`. */
  clock: Clock;
  /** Wall time of tokens, rate limits and billing; tests move it to expire tokens. */
  wallClock: Clock;
}

/** One feature, wired: its services, its cluster-wide schedules and how to stop it. */
export interface Wired<S> {
  services: S;
  /** Registered by `startApi` once the server listens: each runs once per cron slot in the cluster. */
  schedules: ScheduledTask[];
  /** Stops what the feature started; `startApi` calls these in reverse order of wiring. */
  close(): Promise<void>;
}
