import { hostname } from "node:os";
import {
  dataDirSecret,
  acquireStatusFeed,
  acquireJobEngine,
  type Database,
  ForwardTargetsRepository,
  type JobEngine,
  openRouterJobLocks,
  queryOf,
  routerJobsQueue,
  AccessRepository,
  AuditLogRepository,
  ROUTER_OFFBOARD_JOB,
  ConfigBackupsRepository,
  type JobRecord,
  queueBackupJob,
  type RegisteredTask,
  registerScheduledTask,
  SshHostKeysRepository,
  TunnelAddressesRepository,
} from "@fleet/db";
import { type Clock, FORWARD_JOB_KINDS, loopbackAgentAddress, systemClock } from "@fleet/shared";
import cron from "node-cron";
import type { Logger } from "pino";
import type { TunnelAgentConfig } from "./config.ts";
import { ConnectionLog } from "./entry-point/connection-log.ts";
import { EntryPointRelay } from "./entry-point/relay.ts";
import { RelaySync } from "./entry-point/relay-sync.ts";
import { ExpirySweeper } from "./expiry/expiry-sweeper.ts";
import { applyForwardHandler, type ForwardJobDeps } from "./jobs/apply-forward.ts";
import { ForwardLifecycle } from "./jobs/forward-lifecycle.ts";
import { backupRouterHandler } from "./jobs/backup-router.ts";
import { AccessLifecycle } from "./jobs/access-lifecycle.ts";
import { applyAccessHandler, removeAccessHandler } from "./jobs/router-access.ts";
import { type ReconcileReport, reconcileRouterHandler, scheduleReconciliation } from "./jobs/reconcile-router.ts";
import { offboardRouterHandler } from "./jobs/offboard-router.ts";
import { removeForwardHandler } from "./jobs/remove-forward.ts";
import { RouterJobWorker } from "./jobs/router-job-worker.ts";
import { resolveAgentKey } from "./routeros/agent-key.ts";
import { DbHostKeyStore } from "./routeros/db-host-key-store.ts";
import type { RouterOsConnector } from "./routeros/routeros-client.ts";
import { SshRouterOsConnector } from "./routeros/ssh-routeros-client.ts";
import { type RunningHub, startWireguardHub } from "./wireguard/start-hub.ts";
import type { WireguardDevice } from "./wireguard/wireguard-device.ts";

export { loadTunnelAgentConfig, type TunnelAgentConfig } from "./config.ts";

/** Routers named in the start-up warning at most; the count covers all. */
const UNREACHABLE_LISTED = 100;

/**
 * The start-up line that says which routers the agent will not connect to: those migration 008
 * left without an address (theirs was not unique or not inside the default network), and those
 * whose address lies outside the configured TUNNEL_NETWORK (docs/api.md "Routers and heartbeats").
 */
const reportUnreachableRouters = async (
  forwards: ForwardTargetsRepository,
  config: TunnelAgentConfig,
  logger: Logger,
) => {
  const { count, routers } = await forwards.routersWithoutReachableTunnel(
    config.tunnelNetwork.cidr,
    UNREACHABLE_LISTED,
  );
  if (count === 0) return;
  logger.warn(
    { count, routers, tunnelNetwork: config.tunnelNetwork.cidr },
    "routers without an assigned tunnel address inside TUNNEL_NETWORK: new forwards to routers without one answer 409, and the agent and relay never connect to an address outside the network, until an operator assigns one",
  );
};
export { proxyV1Header, proxyV2Header } from "./entry-point/proxy-protocol.ts";

export interface StartTunnelAgentOptions {
  config: TunnelAgentConfig;
  /** Opened and migrated by the caller (the all-in-one shares one database between apps). */
  db: Database;
  logger: Logger;
  clock?: Clock;
  /** Replaces the SSH connector (tests that fake the router side). */
  connector?: RouterOsConnector;
  /** No background job loop: the caller drives the queue with `runOnce`/`drain` (deterministic tests). */
  manualJobs?: boolean;
  /** Called after each reconciliation of a router (tests, metrics). */
  onReconciled?: (routerId: string, report: ReconcileReport) => void;
  /** ACCESS_PASSWORD_KEY when the composition root shares one with the API (DATA_DIR=memory). */
  accessPasswordKey?: string;
  /** TUNNEL_MODE=wireguard, tests: a hub device instead of a real interface, and no hub schedules. */
  hubDevice?: WireguardDevice;
}

