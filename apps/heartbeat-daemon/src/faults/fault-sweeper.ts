import {
  type Database,
  insertAuditEntries,
  type NewFault,
  type OwnedFault,
  type Query,
  type SweepParams,
  type SweepTransaction,
} from "@fleet/db";
import {
  effectiveLastSeen,
  faultStartsAt,
  jitterToleranceMs,
  pulseEvent,
  siteOfflineMessage,
  type StatusFeed,
  type TRouterStatusEvent,
} from "@fleet/shared";
import type { CoverageHolder } from "../heartbeats/coverage-holder.ts";
import type { Clock } from "@fleet/shared";
import { faultOpenedEntry } from "./fault-audit.ts";
import { toFaultEvent } from "./fault-events.ts";

/** The persistence the sweeper needs (HeartbeatsRepository in production). */
export interface SweepStore {
  markAliveSweep<T>(params: SweepParams, work: (tx: SweepTransaction) => Promise<T>): Promise<T | null>;
  sweepIn<T>(query: Query, params: SweepParams, work: (tx: SweepTransaction) => Promise<T>): Promise<T | null>;
}

export interface SweepDeps {
  store: SweepStore;
  /** A scanning sweep is one transaction, opened here. */
  db: Pick<Database, "transaction">;
  feed: StatusFeed;
  clock: Clock;
  coverage: CoverageHolder;
  intervalMs: number;
  missedHeartbeats: number;
  /** Extra wait past the threshold so a heartbeat acknowledged but not yet flushed wins the race. */
  graceMs: number;
  /** Routers per statement; a bigger outage takes several rounds of the same sweep. */
  limit: number;
  /** Kept by the daemon's sweep loop between sweeps: lets a sweep skip its scans (see SweepMemo). */
  memo?: SweepMemo;
  /**
   * This process as a daemon whose writes the sweep waits for (SweepParams.daemon): `caughtUp` is
   * false while its heartbeat writes fail. Absent: routers are judged up to `now` (a bare sweep).
   */
  daemon?: { id: string; caughtUp: () => boolean; slackMs: number; dropAfterMs: number };
}

/**
 * What the last scanning sweep of this process learned: no router can be due before
 * `notDueBefore` (ms). `last_seen_at` only moves forward, a pulse comes back only with a fresh
 * heartbeat (due a whole threshold later), and coverage gaps only move the effective time later, so
 * until then a sweep only marks the daemons alive and does not scan `router_liveness` (a scan of
 * the whole narrow table: there is no index on what every heartbeat changes). A scan still runs at
 * least once per `rescanMs` (the heartbeat interval): a heartbeat acknowledged before a scan but
 * flushed after it (a database outage) can make a router due a little earlier than predicted, and
 * its fault then opens at most that much later.
 */
export interface SweepMemo {
  notDueBefore: number | null;
  scannedAt: number | null;
}

export interface SweepResult {
  /** False when another daemon process held the sweep. */
  swept: boolean;
  /** Routers were judged only up to here: some daemon's heartbeat writes lag (a database outage). */
  heldAt: Date | null;
  opened: OwnedFault[];
  /**
   * No router can be due before this (ms, the clock's time): the oldest pulse plus the threshold
   * and the grace. Null when unknown (not swept) or when no router has a pulse.
   */
  nextDueAt: number | null;
}

/** One round: a bare statement while no router can be due, else a transaction that scans. */
const sweepRound = async <T>(
  deps: SweepDeps,
  params: SweepParams,
  work: (tx: SweepTransaction) => Promise<T>,
): Promise<T | null> => {
  if (params.scan === false) return deps.store.markAliveSweep(params, work);
  return deps.db.transaction((query) => deps.store.sweepIn(query, params, work));
};

