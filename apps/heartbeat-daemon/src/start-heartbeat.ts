import {
  acquireStatusFeed,
  type Database,
  HeartbeatsRepository,
  holdClusterLease,
  type StatusFeedHandle,
  WireguardPeersRepository,
} from "@fleet/db";
import type { Logger } from "pino";
import type { HeartbeatConfig } from "./config.ts";
import { nextSweepInMs, type SweepMemo, type SweepResult, sweepFaults } from "./faults/fault-sweeper.ts";
import type { CoverageHolder } from "./heartbeats/coverage-holder.ts";
import { type FlushStats, HeartbeatWriter } from "./heartbeats/heartbeat-writer.ts";
import { ResumptionService } from "./heartbeats/resumption.service.ts";
import { WireguardBinder } from "./heartbeats/wireguard-binder.ts";
import { type Clock, monotonicClock, systemClock } from "@fleet/shared";
import type { ConnectionGuardStats } from "./transport/connection-guard.ts";
import { startHeartbeatServer } from "./transport/heartbeat-server.ts";
import { TokenAuthenticator } from "./transport/token-auth.ts";
import { watchOpenFaults, watchRouters, watchWriter } from "./metrics/prometheus.ts";

export interface StartHeartbeatOptions {
  config: HeartbeatConfig;
  /** Opened and migrated by the caller (the all-in-one shares one database between apps). */
  db: Database;
  logger: Logger;
  clock?: Clock;
  /** Bind with SO_REUSEPORT so several worker processes share the port. */
  reusePort?: boolean;
  /** False: no flush/sweep timers (tests drive `flush()` and `sweep()` themselves). */
  timers?: boolean;
}

export interface RunningHeartbeat {
  url: string;
  port: number;
  /** `ws://.../v1/heartbeat` */
  wsUrl: string;
  /** Writes every acknowledged heartbeat now. */
  flush(): Promise<void>;
  /** One sweep for faults at the clock's current time. */
  sweep(): Promise<SweepResult>;
  connections(): number;
  stats(): FlushStats & {
    pending: number;
    connections: number;
    tokenLookups: number;
    /** Tokens this process has cached (owners and refusals). */
    tokensCached: number;
    /** Connections open and waiting for a request, and those the guard closed (transport/connection-guard.ts). */
    guard: ConnectionGuardStats;
  };
  /** Stops accepting, closes sockets (1001), writes what was acknowledged, releases the feed. */
  close(): Promise<void>;
}

/**
 * The heartbeat daemon (docs/api.md "Routers and heartbeats"): authenticates routers, acknowledges their heartbeats
 * at once and writes them in batches, opens faults for silent routers and completes them when the
 * routers come back, and records downtime per hour.
 */
