import { ChangeExecutorRepository, ChangeWorkflow, queryOf, queueRouterJob } from "@fleet/db";
import { ROUTER_JOB_KINDS, type TRouterJobKind } from "@fleet/shared";
import { applyChangeHandler } from "../jobs/apply-change.ts";
import type { JobHandler } from "../jobs/router-job-worker.ts";
import type { RouterOsConnector } from "../routeros/routeros-client.ts";
import type { AgentContext, Wired } from "./wiring.ts";

/** A waiting step looks again after this long: a heartbeat is confirmed well within two intervals. */
export const CHANGE_CONFIRM_POLL_MS = 1_000;

export interface ChangeServices {
  /** The `change.apply` job handler. */
  handlers: Partial<Record<TRouterJobKind, JobHandler>>;
}

/** Fleet changes, the agent's side (docs/api.md "Changes", docs/routeros.md "The guard"). */
export const wireChanges = (
  { config, db, logger, jobs, clock }: AgentContext,
  deps: { connector: RouterOsConnector; backup: JobHandler },
): Wired<ChangeServices> => {
  const handler = applyChangeHandler({
    changes: new ChangeWorkflow(db, jobs, clock),
    steps: new ChangeExecutorRepository(queryOf(db)),
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
    pollMs: CHANGE_CONFIRM_POLL_MS,
  });
  return {
    services: { handlers: { [ROUTER_JOB_KINDS.changeApply]: handler } },
    schedules: [],
    close: async () => {},
  };
};