/**
 * Opens the faults of the API doc's state table: routers with MISSED_HEARTBEATS consecutive missed
 * periods get `has_pulse` false and an ongoing "site" fault whose `created_at` is the first missed
 * heartbeat. A plain function: the daemon's timer calls it, and tests call it with a ManualClock.
 * Exactly once across processes: one sweeper at a time (advisory lock), rows taken with SKIP
 * LOCKED, and a partial unique index allowing one ongoing fault per router.
 */
export const sweepFaults = async (deps: SweepDeps): Promise<SweepResult> => {
  const now = deps.clock.now();
  const nowMs = now.getTime();
  const memo = deps.memo;
  const scan =
    !memo ||
    memo.notDueBefore === null ||
    memo.scannedAt === null ||
    nowMs >= memo.notDueBefore ||
    nowMs < memo.scannedAt ||
    nowMs - memo.scannedAt >= deps.intervalMs;
  const params: SweepParams = {
    scan,
    now,
    intervalMs: deps.intervalMs,
    missedHeartbeats: deps.missedHeartbeats,
    graceMs: deps.graceMs,
    toleranceMs: jitterToleranceMs(deps.intervalMs),
    limit: deps.limit,
    ...(deps.daemon
      ? {
          daemon: {
            id: deps.daemon.id,
            caughtUp: deps.daemon.caughtUp(),
            slackMs: deps.daemon.slackMs,
            dropAfterMs: deps.daemon.dropAfterMs,
          },
        }
      : {}),
  };
  const opened: OwnedFault[] = [];
  let swept = false;
  let nextDueAt: number | null = null;
  let heldAt: Date | null = null;
  for (;;) {
    const round = await sweepRound(deps, params, async (tx) => {
      const thresholdMs = deps.missedHeartbeats * deps.intervalMs + deps.graceMs;
      if (!tx.scanned) nextDueAt = memo?.notDueBefore ?? null;
      else nextDueAt = tx.oldestSeenAt === null ? null : tx.oldestSeenAt.getTime() + thresholdMs;
      if (memo && tx.scanned) {
        // No pulse at all: a router's next heartbeat makes it due a whole threshold from now at the earliest.
        memo.notDueBefore = nextDueAt ?? nowMs + thresholdMs;
        memo.scannedAt = nowMs;
      }
      deps.coverage.current = tx.coverage;
      heldAt = tx.heldAt;
      const faults: NewFault[] = tx.due.map((router) => ({
        routerId: router.routerId,
        message: siteOfflineMessage({ identity: router.identity, name: router.name, id: router.routerId }),
        createdAt: faultStartsAt(effectiveLastSeen(router.lastSeenAt, tx.coverage, deps.intervalMs), deps.intervalMs),
      }));
      const openedNow = await tx.open(faults);
      await insertAuditEntries(tx.query, openedNow.map(faultOpenedEntry));
      return { due: tx.due.length, opened: openedNow };
    });
    if (!round) break;
    swept = true;
    opened.push(...round.opened);
    if (round.due < deps.limit) break;
  }
  if (opened.length > 0) {
    const events: TRouterStatusEvent[] = [];
    for (const fault of opened) {
      events.push(pulseEvent({ routerId: fault.routerId, teamId: fault.teamId, hasPulse: false, at: now }));
      events.push(toFaultEvent(fault));
    }
    await deps.feed.publish(events).catch(() => {});
  }
  return { swept, opened, nextDueAt, heldAt };
};

/**
 * The wait before the next sweep: `sweepIntervalMs` while a router can be due (or when another
 * process swept, or the sweep failed: nothing is known), else until one can, at most `sweepIdleMs`.
 */
export const nextSweepInMs = (
  result: SweepResult | null,
  nowMs: number,
  tuning: { sweepIntervalMs: number; sweepIdleMs: number },
): number => {
  if (!result?.swept) return tuning.sweepIntervalMs;
  if (result.nextDueAt === null) return tuning.sweepIdleMs;
  return Math.min(tuning.sweepIdleMs, Math.max(tuning.sweepIntervalMs, result.nextDueAt - nowMs));
};
