import {
  type AppliedHeartbeat,
  type Database,
  type DowntimeWrite,
  type FaultCompletion,
  type HeartbeatWrite,
  insertAuditEntries,
  type OwnedFault,
  type Query,
} from "@fleet/db";
import { inferFaultCause, pulseEvent, type StatusFeed, type TRouterStatusEvent } from "@fleet/shared";
import type { Logger } from "pino";
import { faultCompletedEntry } from "../faults/fault-audit.ts";
import { toFaultEvent } from "../faults/fault-events.ts";
import { downtimeClosedBy } from "../metrics/downtime.ts";
import type { CoverageHolder } from "./coverage-holder.ts";

/** The persistence resumption needs (HeartbeatsRepository in production). */
export interface ResumptionStore {
  recordDowntime(writes: readonly DowntimeWrite[]): Promise<void>;
  completeFaults(query: Query, completions: readonly FaultCompletion[]): Promise<OwnedFault[]>;
}

export interface ResumptionServiceOptions {
  store: ResumptionStore;
  /** Fault completions and their `router.online` entries commit in one transaction. */
  db: Pick<Database, "transaction">;
  feed: StatusFeed;
  coverage: CoverageHolder;
  intervalMs: number;
  /** MISSED_HEARTBEATS: a silence this long may have opened a fault. */
  missedHeartbeats: number;
  logger: Logger;
}

/**
 * The use case "a router beats again after no pulse or a long gap" (docs/api.md "Routers and
 * heartbeats"): the downtime its silence closed is recorded per UTC hour, its ongoing fault is
 * completed with an inferred cause and audited `router.online` in one transaction, and
 * `pulse`/`fault` status events are published. The heartbeat writer hands it the routers its
 * flush reported as notable, after their heartbeats are written; at the steady cadence there are
 * none and this does nothing.
 */
export class ResumptionService {
  readonly #o: ResumptionServiceOptions;

  constructor(options: ResumptionServiceOptions) {
    this.#o = options;
  }

  /** `notable`: the flush's report; `written`: the heartbeats it wrote (the latest per router). */
  async resumed(notable: readonly AppliedHeartbeat[], written: readonly HeartbeatWrite[]): Promise<void> {
    if (notable.length === 0) return;
    const byRouter = new Map<string, HeartbeatWrite>();
    for (const w of written) byRouter.set(w.routerId, w);
    const downtime: DowntimeWrite[] = [];
    const completions: FaultCompletion[] = [];
    const events: TRouterStatusEvent[] = [];
    const coverage = this.#o.coverage.current;
    for (const row of notable) {
      const write = byRouter.get(row.routerId);
      if (!write) continue;
      // The first heartbeat of the write ends the silence before it (several waited in the buffer
      // through a database outage); silences between them are downtime of their own.
      const resumedAt = write.firstSeenAt ?? write.seenAt;
      const closed = downtimeClosedBy({
        routerId: row.routerId,
        previousSeenAt: row.previousSeenAt,
        seenAt: resumedAt,
        coverage,
        intervalMs: this.#o.intervalMs,
      });
      for (const part of closed) downtime.push(part);
      for (const silence of write.silences ?? []) {
        const inner = { routerId: row.routerId, previousSeenAt: silence.from, seenAt: silence.to, coverage };
        for (const part of downtimeClosedBy({ ...inner, intervalMs: this.#o.intervalMs })) downtime.push(part);
      }
      if (!row.previousHasPulse)
        events.push(pulseEvent({ routerId: row.routerId, teamId: row.teamId, hasPulse: true, at: write.seenAt }));
      // Any router silent for the whole threshold may have a fault, even if the flush read its
      // state just before the sweeper opened it: completing a fault that is not there is a no-op.
      const silentLongEnough =
        row.previousSeenAt !== null &&
        resumedAt.getTime() - row.previousSeenAt.getTime() >= this.#o.missedHeartbeats * this.#o.intervalMs;
      if (row.previousSeenAt && (!row.previousHasPulse || silentLongEnough)) {
        completions.push({
          routerId: row.routerId,
          resolvedAt: resumedAt,
          cause: inferFaultCause({
            lastSeen: row.previousSeenAt,
            resumedAt,
            // The uptime the latest heartbeat reported, as it was at the first one.
            uptimeSeconds:
              write.uptimeSeconds === null || write.uptimeSeconds === undefined
                ? write.uptimeSeconds
                : write.uptimeSeconds - (write.seenAt.getTime() - resumedAt.getTime()) / 1000,
          }),
        });
      }
    }
    if (downtime.length > 0) await this.#o.store.recordDowntime(downtime);
    if (completions.length > 0) {
      const { store } = this.#o;
      const completed = await this.#o.db.transaction(async (query) => {
        const done = await store.completeFaults(query, completions);
        await insertAuditEntries(query, done.map(faultCompletedEntry));
        return done;
      });
      const flipped = new Set(events.map((e) => e.router_id));
      for (const fault of completed) {
        const write = byRouter.get(fault.routerId);
        if (!flipped.has(fault.routerId) && write)
          events.push(pulseEvent({ routerId: fault.routerId, teamId: fault.teamId, hasPulse: true, at: write.seenAt }));
        events.push(toFaultEvent(fault));
      }
    }
    if (events.length > 0) {
      await this.#o.feed
        .publish(events)
        .catch((error) => this.#o.logger.warn({ err: error }, "status events not published"));
    }
  }
}
