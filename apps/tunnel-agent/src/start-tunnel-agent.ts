import {
  AuditLogRepository,
  type Database,
  ForwardsRepository,
  JobsRepository,
  SshHostKeysRepository,
} from "@fleet/db";
import { type Clock, FORWARD_JOB_KINDS, systemClock } from "@fleet/shared";
import type { Logger } from "pino";
import type { TunnelAgentConfig } from "./config.ts";
import { ConnectionLog } from "./entry-point/connection-log.ts";
import { EntryPointRelay } from "./entry-point/relay.ts";
import { RelaySync } from "./entry-point/relay-sync.ts";
import { ExpirySweeper } from "./expiry/expiry-sweeper.ts";
import { applyForwardHandler, type ForwardJobDeps } from "./jobs/apply-forward.ts";
import { JobConsumer } from "./jobs/job-consumer.ts";
import { type ReconcileReport, reconcileRouterHandler, scheduleReconciliation } from "./jobs/reconcile-router.ts";
import { removeForwardHandler } from "./jobs/remove-forward.ts";
import { resolveAgentKey } from "./routeros/agent-key.ts";
import { DbHostKeyStore } from "./routeros/db-host-key-store.ts";
import type { RouterOsConnector } from "./routeros/routeros-client.ts";
import { SshRouterOsConnector } from "./routeros/ssh-routeros-client.ts";

export { loadTunnelAgentConfig, type TunnelAgentConfig } from "./config.ts";
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
}

export interface RunningTunnelAgent {
  /** This agent's identity in job leases (`locked_by`). */
  workerId: string;
  /** The public key routers must authorize for `TUNNEL_SSH_USER` (`ssh-ed25519 AAAA...`). */
  publicKey: string;
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
  close(): Promise<void>;
}

/**
 * The tunnel agent (docs/api.md "Tunnel agent and entry point"): durable apply/remove/reconcile jobs over SSH to routers,
 * the expiry sweep, periodic reconciliation and the entry-point relay. Any number may run against
 * one PostgreSQL: jobs are leased, so each is done by one agent at a time.
 */
export const startTunnelAgent = async (options: StartTunnelAgentOptions): Promise<RunningTunnelAgent> => {
  const { config, db, logger } = options;
  const clock = options.clock ?? systemClock;
  const forwards = new ForwardsRepository(db);
  const jobs = new JobsRepository(db);
  const key = resolveAgentKey(config.ssh.keyFile, config.dataDir);
  const connector =
    options.connector ??
    new SshRouterOsConnector({
      username: config.ssh.user,
      privateKey: key.privateKey,
      connectTimeoutMs: config.ssh.connectTimeoutMs,
      commandTimeoutMs: config.ssh.commandTimeoutMs,
      hostKeys: new DbHostKeyStore(new SshHostKeysRepository(db), clock),
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
  const relaySync = new RelaySync({
    relay,
    forwards,
    entryPoint: config.entryPoint.host,
    clock,
    logger,
    pollMs: config.relayPollMs,
  });

  const deps: ForwardJobDeps = {
    forwards,
    connector,
    clock,
    logger: logger.child({ part: "jobs" }),
    sshPort: config.ssh.port,
  };
  const consumer = new JobConsumer({
    jobs,
    handlers: {
      [FORWARD_JOB_KINDS.apply]: applyForwardHandler(deps),
      [FORWARD_JOB_KINDS.remove]: removeForwardHandler(deps),
      [FORWARD_JOB_KINDS.reconcile]: reconcileRouterHandler(deps, options.onReconciled),
    },
    clock,
    logger: logger.child({ part: "jobs" }),
    ...config.jobs,
    onJobFinished: () => void relaySync.refresh(),
  });
  const sweeper = new ExpirySweeper({
    forwards,
    clock,
    logger: logger.child({ part: "expiry" }),
    safetyIntervalMs: config.expirySweepIntervalMs,
    onSwept: () => {
      void relaySync.refresh();
      consumer.wake();
    },
  });
  const reconcile = async () => {
    const queued = await scheduleReconciliation({ forwards, jobs, clock });
    if (queued > 0) consumer.wake();
    return queued;
  };

  // Order: listeners for what is active, then close what expired while no agent ran, then check
  // routers against the database, and only then start taking jobs.
  await relaySync.refresh();
  await sweeper.start();
  await reconcile();
  relaySync.start();
  if (!options.manualJobs) consumer.start();
  const reconcileTimer = setInterval(() => {
    reconcile().catch((error: unknown) => logger.error({ err: error }, "scheduling reconciliation failed"));
  }, config.reconcileIntervalMs);
  reconcileTimer.unref();
  logger.info(
    {
      workerId: consumer.workerId,
      entryPoint: config.entryPoint.host,
      bind: config.entryPoint.bind,
      ports: config.entryPoint.ports,
    },
    "tunnel agent started",
  );

  let closing: Promise<void> | undefined;
  return {
    workerId: consumer.workerId,
    publicKey: key.publicKey,
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
    close: () => {
      closing ??= (async () => {
        clearInterval(reconcileTimer);
        await sweeper.close();
        await consumer.close();
        await relaySync.close();
        await relay.close();
        await connectionLog.close();
      })();
      return closing;
    },
  };
};
