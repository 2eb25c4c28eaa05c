import {
  BACKUP_JOB_ATTEMPTS,
  type ConfigBackupsRepository,
  type ForwardTargetsRepository,
  type JobRecord,
} from "@fleet/db";
import {
  type Clock,
  digestConfigExport,
  normalizeConfigExport,
  type TunnelNetwork,
  ZReconcileJobPayload,
} from "@fleet/shared";
import { diffLines } from "diff";
import type { Logger } from "pino";
import type { RouterOsConnector } from "../routeros/routeros-client.ts";
import { exportConfiguration } from "../routeros/routeros-commands.ts";
import { describeJobError, PermanentJobError } from "./job-errors.ts";
import { withRouterSession } from "./router-session.ts";
import { tunnelTarget } from "./tunnel-target.ts";

export interface BackupJobDeps {
  backups: ConfigBackupsRepository;
  forwards: ForwardTargetsRepository;
  connector: RouterOsConnector;
  clock: Clock;
  logger: Logger;
  sshPort: number;
  tunnelNetwork: TunnelNetwork;
  /** BACKUP_RETENTION. */
  retention: number;
}

/** Lines added and removed between two exports, their dated first lines ignored. */
export const countChangedLines = (previous: string, next: string): { added: number; removed: number } => {
  let added = 0;
  let removed = 0;
  for (const part of diffLines(normalizeConfigExport(previous), normalizeConfigExport(next))) {
    if (part.added) added += part.count;
    else if (part.removed) removed += part.count;
  }
  return { added, removed };
};

/**
 * `router.backup`: reads the router's configuration with `/export terse` and stores it (a new
 * version only when it changed). The last failed attempt is recorded for the router's backup list
 * (nothing half-written: the version is stored in one transaction after the whole read).
 */
export const backupRouterHandler =
  (deps: BackupJobDeps) =>
  async (job: JobRecord): Promise<void> => {
    const parsed = ZReconcileJobPayload.safeParse(job.payload);
    if (!parsed.success) throw new PermanentJobError(`job ${job.id} has a malformed payload`);
    const routerId = parsed.data.router_id;
    const tunnelIp = await deps.forwards.routerTunnelIp(routerId);
    if (!tunnelIp) {
      deps.logger.info({ routerId }, "router gone or without an assigned tunnel address; no backup");
      return;
    }
    let content: string;
    try {
      const target = tunnelTarget(deps, routerId, tunnelIp);
      content = await withRouterSession(deps.connector, target, (router) => router.exec(exportConfiguration()));
    } catch (error) {
      const final = job.attempts >= BACKUP_JOB_ATTEMPTS || error instanceof PermanentJobError;
      if (final) await deps.backups.recordFailure(routerId, deps.clock.now(), describeJobError(error));
      throw error;
    }
    const outcome = await deps.backups.store(
      { routerId, content, ...digestConfigExport(content), at: deps.clock.now(), retention: deps.retention },
      countChangedLines,
    );
    if (outcome?.kind === "created") {
      deps.logger.info(
        { routerId, backupId: outcome.backup.id, added: outcome.linesAdded, removed: outcome.linesRemoved },
        "router configuration changed; new backup stored",
      );
    }
  };
