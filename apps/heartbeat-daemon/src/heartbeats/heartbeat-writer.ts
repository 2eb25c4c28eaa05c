import type { AppliedHeartbeat, HeartbeatsApplied, HeartbeatWrite, ReplacedToken } from "@fleet/db";
import { coalescingRunner, jitterToleranceMs } from "@fleet/shared";
import type { Logger } from "pino";
import { observeFlush } from "../metrics/prometheus.ts";
import { errorSummary, isRowRefusal } from "./row-refusal.ts";
import type { HealthFlush, HealthReport, HealthTracker } from "./health-tracker.ts";

/** The persistence the writer needs (HeartbeatsRepository in production). */
export interface HeartbeatStore {
  /** Rows one `applyHeartbeats` statement takes; the writer never passes more, so each call is atomic. */
  readonly chunkSize: number;
  /** Writes the rows; reports the routers with a gap of at least `quietGapMs` (or no pulse) and those gone. */
  applyHeartbeats(writes: readonly HeartbeatWrite[], quietGapMs: number): Promise<HeartbeatsApplied>;
}

/** Who handles routers that beat again after a silence (ResumptionService in production). */
export interface Resumption {
  resumed(notable: readonly AppliedHeartbeat[], written: readonly HeartbeatWrite[]): Promise<void>;
}

export interface HeartbeatWriterOptions {
  store: HeartbeatStore;
  /** Gets each flush's notable routers (downtime, faults, status events), after they are written. */
  resumption: Resumption;
  intervalMs: number;
  /** MISSED_HEARTBEATS: a silence this long may have opened a fault. */
  missedHeartbeats: number;
  flushIntervalMs: number;
  /**
   * How long heartbeats that can change nothing but the liveness row (see `enqueue`) may wait for
   * their flush: at least `flushIntervalMs`. The sweeper's grace covers it (wiring/faults.wiring.ts).
   */
  steadyFlushMs?: number;
  maxBatchRows: number;
  logger: Logger;
  /** Routers whose row is gone: their tokens are revoked and their sockets closed. */
  onGone: (routerIds: string[]) => void;
  /** Heartbeats made with a token the router no longer has (nothing was written): that token is revoked. */
  onReplaced: (replaced: ReplacedToken[]) => void;
  /** Monotonic milliseconds for the flush schedule (default `performance.now`); tests pass their own. */
  now?: () => number;
  /** Heartbeats of {@link HeartbeatWriter.expedite}d routers, once written (epoch ms seen). */
  onExpedited?: (beats: Array<{ routerId: string; seenMs: number }>) => void;
  /**
   * Health beyond up and down (docs/api.md "Health"): heartbeats' health goes to the tracker, and
   * each flush writes what it drains after the liveness rows. Its failures never fail a heartbeat.
   */
  health?: { tracker: HealthTracker; write(flush: HealthFlush): Promise<void> };
}

export interface FlushStats {
  flushes: number;
  rows: number;
  failures: number;
  /** Rows the database refused and the writer dropped (docs/api.md "Routers and heartbeats"). */
  dropped: number;
  lastFlushMs: number;
}

/** A router whose rows keep being refused is logged once per this period, not once per heartbeat. */
const POISON_LOG_PERIOD_MS = 3_600_000;
/** While the database is unavailable, one line per this period (the first failure logs at once). */
const FAILURE_LOG_PERIOD_MS = 60_000;
const MAX_POISON_LOG_ENTRIES = 10_000;

/** What one flush achieved: rows written, the notable and gone routers it read back, rows to retry (the database went away mid-flush). */
interface FlushOutcome {
  notable: AppliedHeartbeat[];
  gone: string[];
  replaced: ReplacedToken[];
  written: HeartbeatWrite[];
  retry: HeartbeatWrite[];
  unavailable: unknown;
}

/**
 * Acknowledged heartbeats wait here, one entry per router (the latest wins), and are written in
 * batches: a heartbeat never waits for its own SQL. A flush runs as soon as `maxBatchRows` routers
 * are pending, else `flushIntervalMs` after the last one when a pending heartbeat may change more
 * than the liveness row (a router this process has not seen beat within the quiet gap: a first
 * heartbeat, a pulse coming back, a fault to complete), else `steadyFlushMs` after it: a router
 * beating on time only moves its `last_seen_at`, and fewer, larger flushes cost the database less
 * per heartbeat (each statement and commit has a fixed cost; docs/scale.md). Flushes never overlap. A failed flush puts its rows back
 * (unless newer ones arrived), and `close()` flushes what is left, so nothing acknowledged is lost
 * on a graceful shutdown.
 */
