import { hostname } from "node:os";
import { acquireJobEngine, type Database, ForwardTargetsRepository, type JobEngine, routerJobsQueue } from "@fleet/db";
import { type Clock, FeatureWiring, ROUTER_JOB_KINDS, systemClock } from "@fleet/shared";
import type { Logger } from "pino";
import type { TunnelAgentConfig } from "./config.ts";
import type { ReconcileReport } from "./jobs/reconcile-router.ts";
import type { RouterOsConnector } from "./routeros/routeros-client.ts";
import type { RunningHub } from "./wireguard/start-hub.ts";
import type { WireguardDevice } from "./wireguard/wireguard-device.ts";
import { wireAccess } from "./wiring/access.wiring.ts";
import { wireBackups } from "./wiring/backups.wiring.ts";
import { wireChanges } from "./wiring/changes.wiring.ts";
import { wireExpiry } from "./wiring/expiry.wiring.ts";
import { wireHub } from "./wiring/hub.wiring.ts";
import { wireJobs } from "./wiring/jobs.wiring.ts";
import { wireRelay } from "./wiring/relay.wiring.ts";
import { wireRouterOs } from "./wiring/routeros.wiring.ts";
import type { AgentContext, Wired } from "./wiring/wiring.ts";

export { loadTunnelAgentConfig, type TunnelAgentConfig } from "./config.ts";
export { proxyV1Header, proxyV2Header } from "./entry-point/proxy-protocol.ts";
export { EXPIRY_SWEEP_QUEUE } from "./wiring/expiry.wiring.ts";

/** Routers named in the start-up warning at most; the count covers all. */
const UNREACHABLE_LISTED = 100;

/**
 * The start-up line that says which routers the agent will not connect to: those migration 008
 * left without an address (theirs was not unique or not inside the default network), and those
 * whose address lies outside the configured TUNNEL_NETWORK (docs/api.md "Routers and heartbeats").
 */
const reportUnreachableRouters = async ({ config, db, logger }: AgentContext) => {
  const { count, routers } = await new ForwardTargetsRepository(db).routersWithoutReachableTunnel(
    config.tunnelNetwork.cidr,
    UNREACHABLE_LISTED,
  );
  if (count === 0) return;
  logger.warn(
    { count, routers, tunnelNetwork: config.tunnelNetwork.cidr },
    "routers without an assigned tunnel address inside TUNNEL_NETWORK: new forwards to routers without one answer 409, and the agent and relay never connect to an address outside the network, until an operator assigns one",
  );
};

/** What production passes: `main.ts` and the all-in-one composition root. */
export interface StartTunnelAgentOptions {
  config: TunnelAgentConfig;
  /** Opened and migrated by the caller (the all-in-one shares one database between apps). */
  db: Database;
  logger: Logger;
  /** ACCESS_PASSWORD_KEY when the composition root shares one with the API (DATA_DIR=memory). */
  accessPasswordKey?: string;
}

/** What only tests change, passed by the builder in `testing/tunnel-agent-builder.ts`. */
export interface TunnelAgentOverrides {
  /** Time of domain rules (forward expiry, access expiry). Default: the system clock. */
  clock?: Clock;
  /** Replaces the SSH connector (tests that fake the router side). */
  connector?: RouterOsConnector;
  /** No background job loop: the caller drives the queue with `runOnce`/`drain` (deterministic tests). */
  manualJobs?: boolean;
  /** Called after each reconciliation of a router. */
  onReconciled?: (routerId: string, report: ReconcileReport) => void;
  /** TUNNEL_MODE=wireguard: a hub device instead of a real interface, and no hub schedules. */
  hubDevice?: WireguardDevice;
}

export interface RunningTunnelAgent {
  /** This agent's name in logs (host, pid, random suffix). */
  workerId: string;
  /** The public key routers must authorize for `TUNNEL_SSH_USER` (`ssh-ed25519 AAAA...`). */
  publicKey: string;
  /** TUNNEL_MODE=wireguard: the management tunnel's hub this agent runs (docs/architecture.md). */
  hub: RunningHub | undefined;
  close(): Promise<void>;
}

/** The agent's parts a test drives by hand instead of waiting for their timers. */
export interface TunnelAgentControls {
  /** The process's job engine (shared with other apps on the same database). */
  jobs: JobEngine;
  relay: {
    /** Forwards with a bound listener. */
    listening(): Array<{ id: string; port: number }>;
    connections(forwardId?: string): number;
    stats(forwardId: string): { accepted: number; refused: number } | undefined;
  };
  /** Runs one due job to completion in the caller's flow. */
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
}

