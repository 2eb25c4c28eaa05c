import { acquireStatusFeed, ChangeExecutorRepository, ChangeWorkflow, queryOf, queueRouterJob } from "@fleet/db";
import { ROUTER_JOB_KINDS, type TRouterJobKind } from "@fleet/shared";
import { applyChangeHandler, type ChangeJobDeps } from "../jobs/apply-change.ts";
import { BeatWatcher } from "../jobs/beat-watcher.ts";
import type { JobHandler } from "../jobs/router-job-worker.ts";
import { StartQueue } from "../jobs/start-queue.ts";
import type { RouterOsConnector } from "../routeros/routeros-client.ts";
import type { AgentContext, Wired } from "./wiring.ts";

/** A step still waiting after its hold looks again after this long (a new job). */
export const CHANGE_CONFIRM_POLL_MS = 1_000;

/** Period of the one heartbeat read that serves every step waiting for its confirmation. */
export const CHANGE_BEAT_CHECK_MS = 100;

/** A step's start holds its turn at most this long: a router slow to answer lets the next one go. */
export const CHANGE_START_HOLD_MS = 1_000;

export interface ChangeServices {
  /** The `change.apply` job handler. */
  handlers: Partial<Record<TRouterJobKind, JobHandler>>;
}

/** Fleet changes, the agent's side (docs/api.md "Changes", docs/routeros.md "The guard"). */
export const wireChanges = async (
  { config, db, logger, jobs, clock }: AgentContext,
  deps: { connector: RouterOsConnector; backup: ChangeJobDeps["backup"] },
): Promise<Wired<ChangeServices>> => {
  const steps = new ChangeExecutorRepository(queryOf(db));
  // The daemons' signals: a waiting step hears its router's heartbeat as soon as it is written.
  const feedHandle = await acquireStatusFeed(db, (error) => logger.warn({ err: error }, "status feed connection lost"));
  const beats = new BeatWatcher({
    lastSeen: (routerIds) => steps.lastSeen(routerIds),
    checkMs: CHANGE_BEAT_CHECK_MS,
    logger: logger.child({ part: "changes" }),
    feed: feedHandle.feed,
  });
  const handler = applyChangeHandler({
    changes: new ChangeWorkflow(db, jobs, clock),
    steps,
    connector: deps.connector,
    clock,
    logger: logger.child({ part: "changes" }),
    sshPort: config.ssh.port,
    tunnelNetwork: config.tunnelNetwork,
    backup: deps.backup,
    requeue: async (routerId, changeRouterId, at) => {
      await queueRouterJob(
        jobs,
        { kind: ROUTER_JOB_KINDS.changeApply, router_id: routerId, change_router_id: changeRouterId },
        undefined,
        { startAfter: at },
      );
    },
    starts: new StartQueue(config.jobs.changeStartConcurrency, CHANGE_START_HOLD_MS),
    pollMs: CHANGE_CONFIRM_POLL_MS,
    // Held in the job for at most half its lease, so an attempt that waits is never taken for dead.
    beats: {
      wait: (routerId, afterMs, timeoutMs) => beats.wait(routerId, afterMs, timeoutMs),
      holdMs: config.jobs.leaseMs / 2,
    },
  });
  return {
    services: { handlers: { [ROUTER_JOB_KINDS.changeApply]: handler } },
    schedules: [],
    close: async () => {
      beats.close();
      await feedHandle.release();
    },
  };
};