export class HeartbeatWriter {
  readonly #o: HeartbeatWriterOptions;
  #pending = new Map<string, HeartbeatWrite>();
  /** Latest health values that found no pending write (see `observeHealth`); rare. */
  readonly #healthWaiting = new Map<string, NonNullable<HeartbeatWrite["health"]>>();
  readonly #flusher = coalescingRunner(
    () => this.#flushOnce(),
    () => this.#pending.size > 0,
  );
  #timer: NodeJS.Timeout | undefined;
  #started = false;
  #soon = false;
  /** When the armed timer fires (the writer's `now`), while `#soon`. */
  #dueAt = Number.POSITIVE_INFINITY;
  /** A pending heartbeat may change more than the liveness row: the next flush is not deferred. */
  #eventful = false;
  readonly #steadyFlushMs: number;
  readonly #now: () => number;
  #lastFlushAt = Number.NEGATIVE_INFINITY;
  readonly stats: FlushStats = { flushes: 0, rows: 0, failures: 0, dropped: 0, lastFlushMs: 0 };
  readonly #poisonLoggedAt = new Map<string, number>();
  /** Routers whose next heartbeat a change step waits for, with when it began to (epoch ms). */
  readonly #expedited = new Map<string, number>();
  #failingSince: number | null = null;
  /** Rows the flush running now took from `#pending`: acknowledged, not written yet. */
  #inFlight = 0;
  #failureLoggedAt = Number.NEGATIVE_INFINITY;
  #failuresUnlogged = 0;

  /**
   * A heartbeat this soon after the previous one (with a pulse) can close no downtime (the jitter
   * tolerance) and end no fault (the threshold): the store does not report it back.
   */
  readonly #quietGapMs: number;
  /** Two heartbeats further apart than this have a silence between them (the jitter rule). */
  readonly #onTimeMs: number;

  constructor(options: HeartbeatWriterOptions) {
    this.#o = options;
    this.#now = options.now ?? (() => performance.now());
    this.#steadyFlushMs = Math.max(options.flushIntervalMs, options.steadyFlushMs ?? options.flushIntervalMs);
    this.#onTimeMs = options.intervalMs + jitterToleranceMs(options.intervalMs);
    this.#quietGapMs = Math.min(
      options.intervalMs + jitterToleranceMs(options.intervalMs),
      options.missedHeartbeats * options.intervalMs,
    );
  }

  /** Retries of failed flushes from now on (heartbeats schedule their own flush; see `enqueue`). */
  start(): void {
    this.#started = true;
  }

  /**
   * False while writes fail (a database outage) and acknowledged heartbeats wait here, pending or in
   * the flush running now (the retry that will end the outage has drained `#pending` already).
   */
  get caughtUp(): boolean {
    return this.#failingSince === null || (this.#pending.size === 0 && this.#inFlight === 0);
  }

  get pending(): number {
    return this.#pending.size;
  }

  /** Whether a flush is scheduled (a timer or an immediate is armed); never while nothing is pending. */
  get flushScheduled(): boolean {
    return this.#soon;
  }

  /** When the scheduled flush runs, in the writer's `now` (null: none is scheduled). */
  get flushDueAt(): number | null {
    return this.#soon ? this.#dueAt : null;
  }

  /**
   * Takes an acknowledged heartbeat. `previousSeenMs`: when this process last took a heartbeat of
   * the router (undefined: not that it knows). A heartbeat within the quiet gap of that one is
   * steady: the row it updates had a pulse a moment ago, so the flush reports nothing for it and
   * it may wait `steadyFlushMs`. Any other schedules the flush `flushIntervalMs` after the last.
   */
  enqueue(write: HeartbeatWrite, previousSeenMs?: number): void {
    const expeditedSince = this.#expedited.get(write.routerId);
    const earlier = this.#pending.get(write.routerId);
    // Heartbeats made with two tokens (one replaced) never merge: the newer stands alone.
    if (earlier && earlier.tokenHash === write.tokenHash) mergeInto(earlier, write, this.#onTimeMs);
    else this.#pending.set(write.routerId, write);
    if (
      !this.#eventful &&
      (previousSeenMs === undefined || write.seenAt.getTime() - previousSeenMs >= this.#quietGapMs)
    )
      this.#eventful = true;
    // A change step waits for this one (its guard's confirmation): written now, not with the batch.
    if (
      this.#pending.size >= this.#o.maxBatchRows ||
      (expeditedSince !== undefined && write.seenAt.getTime() >= expeditedSince)
    )
      void this.flush();
    else this.#flushSoon();
  }

  /**
   * A fleet change step waits for the router's next heartbeat (docs/routeros.md "The guard"): one
   * seen from `sinceMs` (epoch ms) on is flushed at once and reported to `onExpedited`. A router
   * that never beats again is forgotten after an hour (guard_seconds is at most that).
   */
  expedite(routerId: string, sinceMs: number): void {
    this.#expedited.set(routerId, sinceMs);
    if (this.#expedited.size % 1024 === 0) {
      for (const [id, since] of this.#expedited) if (since < sinceMs - 3_600_000) this.#expedited.delete(id);
    }
  }

  /**
   * Write once the flush interval (or, while every pending heartbeat is steady, `steadyFlushMs`)
   * has passed since the last flush: a quiet daemon writes a router's first heartbeat within
   * milliseconds, a busy one flushes once per interval with everything pending. An eventful
   * heartbeat brings a deferred flush forward. No timer runs while nothing is pending (a timer
   * that finds nothing to do still wakes the process).
   */
  #flushSoon(): void {
    const dueAt = this.#lastFlushAt + (this.#eventful ? this.#o.flushIntervalMs : this.#steadyFlushMs);
    // Armed already, as early or due now (an immediate, which clearTimeout would not cancel).
    if (this.#soon && (dueAt >= this.#dueAt || this.#dueAt <= this.#now())) return;
    clearTimeout(this.#timer);
    this.#soon = true;
    this.#dueAt = dueAt;
    const wait = Math.max(0, dueAt - this.#now());
    const run = () => {
      this.#soon = false;
      void this.flush();
    };
    if (wait === 0) setImmediate(run);
    else this.#timer = setTimeout(run, wait).unref();
  }

  /**
   * Takes the health a heartbeat reported, after its `enqueue`: the router's latest values go with
   * its pending write (the liveness update writes them: no statement of their own); samples and
   * interface states wait in the tracker for the next flushes. If a flush took the write already
   * (one was due at once), they wait for the router's next flush.
   */
  observeHealth(routerId: string, atMs: number, report: HealthReport): void {
    const values = this.#o.health?.tracker.observe(routerId, atMs, report);
    if (!values) return;
    const health = { atMs, values: { ...values } };
    const pending = this.#pending.get(routerId);
    if (pending) pending.health = health;
    else this.#healthWaiting.set(routerId, health);
  }

  /** Writes what the health tracker has due; a failure puts it back for the next flush. */
  async #writeHealth(): Promise<void> {
    const health = this.#o.health;
    if (!health?.tracker.due) return;
    const flush = health.tracker.drain();
    try {
      await health.write(flush);
    } catch (error) {
      health.tracker.requeue(flush);
      this.#o.logger.warn({ ...errorSummary(error) }, "health samples not written; will retry");
    }
  }

  /** Drops a router's pending heartbeat (it was deleted). */
  forget(routerId: string): void {
    this.#pending.delete(routerId);
    this.#healthWaiting.delete(routerId);
  }

  /** Writes everything pending now; resolves when it is written (or failed and was put back). */
  flush(): Promise<void> {
    return this.#flusher.run();
  }

  async close(): Promise<void> {
    this.#started = false;
    clearTimeout(this.#timer);
    await this.#flusher.current()?.catch(() => {});
    // The periods open now close with the values reported so far.
    this.#o.health?.tracker.closeAll();
    // Final flush; retried once, since a failure here would lose acknowledged heartbeats.
    for (let attempt = 0; attempt < 2 && (this.#pending.size > 0 || this.#o.health?.tracker.due); attempt++)
      await this.flush();
    if (this.#pending.size > 0) {
      this.#o.logger.error({ lost: this.#pending.size }, "could not write acknowledged heartbeats at shutdown");
    }
  }

  async #flushOnce(): Promise<void> {
    if (this.#pending.size === 0) {
      await this.#writeHealth();
      return;
    }
    const batch = [...this.#pending.values()];
    this.#pending = new Map();
    this.#inFlight = batch.length;
    try {
      await this.#flushBatch(batch);
    } finally {
      this.#inFlight = 0;
    }
  }

  async #flushBatch(batch: HeartbeatWrite[]): Promise<void> {
    if (this.#healthWaiting.size > 0)
      for (const write of batch) {
        const waiting = this.#healthWaiting.get(write.routerId);
        if (!waiting) continue;
        this.#healthWaiting.delete(write.routerId);
        if (!write.health || write.health.atMs < waiting.atMs) write.health = waiting;
      }
    this.#eventful = false;
    this.#lastFlushAt = this.#now();
    const started = performance.now();
    const outcome: FlushOutcome = {
      notable: [],
      gone: [],
      replaced: [],
      written: [],
      retry: [],
      unavailable: undefined,
    };
    const size = Math.max(1, this.#o.store.chunkSize);
    for (let i = 0; i < batch.length; i += size) {
      // PGlite runs on this thread: let acks through between statements.
      if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      await this.#applyIsolating(batch.length <= size ? batch : batch.slice(i, i + size), outcome);
    }
    if (outcome.retry.length > 0) {
      this.stats.failures += 1;
      this.#noteUnavailable(outcome.unavailable, outcome.retry.length);
      for (const write of outcome.retry) {
        const newer = this.#pending.get(write.routerId);
        if (!newer) this.#pending.set(write.routerId, write);
        else if (newer.tokenHash === write.tokenHash)
          this.#pending.set(write.routerId, mergeWrites(write, newer, this.#onTimeMs));
      }
      // Rows put back are retried at the flush interval, whatever they were.
      this.#eventful = true;
      if (this.#started) this.#flushSoon();
    } else if (this.#failingSince !== null) {
      this.#o.logger.info(
        { failedForMs: Math.round(performance.now() - this.#failingSince) },
        "heartbeat writes recovered",
      );
      this.#failingSince = null;
    }
    await this.#writeHealth();
    if (outcome.written.length === 0) return;
    if (this.#expedited.size > 0 && this.#o.onExpedited) {
      const beats: Array<{ routerId: string; seenMs: number }> = [];
      for (const write of outcome.written) {
        const since = this.#expedited.get(write.routerId);
        const seenMs = write.seenAt.getTime();
        if (since === undefined || seenMs < since) continue;
        this.#expedited.delete(write.routerId);
        beats.push({ routerId: write.routerId, seenMs });
      }
      if (beats.length > 0) this.#o.onExpedited(beats);
    }
    this.stats.flushes += 1;
    this.stats.rows += outcome.written.length;
    this.stats.lastFlushMs = performance.now() - started;
    observeFlush(batch.length, this.stats.lastFlushMs);
    try {
      await this.#afterApply(outcome);
    } catch (error) {
      this.#o.logger.error({ ...errorSummary(error) }, "recording downtime or completing faults failed");
    }
  }

  /**
   * Writes `rows` (at most one statement's worth). When the database refuses a value, the rows are
   * bisected until the refused row is alone; it is dropped and logged, every other row is written
   * (a few extra statements per poison row, log2 of the batch). When the database is unavailable,
   * the rows (and everything after them) wait for the next flush.
   */
  async #applyIsolating(rows: HeartbeatWrite[], outcome: FlushOutcome): Promise<void> {
    if (outcome.unavailable !== undefined) {
      for (const row of rows) outcome.retry.push(row);
      return;
    }
    try {
      const { notable, gone, replaced } = await this.#o.store.applyHeartbeats(rows, this.#quietGapMs);
      for (const row of notable) outcome.notable.push(row);
      for (const id of gone) outcome.gone.push(id);
      for (const row of replaced) outcome.replaced.push(row);
      for (const row of rows) outcome.written.push(row);
    } catch (error) {
      if (!isRowRefusal(error)) {
        outcome.unavailable = error;
        for (const row of rows) outcome.retry.push(row);
        return;
      }
      const [only] = rows;
      if (rows.length === 1 && only) {
        this.#dropPoison(only, error);
        return;
      }
      const middle = rows.length >>> 1;
      await this.#applyIsolating(rows.slice(0, middle), outcome);
      await this.#applyIsolating(rows.slice(middle), outcome);
    }
  }

  #dropPoison(write: HeartbeatWrite, error: unknown): void {
    this.stats.dropped += 1;
    const now = performance.now();
    const last = this.#poisonLoggedAt.get(write.routerId);
    if (last !== undefined && now - last < POISON_LOG_PERIOD_MS) return;
    if (this.#poisonLoggedAt.size >= MAX_POISON_LOG_ENTRIES) this.#poisonLoggedAt.clear();
    this.#poisonLoggedAt.set(write.routerId, now);
    this.#o.logger.error(
      { routerId: write.routerId, ...errorSummary(error) },
      "heartbeat refused by the database; dropped (other routers' heartbeats are written)",
    );
  }

  /** One line when writes start failing, then one per minute with the count: never one per retry. */
  #noteUnavailable(error: unknown, rows: number): void {
    const now = performance.now();
    this.#failuresUnlogged += 1;
    if (this.#failingSince === null) this.#failingSince = now;
    else if (now - this.#failureLoggedAt < FAILURE_LOG_PERIOD_MS) return;
    this.#failureLoggedAt = now;
    this.#o.logger.error(
      { ...errorSummary(error), rows, failedFlushes: this.#failuresUnlogged },
      "heartbeat writes failing; will retry",
    );
    this.#failuresUnlogged = 0;
  }

  /** Rare work: revocations here, resumption (downtime, faults, status events) in its service. Steady state: nothing. */
  async #afterApply({ written, notable, gone, replaced }: FlushOutcome): Promise<void> {
    if (gone.length > 0) this.#o.onGone(gone);
    if (replaced.length > 0) this.#o.onReplaced(replaced);
    if (notable.length > 0) await this.#o.resumption.resumed(notable, written);
  }
}

/**
 * Two heartbeats of one router in one batch: the newer one's reported fields win, fields it did
 * not report keep the older values, metadata keys merge (docs/api.md "Routers and heartbeats": each
 * heartbeat sets the fields it reports). Writes into `older` (a pending entry only the writer holds):
 * a router beating faster than the flush allocates nothing here.
 */
export const mergeInto = (older: HeartbeatWrite, newer: HeartbeatWrite, onTimeMs?: number): HeartbeatWrite => {
  // What the router did while its heartbeats waited (a database outage): the first one's time and
  // any silence between them (`onTimeMs` apart or more), for the downtime and faults they close.
  const newerFirst = newer.firstSeenAt ?? newer.seenAt;
  if (onTimeMs !== undefined && newerFirst.getTime() - older.seenAt.getTime() > onTimeMs) {
    older.silences = [...(older.silences ?? []), { from: older.seenAt, to: newerFirst }];
  }
  if (newer.silences) older.silences = [...(older.silences ?? []), ...newer.silences];
  older.firstSeenAt = older.firstSeenAt ?? older.seenAt;
  older.seenAt = newer.seenAt;
  older.peer = newer.peer ?? older.peer;
  older.identity = newer.identity ?? older.identity;
  older.serialNumber = newer.serialNumber ?? older.serialNumber;
  older.softwareVersion = newer.softwareVersion ?? older.softwareVersion;
  older.softwareId = newer.softwareId ?? older.softwareId;
  older.model = newer.model ?? older.model;
  older.boardName = newer.boardName ?? older.boardName;
  older.hardwareboard = newer.hardwareboard ?? older.hardwareboard;
  older.uptimeSeconds = newer.uptimeSeconds ?? older.uptimeSeconds;
  older.metadata =
    older.metadata && newer.metadata ? { ...older.metadata, ...newer.metadata } : (newer.metadata ?? older.metadata);
  // The tracker's latest values hold every measure reported so far: the newer ones replace them.
  older.health = newer.health ?? older.health;
  return older;
};

/** `mergeInto` without touching either write (a failed flush's row meeting a newer pending one). */
export const mergeWrites = (older: HeartbeatWrite, newer: HeartbeatWrite, onTimeMs?: number): HeartbeatWrite =>
  mergeInto({ ...older }, newer, onTimeMs);
