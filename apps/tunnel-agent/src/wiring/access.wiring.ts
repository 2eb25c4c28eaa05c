import { AccessRepository, ForwardTargetsRepository, queryOf } from "@fleet/db";
import { dataDirSecret } from "@fleet/runtime";
import { ROUTER_JOB_KINDS, type TRouterJobKind } from "@fleet/shared";
import { AccessLifecycle } from "../jobs/access-lifecycle.ts";
import { applyAccessHandler, removeAccessHandler } from "../jobs/router-access.ts";
import type { JobHandler } from "../jobs/router-job-worker.ts";
import type { RouterOsConnector } from "../routeros/routeros-client.ts";
import { type AgentContext, cronSchedule, type Wired } from "./wiring.ts";

/** node-cron (seconds field first): the per-process sweep of expired router access, every 5 s. */
const ACCESS_SWEEP_CRON = "*/5 * * * * *";

export interface AccessServices {
  /** The `access.apply` and `access.remove` job handlers. */
  handlers: Partial<Record<TRouterJobKind, JobHandler>>;
  /** Closes temporary router access whose time has come and queues its removal (also every 5 s). */
  sweepAccess(): Promise<number>;
}

/** Temporary router access, the agent's side (docs/api.md "Temporary router access"). */
export const wireAccess = (
  { config, db, logger, jobs, clock }: AgentContext,
  deps: {
    connector: RouterOsConnector;
    thenBackup: (handler: JobHandler) => JobHandler;
    /** Re-reads the relay's targets (a closed session's listener goes). */
    refreshRelay: () => void;
    /** ACCESS_PASSWORD_KEY when the composition root shares one with the API (DATA_DIR=memory). */
    passwordKey: string | undefined;
  },
): Wired<AccessServices> => {
  const lifecycle = new AccessLifecycle({ db, jobs });
  const accessDeps = {
    access: new AccessRepository(queryOf(db)),
    lifecycle,
    forwards: new ForwardTargetsRepository(db),
    connector: deps.connector,
    clock,
    logger: logger.child({ part: "access" }),
    sshPort: config.ssh.port,
    tunnelNetwork: config.tunnelNetwork,
    tunnelSource: config.entryPoint.tunnelSource,
    passwordKey: config.accessPasswordKey ?? deps.passwordKey ?? dataDirSecret(config.dataDir, "accessPassword"),
  };
  const sweepAccess = async (): Promise<number> => {
    const closed = await lifecycle.expireDue(clock.now());
    if (closed.length > 0) deps.refreshRelay();
    return closed.length;
  };
  return {
    services: {
      handlers: {
        [ROUTER_JOB_KINDS.accessApply]: deps.thenBackup(applyAccessHandler(accessDeps)),
        [ROUTER_JOB_KINDS.accessRemove]: deps.thenBackup(removeAccessHandler(accessDeps)),
      },
      sweepAccess,
    },
    // Every agent sweeps (rows are claimed with skip locked: each closes once), every 5 s, finer than
    // pg-boss's minute slots: a per-process schedule, so node-cron.
    schedules: [
      cronSchedule(
        {
          name: "router-access-sweep",
          cron: ACCESS_SWEEP_CRON,
          run: sweepAccess,
          failed: "router access expiry sweep failed",
        },
        logger,
      ),
    ],
    close: async () => {},
  };
};