/**
 * The tunnel agent (docs/api.md "Tunnel agent and entry point"): durable apply/remove/reconcile jobs
 * over SSH to routers, the expiry sweep, periodic reconciliation and the entry-point relay. Any
 * number may run against one PostgreSQL: router jobs run on the job engine (pg-boss), one at a time
 * per router, and the expiry safety sweep is a cluster-wide schedule, so it runs once a minute
 * whatever the agent count.
 *
 * The composition root: one job engine and one clock, then each feature's wiring
 * (`wiring/*.wiring.ts`: its services, schedules and `close`), the start-up steps in their order,
 * and the features' schedules. Shutdown runs in reverse order; a failed start closes what was
 * already wired.
 */
export const startTunnelAgent = async (options: StartTunnelAgentOptions): Promise<RunningTunnelAgent> => {
  const { workerId, publicKey, hub, close } = await composeTunnelAgent(options);
  return { workerId, publicKey, hub, close };
};

/** {@link startTunnelAgent} with what only tests change and the controls they drive (`testing/`). */
export const composeTunnelAgent = async (
  production: StartTunnelAgentOptions,
  overrides: TunnelAgentOverrides = {},
): Promise<RunningTunnelAgent & TunnelAgentControls> => {
  const options = { ...overrides, ...production };
  const { config, db, logger } = options;
  const workerId = `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;
  const leaseSeconds = Math.ceil(config.jobs.leaseMs / 1000);
  const jobs = await acquireJobEngine(db, {
    instanceName: "tunnel-agent",
    // An attempt whose agent died is failed over at most this long after its lease ran out.
    monitorIntervalSeconds: Math.min(30, Math.max(1, Math.floor(leaseSeconds / 2))),
    onError: (error) => logger.warn({ err: error }, "job engine error"),
  });
  const ctx: AgentContext = { config, db, logger, jobs, clock: options.clock ?? systemClock };

  const wiring = new FeatureWiring<Wired<unknown>>(() => jobs.stop());
  const wire = <S>(feature: Wired<S>) => wiring.add(feature);
  try {
    await jobs.defineQueue(routerJobsQueue(leaseSeconds));
    const { hub } = wire(await wireHub(ctx, options.hubDevice)).services;
    const { connector, publicKey } = wire(wireRouterOs(ctx, options.connector)).services;
    const relay = wire(wireRelay(ctx)).services;
    const refreshRelay = () => void relay.sync.refresh();
    const backups = wire(wireBackups(ctx, { connector })).services;
    const { thenBackup } = backups;
    const access = wire(
      wireAccess(ctx, { connector, thenBackup, refreshRelay, passwordKey: options.accessPasswordKey }),
    ).services;
    const changes = wire(await wireChanges(ctx, { connector, backup: backups.handler })).services;
    const { worker, lifecycle, reconcile } = wire(
      wireJobs(ctx, {
        connector,
        handlers: { ...access.handlers, ...changes.handlers, [ROUTER_JOB_KINDS.backup]: backups.handler },
        thenBackup,
        refreshRelay,
        onReconciled: options.onReconciled,
      }),
    ).services;
    const { sweeper } = wire(await wireExpiry(ctx, { lifecycle, refreshRelay })).services;

    await reportUnreachableRouters(ctx);
    // Order: listeners for what is active, then close what expired while no agent ran, then check
    // routers against the database, and only then start taking jobs.
    await relay.sync.refresh();
    await sweeper.start();
    await reconcile();
    for (const feature of wiring.features) {
      for (const schedule of feature.schedules) {
        if (schedule.jobLoop && options.manualJobs) continue;
        wiring.started(await schedule.start());
      }
    }
    logger.info(
      {
        workerId,
        entryPoint: config.entryPoint.host,
        bind: config.entryPoint.bind,
        ports: config.entryPoint.ports,
      },
      "tunnel agent started",
    );

    return {
      workerId,
      jobs,
      publicKey,
      hub,
      relay: {
        listening: () => relay.relay.listening(),
        connections: (forwardId) => relay.relay.connections(forwardId),
        stats: (forwardId) => relay.relay.stats(forwardId),
      },
      runOnce: () => worker.runOnce(),
      drain: () => worker.drain(),
      sweep: async () => (await sweeper.sweep()).length,
      reconcile,
      refresh: () => relay.sync.refresh(),
      flushAudit: () => relay.connectionLog.flush(),
      scheduleBackups: backups.scheduleBackups,
      sweepAccess: access.sweepAccess,
      close: () => wiring.close(),
    };
  } catch (error) {
    await wiring.close().catch(() => {});
    throw error;
  }
};

/** The backup use case, for `bench/backup-storage-bench.ts`. */
export { storeConfigRead } from "./jobs/backup-router.ts";
