import {
  ConfigBackupsRepository,
  ForwardTargetsRepository,
  type JobRecord,
  queryOf,
  queueBackupJob,
  registerScheduledTask,
} from "@fleet/db";
import { backupRouterHandler } from "../jobs/backup-router.ts";
import type { JobHandler } from "../jobs/router-job-worker.ts";
import type { RouterOsClient, RouterOsConnector } from "../routeros/routeros-client.ts";
import type { AgentContext, Wired } from "./wiring.ts";

export interface BackupServices {
  /** The `router.backup` job handler (with a session: over it, without a login of its own). */
  handler: (job: JobRecord, session?: RouterOsClient) => Promise<void>;
  /** Wraps a handler that changes a router: its success queues a backup of that router. */
  thenBackup(handler: JobHandler): JobHandler;
  /** Queues a backup of every router not queued within BACKUP_INTERVAL_HOURS (the schedule runs it every 10 minutes). */
  scheduleBackups(): Promise<number>;
}

/** Configuration backups (docs/api.md "Configuration backups"). */
export const wireBackups = (
  { config, db, logger, jobs, clock }: AgentContext,
  { connector }: { connector: RouterOsConnector },
): Wired<BackupServices> => {
  const backups = new ConfigBackupsRepository(queryOf(db));
  const scheduleBackups = async (): Promise<number> => {
    const now = clock.now();
    // With the schedule off (0), a direct call still leaves a router queued within the last hour alone.
    const hours = Math.max(1, config.backups.intervalHours);
    const due = await backups.claimDue(new Date(now.getTime() - hours * 3_600_000), now, 10_000);
    for (const routerId of due) await queueBackupJob(jobs, db, routerId);
    return due.length;
  };
  return {
    services: {
      handler: backupRouterHandler({
        db,
        backups,
        forwards: new ForwardTargetsRepository(db),
        connector,
        clock,
        logger: logger.child({ part: "backups" }),
        sshPort: config.ssh.port,
        tunnelNetwork: config.tunnelNetwork,
        retention: config.backups.retention,
        maxBytes: config.backups.maxBytes,
      }),
      // A backup follows every change the agent made on a router.
      thenBackup:
        (handler) =>
        async (job: JobRecord): Promise<void> => {
          await handler(job);
          const routerId = job.payload.router_id;
          if (typeof routerId === "string") await queueBackupJob(jobs, db, routerId);
        },
      scheduleBackups,
    },
    // Cluster-wide: one run per slot whatever the agent count; each run queues the routers due.
    schedules:
      config.backups.intervalHours > 0
        ? [
            {
              jobLoop: true,
              start: async () => {
                const task = await registerScheduledTask(jobs, {
                  queue: "backup.schedule",
                  cron: "*/10 * * * *",
                  run: scheduleBackups,
                });
                return () => task.stop();
              },
            },
          ]
        : [],
    close: async () => {},
  };
};