export const startHeartbeat = async (options: StartHeartbeatOptions): Promise<RunningHeartbeat> => {
  const { config, db, logger } = options;
  const clock = options.clock ?? systemClock;
  // The transport's timeouts, token cache and flood buckets measure elapsed time against real
  // timers: never a test's ManualClock, never a wall clock that can step.
  const transportClock = monotonicClock;
  const { tuning } = config;
  const store = new HeartbeatsRepository(db);
  const feedHandle: StatusFeedHandle = await acquireStatusFeed(db, (error) =>
    logger.warn({ err: error }, "status feed connection lost"),
  );
  const feed = feedHandle.feed;

  const coverage: CoverageHolder = { current: null };
  coverage.current = await store.startCoverage(clock.now(), tuning.coverageGapMs, config.intervalMs);
  if (coverage.current.outageStartedAt && coverage.current.coveredSince.getTime() === clock.now().getTime()) {
    logger.info(
      { since: coverage.current.outageStartedAt },
      "no heartbeat daemon was running; silent routers get a full threshold",
    );
  }

  // HTTP heartbeats come once per interval, always past the TTL: they may use a cached owner a few
  // intervals old while it is re-checked in the background (see TokenAuthenticator.authenticate).
  // An HTTP router's token is re-checked in the background once per half of that window, not at
  // every heartbeat (a re-check per heartbeat is a token lookup in PostgreSQL at every beat).
  const staleMs = Math.max(600_000, 3 * config.intervalMs);
  const auth = new TokenAuthenticator({
    lookup: store,
    ttlMs: tuning.tokenCacheTtlMs,
    staleMs,
    recheckAfterMs: staleMs / 2,
    gatherMs: tuning.tokenGatherMs,
    clock: transportClock,
  });
  // Set once the server exists; a flush can only find gone routers after heartbeats arrived.
  let closeRouter: (routerId: string, reason: string, tokenHash?: string) => void = () => {};
  const writer = new HeartbeatWriter({
    store,
    resumption: new ResumptionService({
      store,
      db,
      feed,
      coverage,
      intervalMs: config.intervalMs,
      missedHeartbeats: config.missedHeartbeats,
      logger,
    }),
    intervalMs: config.intervalMs,
    missedHeartbeats: config.missedHeartbeats,
    flushIntervalMs: tuning.flushIntervalMs,
    maxBatchRows: tuning.maxBatchRows,
    logger,
    onGone: (routerIds) => {
      for (const id of routerIds) {
        auth.revokeRouter(id);
        closeRouter(id, "router removed; heartbeat token revoked");
      }
    },
    onReplaced: (replaced) => {
      for (const { routerId, tokenHash } of replaced) {
        auth.revokeToken(routerId, tokenHash);
        closeRouter(routerId, "heartbeat token replaced", tokenHash);
      }
    },
  });

  const revoke = (routerId: string) => {
    auth.revokeRouter(routerId);
    writer.forget(routerId);
    closeRouter(routerId, "router removed; heartbeat token revoked");
  };
  const unsubscribe = feed.subscribe((event) => {
    if (event.type === "removed") revoke(event.router_id);
  });
  // Re-adoption (docs/routeros.md "Adoption"): the old token stops working in every process at
  // once. The router's cached token is dropped (its next heartbeat is checked against the
  // database) and its sockets closed; a router with the new token simply reconnects. A pending
  // heartbeat stays: the flush writes it only if its token is still the router's.
  const unsubscribeTokens = feed.onTokenReplaced((routerId) => {
    auth.forgetRouter(routerId);
    closeRouter(routerId, "heartbeat token replaced");
  });

  const binder = new WireguardBinder({
    store: new WireguardPeersRepository(db),
    feed,
    clock,
    logger: logger.child({ part: "wireguard-keys" }),
  });
  let migrated = false;
  const server = await startHeartbeatServer({
    binder,
    host: config.host,
    port: config.port,
    reusePort: options.reusePort ?? false,
    intervalMs: config.intervalMs,
    tuning,
    auth,
    writer,
    clock,
    transportClock,
    logger,
    metricsToken: config.metricsToken,
    isReady: async () => {
      if (!migrated) migrated = await db.isReady();
      if (!migrated) return false;
      await db.ping();
      return true;
    },
  });
  closeRouter = server.closeRouter;
  const unwatchFaults = watchOpenFaults(async () =>
    (await holdClusterLease(db, "metrics.open-faults")) ? store.countOpenFaults() : undefined,
  );
  const unwatchRouters = watchRouters(async () =>
    (await holdClusterLease(db, "metrics.routers")) ? store.countRoutersByPulse() : undefined,
  );
  const unwatchWriter = watchWriter(() => writer.stats);

  const sweepMemo: SweepMemo = { notDueBefore: null, scannedAt: null };
  // One sweep at a time in this process: a sweep asked for (a test with a ManualClock, the final
  // sweep at close) runs after the timer's in-flight one instead of meeting its advisory lock and
  // answering "not swept" while that one still works with an earlier time.
  let sweepChain: Promise<unknown> = Promise.resolve();
  const sweep = (): Promise<SweepResult> => {
    const run = sweepChain.then(sweepOnce);
    sweepChain = run.catch(() => undefined);
    return run;
  };
  const sweepOnce = () =>
    sweepFaults({
      memo: sweepMemo,
      store,
      feed,
      clock,
      coverage,
      intervalMs: config.intervalMs,
      missedHeartbeats: config.missedHeartbeats,
      graceMs: 2 * tuning.flushIntervalMs,
      limit: tuning.sweepLimit,
    });

  // While a router can be due, sweep every sweepIntervalMs; otherwise wait until one can, but at
  // most sweepIdleMs (a sweep also marks the daemons alive for the coverage record).
  let sweeping: Promise<unknown> | null = null;
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweepsStopped = false;
  const scheduleSweep = (inMs: number) => {
    if (sweepsStopped) return;
    sweepTimer = setTimeout(() => {
      const startedAt = performance.now();
      sweeping = sweep()
        .then((result) => {
          if (result.opened.length > 0) logger.info({ faults: result.opened.length }, "faults opened");
          return result;
        })
        .catch((error) => {
          logger.error({ err: error }, "fault sweep failed");
          return null;
        })
        .then((result) => {
          sweeping = null;
          // Counted from the sweep's start: a slow sweep (a loaded database) must not stretch the
          // period, which bounds how late a fault opens.
          const tookMs = performance.now() - startedAt;
          scheduleSweep(Math.max(0, nextSweepInMs(result, clock.now().getTime(), tuning) - tookMs));
        });
    }, inMs);
    sweepTimer.unref();
  };
  if (options.timers !== false) {
    writer.start();
    scheduleSweep(tuning.sweepIntervalMs);
  }

  let closed = false;
  return {
    url: server.url,
    port: server.port,
    wsUrl: `${server.url.replace(/^http/, "ws")}/v1/heartbeat`,
    flush: () => writer.flush(),
    sweep,
    connections: server.connections,
    stats: () => ({
      ...writer.stats,
      pending: writer.pending,
      connections: server.connections(),
      tokenLookups: auth.lookups,
      tokensCached: auth.size,
      guard: server.guard(),
    }),
    close: async () => {
      if (closed) return;
      closed = true;
      sweepsStopped = true;
      clearTimeout(sweepTimer);
      unwatchFaults();
      unwatchRouters();
      unwatchWriter();
      await sweeping;
      // A last sweep marks the daemons alive up to this moment: the restart rule then knows exactly
      // when coverage ended, although idle sweeps (and so the marks) are up to a second apart.
      if (options.timers !== false) await sweep().catch((error) => logger.warn({ err: error }, "final sweep failed"));
      await server.close();
      await writer.close();
      await binder.settled();
      unsubscribe();
      unsubscribeTokens();
      await feedHandle.release();
    },
  };
};

export { type HeartbeatConfig, loadHeartbeatConfig } from "./config.ts";
