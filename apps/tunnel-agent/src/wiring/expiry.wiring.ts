import { ForwardTargetsRepository } from "@fleet/db";
import { ExpirySweeper } from "../expiry/expiry-sweeper.ts";
import type { ForwardLifecycle } from "../jobs/forward-lifecycle.ts";
import type { AgentContext, AgentSchedule, Wired } from "./wiring.ts";

/** Cluster-wide safety net of the expiry timers: one sweep a minute, by whichever agent takes it. */
export const EXPIRY_SWEEP_QUEUE = "forward.expiry-sweep";

export interface ExpiryServices {
  /** Closes forwards whose time has come and queues their removal (its own timers, started at start-up). */
  sweeper: ExpirySweeper;
}

/**
 * The forwards' expiry (docs/api.md "Tunnel agent and entry point"): this agent's timers, and the
 * cluster-wide sweep a minute that runs once whatever the agent count.
 */
export const wireExpiry = async (
  { config, db, logger, jobs, clock }: AgentContext,
  deps: { lifecycle: ForwardLifecycle; refreshRelay: () => void },
): Promise<Wired<ExpiryServices>> => {
  await jobs.defineQueue({ name: EXPIRY_SWEEP_QUEUE, retryLimit: 0, deleteAfterSeconds: 3600 });
  const sweeper = new ExpirySweeper({
    forwards: new ForwardTargetsRepository(db),
    lifecycle: deps.lifecycle,
    clock,
    logger: logger.child({ part: "expiry" }),
    safetyIntervalMs: config.expirySweepIntervalMs,
    onSwept: deps.refreshRelay,
  });
  const safetyNet: AgentSchedule = {
    jobLoop: true,
    start: async () => {
      await jobs.work(EXPIRY_SWEEP_QUEUE, { pollingIntervalSeconds: 5 }, () => sweeper.sweep());
      await jobs.schedule(EXPIRY_SWEEP_QUEUE, "* * * * *");
      // The schedule stays for the other agents; only this process's worker stops.
      return () => jobs.offWork(EXPIRY_SWEEP_QUEUE);
    },
  };
  return {
    services: { sweeper },
    schedules: [safetyNet],
    close: () => sweeper.close(),
  };
};
