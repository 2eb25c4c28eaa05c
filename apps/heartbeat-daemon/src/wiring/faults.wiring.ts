import { isDatabaseUnreachable } from "@fleet/db";
import { nextSweepInMs, type SweepMemo, type SweepResult, sweepFaults } from "../faults/fault-sweeper.ts";
import type { CoverageHolder } from "../heartbeats/coverage-holder.ts";
import type { DaemonContext, DaemonSchedule, Wired } from "./wiring.ts";

export interface FaultsServices {
  /** One sweep for faults at the clock's current time, after any sweep in flight. */
  sweep(): Promise<SweepResult>;
}

/** The fault sweeper (docs/architecture.md "How a heartbeat travels", step 5). */
export const wireFaults = (
  { config, db, logger, clock, store, feed, daemonId }: DaemonContext,
  { coverage, caughtUp }: { coverage: CoverageHolder; caughtUp: () => boolean },
): Wired<FaultsServices> => {
  const { tuning } = config;
  const sweepMemo: SweepMemo = { notDueBefore: null, scannedAt: null };
  // One sweep at a time in this process: a sweep asked for (a test with a ManualClock, the final
  // sweep at close) runs after the timer's in-flight one instead of meeting its advisory lock and
  // answering "not swept" while that one still works with an earlier time.
  let sweepChain: Promise<unknown> = Promise.resolve();
  const sweep = (): Promise<SweepResult> => {
    const run = sweepChain.then(sweepOnce);
    sweepChain = run.catch(() => undefined);
    return run;
  };
  const sweepOnce = () =>
    sweepFaults({
      memo: sweepMemo,
      store,
      db,
      feed,
      clock,
      coverage,
      intervalMs: config.intervalMs,
      missedHeartbeats: config.missedHeartbeats,
      // The longest an acknowledged heartbeat waits for its flush, twice (heartbeats/heartbeat-writer.ts).
      graceMs: 2 * Math.max(tuning.flushIntervalMs, tuning.steadyFlushMs),
      limit: tuning.sweepLimit,
      // Each sweep tick marks this daemon's row, at most sweepIdleMs apart: a row older than that is
      // a daemon whose writes fail (or a slow tick, which only delays a fault a little).
      daemon: {
        id: daemonId,
        caughtUp,
        slackMs: tuning.sweepIdleMs,
        dropAfterMs: Math.max(tuning.coverageGapMs, config.missedHeartbeats * config.intervalMs),
      },
    });

  // Not node-cron: the next sweep's time follows from the last one (nextSweepInMs), below a second.
  // While a router can be due, sweep every sweepIntervalMs; otherwise wait until one can, but at
  // most sweepIdleMs (a sweep also marks the daemons alive for the coverage record).
  const sweeper: DaemonSchedule = {
    start: () => {
      let sweeping: Promise<unknown> | null = null;
      let sweepTimer: NodeJS.Timeout | undefined;
      let sweepsStopped = false;
      let held = false;
      let unreachable = false;
      const scheduleSweep = (inMs: number) => {
        if (sweepsStopped) return;
        sweepTimer = setTimeout(() => {
          const startedAt = performance.now();
          sweeping = sweep()
            .then((result) => {
              unreachable = false;
              if (result.opened.length > 0) logger.info({ faults: result.opened.length }, "faults opened");
              if (result.heldAt && !held) logger.warn({ heldAt: result.heldAt }, "heartbeat writes lag; faults wait");
              held = result.heldAt !== null || (held && !result.swept);
              return result;
            })
            .catch((error) => {
              // A database outage fails every sweep until it ends: one line for it, not four a second.
              if (!unreachable || !isDatabaseUnreachable(error)) logger.error({ err: error }, "fault sweep failed");
              unreachable = isDatabaseUnreachable(error);
              return null;
            })
            .then((result) => {
              sweeping = null;
              // Counted from the sweep's start: a slow sweep (a loaded database) must not stretch the
              // period, which bounds how late a fault opens.
              const tookMs = performance.now() - startedAt;
              scheduleSweep(Math.max(0, nextSweepInMs(result, clock.now().getTime(), tuning) - tookMs));
            });
        }, inMs);
        sweepTimer.unref();
      };
      scheduleSweep(tuning.sweepIntervalMs);
      return async () => {
        sweepsStopped = true;
        clearTimeout(sweepTimer);
        await sweeping;
        // A last sweep marks the daemons alive up to this moment: the restart rule then knows exactly
        // when coverage ended, although idle sweeps (and so the marks) are up to a second apart.
        await sweep().catch((error) => logger.warn({ err: error }, "final sweep failed"));
      };
    },
  };
  return { services: { sweep }, schedules: [sweeper], close: async () => {} };
};
