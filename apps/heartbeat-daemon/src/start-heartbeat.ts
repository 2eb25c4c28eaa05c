import { randomUUID } from "node:crypto";
import { acquireStatusFeed, type Database, HeartbeatsRepository } from "@fleet/db";
import { type Clock, FeatureWiring, monotonicClock, systemClock } from "@fleet/shared";
import type { Logger } from "pino";
import type { HeartbeatConfig } from "./config.ts";
import type { SweepResult } from "./faults/fault-sweeper.ts";
import type { FlushStats } from "./heartbeats/heartbeat-writer.ts";
import type { ConnectionGuardStats } from "./transport/connection-guard.ts";
import { wireFaults } from "./wiring/faults.wiring.ts";
import { type CloseRouter, wireHeartbeats } from "./wiring/heartbeats.wiring.ts";
import { wireMetrics } from "./wiring/metrics.wiring.ts";
import { wireTokenAuth } from "./wiring/token-auth.wiring.ts";
import { wireTransports } from "./wiring/transports.wiring.ts";
import type { DaemonContext, Wired } from "./wiring/wiring.ts";

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
 *
 * The composition root: the status feed and each clock once, then each feature's wiring
 * (`wiring/*.wiring.ts`: its services, timers and `close`) and the features' timers. Shutdown runs
 * in reverse order; a failed start closes what was already wired.
 */
export const startHeartbeat = async (options: StartHeartbeatOptions): Promise<RunningHeartbeat> => {
  const { config, db, logger } = options;
  const feedHandle = await acquireStatusFeed(db, (error) => logger.warn({ err: error }, "status feed connection lost"));
  const ctx: DaemonContext = {
    config,
    db,
    logger,
    clock: options.clock ?? systemClock,
    transportClock: monotonicClock,
    store: new HeartbeatsRepository(db),
    feed: feedHandle.feed,
    daemonId: randomUUID(),
  };

  const wiring = new FeatureWiring<Wired<unknown>>(() => feedHandle.release());
  const wire = <S>(feature: Wired<S>) => wiring.add(feature);
  try {
    const { auth } = wire(wireTokenAuth(ctx)).services;
    // Set once the server exists; a flush can only find gone routers after heartbeats arrived.
    let closeRouter: CloseRouter = () => {};
    const { writer, coverage } = wire(
      await wireHeartbeats(ctx, {
        auth,
        closeRouter: (routerId, reason, tokenHash) => closeRouter(routerId, reason, tokenHash),
      }),
    ).services;
    const { server } = wire(
      await wireTransports(ctx, { auth, writer, reusePort: options.reusePort ?? false }),
    ).services;
    closeRouter = server.closeRouter;
    const { sweep } = wire(wireFaults(ctx, { coverage, caughtUp: () => writer.caughtUp })).services;
    wire(wireMetrics(ctx, { writer }));
    if (options.timers !== false) {
      for (const feature of wiring.features) for (const schedule of feature.schedules) wiring.started(schedule.start());
    }

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
      close: () => wiring.close(),
    };
  } catch (error) {
    await wiring.close().catch(() => {});
    throw error;
  }
};

export { HEARTBEAT_NODE_FLAGS, type HeartbeatConfig, loadHeartbeatConfig } from "./config.ts";
