import { type Database, HealthSeriesRepository, queryOf } from "@fleet/db";
import type { CoverageHolder } from "../heartbeats/coverage-holder.ts";
import { type HealthFlush, HealthTracker } from "../heartbeats/health-tracker.ts";
import { HeartbeatWriter } from "../heartbeats/heartbeat-writer.ts";
import { ResumptionService } from "../heartbeats/resumption.service.ts";
import type { TokenAuthenticator } from "../transport/token-auth.ts";
import type { DaemonContext, Wired } from "./wiring.ts";

/** Closes a router's sockets (the transport's; set once the server exists). */
export type CloseRouter = (routerId: string, reason: string, tokenHash?: string) => void;

export interface HeartbeatsServices {
  /** Batches acknowledged heartbeats and flushes them (its timer is this feature's schedule). */
  writer: HeartbeatWriter;
  /** Since when the daemons have watched (docs/architecture.md "How a heartbeat travels", step 5). */
  coverage: CoverageHolder;
}

/**
 * The heartbeat writer and what follows a flush (docs/architecture.md "How a heartbeat travels",
 * step 4): the coverage record this process continues, `ResumptionService` for routers that beat
 * again, and the revocation of gone routers' and replaced tokens.
 */
export const wireHeartbeats = async (
  { config, db, logger, clock, store, feed, daemonId }: DaemonContext,
  deps: { auth: TokenAuthenticator; closeRouter: CloseRouter },
): Promise<Wired<HeartbeatsServices>> => {
  const { tuning } = config;
  const { auth, closeRouter } = deps;
  const coverage: CoverageHolder = { current: null };
  coverage.current = await db.transaction((query) =>
    store.startCoverage(query, clock.now(), tuning.coverageGapMs, config.intervalMs),
  );
  if (coverage.current.outageStartedAt && coverage.current.coveredSince.getTime() === clock.now().getTime()) {
    logger.info(
      { since: coverage.current.outageStartedAt },
      "no heartbeat daemon was running; silent routers get a full threshold",
    );
  }
  // docs/api.md "Health": latest values (in the liveness update), interface states, samples and
  // hourly rollups, written by the same flushes.
  // Each statement commits without waiting for the disk (HEALTH_ASYNC_COMMIT).
  const health = {
    tracker: new HealthTracker({ sampleSeconds: config.resourceSampleSeconds, clock }),
    write: healthWrite(db),
  };
  const writer = new HeartbeatWriter({
    store,
    health,
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
    steadyFlushMs: tuning.steadyFlushMs,
    maxBatchRows: tuning.maxBatchRows,
    logger,
    onGone: (routerIds) => {
      for (const id of routerIds) {
        auth.revokeRouter(id);
        closeRouter(id, "router removed; heartbeat token revoked");
      }
    },
    // docs/routeros.md "The guard": the tunnel agent's change steps hear their router's heartbeat at once.
    onExpedited: (beats) => {
      feed
        .signal(
          "router.beat",
          beats.map((b) => `${b.routerId}@${b.seenMs}`),
        )
        .catch(() => {});
    },
    onReplaced: (replaced) => {
      for (const { routerId, tokenHash } of replaced) {
        auth.revokeToken(routerId, tokenHash);
        closeRouter(routerId, "heartbeat token replaced", tokenHash);
      }
    },
  });
  const offAwaiting = feed.onSignal("change.awaiting", (routerId) => writer.expedite(routerId, clock.now().getTime()));
  return {
    services: { writer, coverage },
    // The flush timer; the writer's close stops it and writes what was acknowledged.
    schedules: [
      {
        start: () => {
          writer.start();
          return async () => {};
        },
      },
    ],
    close: async () => {
      offAwaiting();
      await writer.close();
      // Closed cleanly: the sweepers need not wait for this daemon's writes any more.
      await store.removeDaemon(daemonId).catch((error) => logger.warn({ err: error }, "daemon row not removed"));
    },
  };
};

/** What a flush writes of health (also run by bench/health-flush-bench.ts). */
export const healthWrite = (db: Database): ((flush: HealthFlush) => Promise<void>) => {
  const series = new HealthSeriesRepository(db);
  const query = queryOf(db);
  return async (flush) => {
    await HealthSeriesRepository.upsertInterfaces(query, flush.interfaces);
    await series.append(query, flush);
  };
};