export interface RunningTunnelAgent {
  /** This agent's name in logs (host, pid, random suffix). */
  workerId: string;
  /** The process's job engine (shared with other apps on the same database). */
  jobs: JobEngine;
  /** The public key routers must authorize for `TUNNEL_SSH_USER` (`ssh-ed25519 AAAA...`). */
  publicKey: string;
  /** TUNNEL_MODE=wireguard: the management tunnel's hub this agent runs (docs/architecture.md). */
  hub: RunningHub | undefined;
  relay: {
    bind: string;
    /** Forwards with a bound listener. */
    listening(): Array<{ id: string; port: number }>;
    connections(forwardId?: string): number;
    stats(forwardId: string): { accepted: number; refused: number } | undefined;
  };
  /** Runs one due job to completion in the caller's flow (tests drive the queue with it). */
  runOnce(): Promise<boolean>;
  /** Runs due jobs until none is left. */
  drain(): Promise<number>;
  /** Closes forwards whose time has come and queues their removal (the expiry timer calls it). */
  sweep(): Promise<number>;
  /** Queues a reconciliation of every router worth checking (done at start and periodically). */
  reconcile(): Promise<number>;
  /** Re-reads active forwards into the relay now. */
  refresh(): Promise<void>;
  /** Writes the relay's buffered audit entries now (they are otherwise written every second). */
  flushAudit(): Promise<void>;
  /** Queues a backup of every router not queued within BACKUP_INTERVAL_HOURS (the schedule runs it every 10 minutes). */
  scheduleBackups(): Promise<number>;
  /** Closes temporary router access whose time has come and queues its removal (also every 5 s). */
  sweepAccess(): Promise<number>;
  close(): Promise<void>;
}

/** Cluster-wide safety net of the expiry timers: one sweep a minute, by whichever agent takes it. */
export const EXPIRY_SWEEP_QUEUE = "forward.expiry-sweep";
/** node-cron (seconds field first): the per-process sweep of expired router access, every 5 s. */
const ACCESS_SWEEP_CRON = "*/5 * * * * *";

/**
 * The tunnel agent (docs/api.md "Tunnel agent and entry point"): durable apply/remove/reconcile jobs over SSH to routers,
 * the expiry sweep, periodic reconciliation and the entry-point relay. Any number may run against
 * one PostgreSQL: router jobs run on the job engine (pg-boss), one at a time per router, and the
 * expiry safety sweep is a cluster-wide schedule, so it runs once a minute whatever the agent count.
 */
