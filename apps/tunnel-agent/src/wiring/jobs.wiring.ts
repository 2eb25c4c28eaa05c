import {
  ForwardTargetsRepository,
  openRouterJobLocks,
  ROUTER_OFFBOARD_JOB,
  TunnelAddressesRepository,
} from "@fleet/db";
import { ROUTER_JOB_KINDS, type TRouterJobKind } from "@fleet/shared";
import { applyForwardHandler, type ForwardJobDeps } from "../jobs/apply-forward.ts";
import { ForwardLifecycle } from "../jobs/forward-lifecycle.ts";
import { offboardRouterHandler } from "../jobs/offboard-router.ts";
import { type ReconcileReport, reconcileRouterHandler, scheduleReconciliation } from "../jobs/reconcile-router.ts";
import { removeForwardHandler } from "../jobs/remove-forward.ts";
import { type JobHandler, RouterJobWorker } from "../jobs/router-job-worker.ts";
import type { RouterOsConnector } from "../routeros/routeros-client.ts";
import type { AgentContext, AgentSchedule, Wired } from "./wiring.ts";

export interface JobsServices {
  worker: RouterJobWorker;
  /** The agent's state changes of a forward (applied, failed, expired). */
  lifecycle: ForwardLifecycle;
  /** Queues a reconciliation of every router worth checking (done at start and periodically). */
  reconcile(): Promise<number>;
}

/**
 * Router jobs (docs/api.md "Tunnel agent and entry point"): the worker that runs them one at a time
 * per router, the forward, reconciliation and offboarding handlers beside those other features
 * bring (access, backups), and the periodic reconciliation.
 */
export const wireJobs = (
  { config, db, logger, jobs, clock }: AgentContext,
  deps: {
    connector: RouterOsConnector;
    /** Handlers of other features (temporary access, backups). */
    handlers: Partial<Record<TRouterJobKind, JobHandler>>;
    thenBackup: (handler: JobHandler) => JobHandler;
    /** Re-reads the relay's targets after each job. */
    refreshRelay: () => void;
    onReconciled: ((routerId: string, report: ReconcileReport) => void) | undefined;
  },
): Wired<JobsServices> => {
  const forwards = new ForwardTargetsRepository(db);
  const lifecycle = new ForwardLifecycle({ db, jobs });
  const forwardDeps: ForwardJobDeps = {
    forwards,
    lifecycle,
    connector: deps.connector,
    clock,
    logger: logger.child({ part: "jobs" }),
    sshPort: config.ssh.port,
    tunnelNetwork: config.tunnelNetwork,
    tunnelSource: config.entryPoint.tunnelSource,
    listingFormats: new Map(),
  };
  const locks = openRouterJobLocks(db, (error) => logger.warn({ err: error }, "router job lock connection failed"));
  const worker = new RouterJobWorker({
    engine: jobs,
    locks,
    handlers: {
      ...deps.handlers,
      [ROUTER_JOB_KINDS.apply]: deps.thenBackup(applyForwardHandler(forwardDeps)),
      [ROUTER_JOB_KINDS.remove]: deps.thenBackup(removeForwardHandler(forwardDeps)),
      [ROUTER_JOB_KINDS.reconcile]: reconcileRouterHandler(forwardDeps, deps.onReconciled),
      [ROUTER_OFFBOARD_JOB]: offboardRouterHandler({
        addresses: new TunnelAddressesRepository(db),
        db,
        connector: deps.connector,
        clock,
        logger: logger.child({ part: "offboarding" }),
        sshPort: config.ssh.port,
        sshUser: config.ssh.user,
        tunnelNetwork: config.tunnelNetwork,
      }),
    },
    logger: logger.child({ part: "jobs" }),
    concurrency: config.jobs.concurrency,
    interactiveConcurrency: config.jobs.interactiveConcurrency,
    changeConcurrency: config.jobs.changeConcurrency,
    pollSeconds: config.jobs.pollSeconds,
    // A change step touches no forward or access: the relay has nothing to re-read after one.
    onJobFinished: (job) => {
      if (job.kind !== ROUTER_JOB_KINDS.changeApply) deps.refreshRelay();
    },
  });
  const reconcile = () => scheduleReconciliation({ forwards, engine: jobs, clock });
  const jobLoop: AgentSchedule = {
    jobLoop: true,
    start: async () => {
      await worker.start();
      return () => worker.close();
    },
  };
  // Not node-cron: TUNNEL_RECONCILE_INTERVAL_MS is any period from 1 s to 1 day, counted from start.
  // Cron fires at wall-clock slots: 7 s or 90 min has no exact expression, and a day would become
  // "at midnight" (the tests' "never during this run" would then run at 00:00).
  const reconciliation: AgentSchedule = {
    start: async () => {
      const timer = setInterval(() => {
        reconcile().catch((error: unknown) => logger.error({ err: error }, "scheduling reconciliation failed"));
      }, config.reconcileIntervalMs);
      timer.unref();
      return async () => clearInterval(timer);
    },
  };
  return {
    services: { worker, lifecycle, reconcile },
    schedules: [jobLoop, reconciliation],
    close: async () => {
      await worker.close();
      await locks.close();
    },
  };
};
