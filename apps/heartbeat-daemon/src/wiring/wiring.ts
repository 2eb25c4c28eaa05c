import type { Database, HeartbeatsRepository } from "@fleet/db";
import type { Clock, StatusFeed } from "@fleet/shared";
import type { Logger } from "pino";
import type { HeartbeatConfig } from "../config.ts";

/** What every feature's wiring gets: built once by `startHeartbeat`. */
export interface DaemonContext {
  config: HeartbeatConfig;
  db: Database;
  logger: Logger;
  /** Time of the daemon's rules (faults, coverage, downtime); tests pass a `ManualClock`. */
  clock: Clock;
  /**
   * The transport's time (connection deadlines, the token cache, flood buckets, pings): it measures
   * elapsed time against real timers, so never a test's ManualClock, never a wall clock that can step.
   */
  transportClock: Clock;
  /** The heartbeat tables (tokens, liveness, coverage, faults). */
  store: HeartbeatsRepository;
  /** Removals, re-adoptions and status events, shared with the other apps on the same database. */
  feed: StatusFeed;
  /** This process's row in `heartbeat_daemons` (random per start). */
  daemonId: string;
}

/**
 * A timer a feature runs by itself. `startHeartbeat` starts them once every feature is wired (not
 * with `timers: false`, where tests drive `flush()` and `sweep()`) and stops them, in reverse
 * order, before it closes the features.
 */
export interface DaemonSchedule {
  /** Starts it; the answer stops it. */
  start(): () => Promise<void>;
}

/** One feature, wired: its services, its timers and how to stop it. */
export interface Wired<S> {
  services: S;
  schedules: DaemonSchedule[];
  /** Stops what the feature started; `startHeartbeat` calls these in reverse order of wiring. */
  close(): Promise<void>;
}