export const startTunnelAgent = async (options: StartTunnelAgentOptions): Promise<RunningTunnelAgent> => {
  const { config, db, logger } = options;
  const clock = options.clock ?? systemClock;
  const workerId = `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;
  const leaseSeconds = Math.ceil(config.jobs.leaseMs / 1000);
  const engine = await acquireJobEngine(db, {
    instanceName: "tunnel-agent",
    // An attempt whose agent died is failed over at most this long after its lease ran out.
    monitorIntervalSeconds: Math.min(30, Math.max(1, Math.floor(leaseSeconds / 2))),
    onError: (error) => logger.warn({ err: error }, "job engine error"),
  });
  await engine.defineQueue(routerJobsQueue(leaseSeconds));
  await engine.defineQueue({ name: EXPIRY_SWEEP_QUEUE, retryLimit: 0, deleteAfterSeconds: 3600 });
  const forwards = new ForwardTargetsRepository(db);
  const lifecycle = new ForwardLifecycle({ db, jobs: engine });
  // The hub first: the agent's SSH sessions and the relay reach routers through its interface.
  let hub: RunningHub | undefined;
  let releaseFeed: (() => Promise<void>) | undefined;
  if (config.tunnel.mode === "wireguard") {
    const feedHandle = await acquireStatusFeed(db, (error) =>
      logger.warn({ err: error }, "status feed connection lost"),
    );
    releaseFeed = feedHandle.release;
    try {
      hub = await startWireguardHub({
        tunnel: config.tunnel,
        networkPrefix: config.tunnelNetwork.prefix,
        dataDir: config.dataDir,
        db,
        feed: feedHandle.feed,
        clock,
        logger: logger.child({ part: "wireguard-hub" }),
        reconcileCron: config.wireguardReconcileCron,
        statusPollMs: config.wireguardStatusPollMs,
        ...(options.hubDevice ? { device: options.hubDevice, schedules: false } : {}),
      });
    } catch (error) {
      await feedHandle.release();
      await engine.stop().catch(() => {});
      throw error;
    }
  }
  const key = resolveAgentKey(config.ssh.keyFile, config.dataDir);
  const connector =
    options.connector ??
    new SshRouterOsConnector({
      username: config.ssh.user,
      privateKey: key.privateKey,
      connectTimeoutMs: config.ssh.connectTimeoutMs,
      commandTimeoutMs: config.ssh.commandTimeoutMs,
      hostKeys: new DbHostKeyStore(new SshHostKeysRepository(db), clock),
      localAddress: loopbackAgentAddress(config.tunnelNetwork),
    });

  const connectionLog = new ConnectionLog({
    store: new AuditLogRepository(db),
    clock,
    logger: logger.child({ part: "relay-audit" }),
  });
  const relay = new EntryPointRelay({
    bind: config.entryPoint.bind,
    proxyProtocol: config.entryPoint.proxyProtocol,
    logger: logger.child({ part: "relay" }),
    events: connectionLog,
  });
  const access = new AccessRepository(queryOf(db));
  const accessLifecycle = new AccessLifecycle({ db, jobs: engine });
  // docs/api.md "Temporary router access": the router's own service ports (SSH is the port the agent uses).
  const servicePorts = { winbox: 8291, ssh: config.ssh.port, webfig: 80 } as const;
  const relaySync = new RelaySync({
    moreTargets: (entryPoint, now) => access.relayTargets(entryPoint, now, servicePorts),
    relay,
    forwards,
    entryPoint: config.entryPoint.host,
    clock,
    logger,
    pollMs: config.relayPollMs,
    tunnelNetwork: config.tunnelNetwork,
  });

  const deps: ForwardJobDeps = {
    forwards,
    lifecycle,
    connector,
    clock,
    logger: logger.child({ part: "jobs" }),
    sshPort: config.ssh.port,
    tunnelNetwork: config.tunnelNetwork,
    tunnelSource: config.entryPoint.tunnelSource,
    listingFormats: new Map(),
  };
  const backups = new ConfigBackupsRepository(queryOf(db));
  // docs/api.md "Configuration backups": a backup follows every change the agent made on a router.
  const thenBackup =
    (handler: (job: JobRecord) => Promise<void>) =>
    async (job: JobRecord): Promise<void> => {
      await handler(job);
      const routerId = job.payload.router_id;
      if (typeof routerId === "string") await queueBackupJob(engine, routerId);
    };
  const scheduleBackups = async (): Promise<number> => {
    const now = clock.now();
    // With the schedule off (0), a direct call still leaves a router queued within the last hour alone.
    const hours = Math.max(1, config.backups.intervalHours);
    const due = await backups.claimDue(new Date(now.getTime() - hours * 3_600_000), now, 10_000);
    for (const routerId of due) await queueBackupJob(engine, routerId);
    return due.length;
  };
  const locks = openRouterJobLocks(db, (error) => logger.warn({ err: error }, "router job lock connection failed"));
  const consumer = new RouterJobWorker({
    engine,
    locks,
    handlers: {
      [FORWARD_JOB_KINDS.apply]: thenBackup(applyForwardHandler(deps)),
      [FORWARD_JOB_KINDS.remove]: thenBackup(removeForwardHandler(deps)),
      ...(() => {
        const accessDeps = {
          access,
          lifecycle: accessLifecycle,
          forwards,
          connector,
          clock,
          logger: logger.child({ part: "access" }),
          sshPort: config.ssh.port,
          tunnelNetwork: config.tunnelNetwork,
          tunnelSource: config.entryPoint.tunnelSource,
          passwordKey:
            config.accessPasswordKey ?? options.accessPasswordKey ?? dataDirSecret(config.dataDir, "accessPassword"),
        };
        return {
          [FORWARD_JOB_KINDS.accessApply]: thenBackup(applyAccessHandler(accessDeps)),
          [FORWARD_JOB_KINDS.accessRemove]: thenBackup(removeAccessHandler(accessDeps)),
        };
      })(),
      [FORWARD_JOB_KINDS.backup]: backupRouterHandler({
        db,
        backups,
        forwards,
        connector,
        clock,
        logger: logger.child({ part: "backups" }),
        sshPort: config.ssh.port,
        tunnelNetwork: config.tunnelNetwork,
        retention: config.backups.retention,
      }),
      [FORWARD_JOB_KINDS.reconcile]: reconcileRouterHandler(deps, options.onReconciled),
      [ROUTER_OFFBOARD_JOB]: offboardRouterHandler({
        addresses: new TunnelAddressesRepository(db),
        db,
        connector,
        clock,
        logger: logger.child({ part: "offboarding" }),
        sshPort: config.ssh.port,
        sshUser: config.ssh.user,
        tunnelNetwork: config.tunnelNetwork,
      }),
    },
    logger: logger.child({ part: "jobs" }),
    concurrency: config.jobs.concurrency,
    pollSeconds: config.jobs.pollSeconds,
    onJobFinished: () => void relaySync.refresh(),
  });
  const sweeper = new ExpirySweeper({
    forwards,
    lifecycle,
    clock,
    logger: logger.child({ part: "expiry" }),
    safetyIntervalMs: config.expirySweepIntervalMs,
    onSwept: () => void relaySync.refresh(),
  });
  const reconcile = async () => {
    return scheduleReconciliation({ forwards, engine, clock });
  };

  await reportUnreachableRouters(forwards, config, logger);
  // Order: listeners for what is active, then close what expired while no agent ran, then check
  // routers against the database, and only then start taking jobs.
  await relaySync.refresh();
  await sweeper.start();
  await reconcile();
  relaySync.start();
  let backupSchedule: RegisteredTask | undefined;
  if (!options.manualJobs) {
    await consumer.start();
    await engine.work(EXPIRY_SWEEP_QUEUE, { pollingIntervalSeconds: 5 }, () => sweeper.sweep());
    await engine.schedule(EXPIRY_SWEEP_QUEUE, "* * * * *");
    // Cluster-wide: one run per slot whatever the agent count; each run queues the routers due.
    if (config.backups.intervalHours > 0) {
      backupSchedule = await registerScheduledTask(engine, {
        queue: "backup.schedule",
        cron: "*/10 * * * *",
        run: scheduleBackups,
      });
    }
  }
  const sweepAccess = async (): Promise<number> => {
    const closed = await accessLifecycle.expireDue(clock.now());
    if (closed.length > 0) void relaySync.refresh();
    return closed.length;
  };
  // Every agent sweeps (rows are claimed with skip locked: each closes once), every 5 s, finer than
  // pg-boss's minute slots: a per-process schedule, so node-cron.
  const accessSchedule = cron.schedule(
    ACCESS_SWEEP_CRON,
    () =>
      sweepAccess().then(undefined, (error: unknown) =>
        logger.error({ err: error }, "router access expiry sweep failed"),
      ),
    { noOverlap: true, name: "router-access-sweep", unref: true },
  );
  // Not node-cron: TUNNEL_RECONCILE_INTERVAL_MS is any period from 1 s to 1 day, counted from start.
  // Cron fires at wall-clock slots: 7 s or 90 min has no exact expression, and a day would become
  // "at midnight" (the tests' "never during this run" would then run at 00:00).
  const reconcileTimer = setInterval(() => {
    reconcile().catch((error: unknown) => logger.error({ err: error }, "scheduling reconciliation failed"));
  }, config.reconcileIntervalMs);
  reconcileTimer.unref();
  logger.info(
    {
      workerId,
      entryPoint: config.entryPoint.host,
      bind: config.entryPoint.bind,
      ports: config.entryPoint.ports,
    },
    "tunnel agent started",
  );

  let closing: Promise<void> | undefined;
  return {
    workerId,
    jobs: engine,
    publicKey: key.publicKey,
    hub,
    relay: {
      bind: config.entryPoint.bind,
      listening: () => relay.listening(),
      connections: (forwardId) => relay.connections(forwardId),
      stats: (forwardId) => relay.stats(forwardId),
    },
    runOnce: () => consumer.runOnce(),
    drain: () => consumer.drain(),
    sweep: async () => (await sweeper.sweep()).length,
    reconcile,
    refresh: () => relaySync.refresh(),
    flushAudit: () => connectionLog.flush(),
    scheduleBackups,
    sweepAccess,
    close: () => {
      closing ??= (async () => {
        clearInterval(reconcileTimer);
        await accessSchedule.stop();
        await backupSchedule?.stop();
        await sweeper.close();
        await consumer.close();
        await locks.close();
        await engine.stop();
        await relaySync.close();
        await relay.close();
        await connectionLog.close();
        await hub?.close();
        await releaseFeed?.();
      })();
      return closing;
    },
  };
};

/** The backup use case, for `bench/backup-storage-bench.ts`. */
export { storeConfigRead } from "./jobs/backup-router.ts";
