import type { RateLimitHits } from "@fleet/db";
import { AppError, type Clock, systemClock } from "@fleet/shared";
import { RATE_LIMIT_WINDOW_MS } from "./rate-limit.ts";

/** Where every API process adds its counts (RateLimitCountersRepository on the database). */
export interface SharedCounterStore {
  add(batch: readonly RateLimitHits[]): Promise<Map<string, number>>;
  prune(beforeMs: number): Promise<void>;
}

export interface SharedRateLimiterOptions {
  limit: number;
  /** What is counted, in the 429 message ("credential", "address without a valid credential"). */
  subject: string;
  store: SharedCounterStore;
  /** The windows' time (the API's `wallClock`); default: the system clock. */
  clock?: Clock;
  /** How often local counts are added to the store. */
  flushMs?: number;
  /** Called when a flush fails (the limiter then counts locally until the store answers again). */
  onError?: (error: unknown) => void;
}

interface Bucket {
  windowStartMs: number;
  /** Requests this process counted in the window. */
  local: number;
  /** Of those, not yet added to the store. */
  unflushed: number;
  /** Requests of the other processes in the window, as of the last answer of the store. */
  remote: number;
}

/** Buckets kept at most; a flood of distinct keys cannot grow memory without bound. */
const BUCKET_LIMIT = 100_000;
/** The last tenth of a limit (at least the last eight) is counted in the store before each request is admitted. */
const NEAR_FRACTION = 0.1;
/** Unshared counts of a bucket stay below (what is left of its limit) / this. */
const UNSHARED_FRACTION = 8;

/**
 * A fixed one-minute window per bucket (a credential or a source address), counted across all API
 * processes (docs/api.md "Rate limits"). A request costs a map update: each process counts locally
 * and adds its counts to the shared store every `flushMs` (one statement for all buckets), reading
 * back the totals of every process. Far from the limit a process decides on its own count plus the
 * others' as last read, and it never holds more unshared counts of a bucket than an eighth of what
 * is left of its limit (more waits for a flush); in the last tenth of the limit each request is
 * added to the store first and decided on the fresh total; once the known total reaches the limit
 * requests are refused without asking the store. So N processes admit at most the limit plus the
 * unshared counts of the others, under (N - 1) / 8 of the limit; a credential far below its limit
 * costs a map update per request and one shared statement per flush period.
 */
export class SharedRateLimiter {
  readonly #o: Required<Omit<SharedRateLimiterOptions, "onError">> & Pick<SharedRateLimiterOptions, "onError">;
  readonly #buckets = new Map<string, Bucket>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #lastPruneMs = 0;
  #closed = false;

  constructor(options: SharedRateLimiterOptions) {
    this.#o = { clock: systemClock, flushMs: 250, ...options };
  }

  /** Counts one request of `key`; throws `rate_limited` (429 with Retry-After) over the limit. */
  async hit(key: string): Promise<void> {
    const now = this.#o.clock.nowMs();
    const bucket = this.#bucket(key, now);
    const { limit } = this.#o;
    if (bucket.local + bucket.remote >= limit) throw this.#refusal(bucket, now);
    const left = limit - bucket.local - bucket.remote;
    if (left <= Math.max(limit * NEAR_FRACTION, UNSHARED_FRACTION)) {
      // Near the limit: the request is counted in the store first and decided on the total of
      // every process, this one included.
      bucket.local++;
      bucket.unflushed++;
      await this.flush();
      if (bucket.local + bucket.remote > limit) throw this.#refusal(bucket, now);
      return;
    }
    // Counts not yet in the store are what other processes cannot see: at most an eighth of what
    // is left of the limit may wait for the timer, so N processes overshoot by less than N/8 of it.
    if (bucket.unflushed >= Math.floor(left / UNSHARED_FRACTION)) await this.flush();
    if (bucket.local + bucket.remote >= limit) throw this.#refusal(bucket, now);
    bucket.local++;
    bucket.unflushed++;
    this.#schedule();
  }

  /** True when `key` is at its limit as far as this process knows (no I/O). */
  isOver(key: string): boolean {
    const bucket = this.#buckets.get(key);
    if (!bucket || bucket.windowStartMs !== windowStart(this.#o.clock.nowMs())) return false;
    return bucket.local + bucket.remote >= this.#o.limit;
  }

  /** A `rate_limited` error for `key` as it stands (for a refusal decided elsewhere). */
  refusal(key: string): AppError {
    const now = this.#o.clock.nowMs();
    return this.#refusal(this.#bucket(key, now), now);
  }

  /** Adds the local counts to the store and reads back every process's totals. */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    const batch: Array<{ key: string; bucket: Bucket; windowStartMs: number; hits: number }> = [];
    for (const [key, bucket] of this.#buckets) {
      if (bucket.unflushed === 0) continue;
      batch.push({ key, bucket, windowStartMs: bucket.windowStartMs, hits: bucket.unflushed });
    }
    if (batch.length === 0) return;
    for (const entry of batch) entry.bucket.unflushed = 0;
    this.#flushing = (async () => {
      try {
        const totals = await this.#o.store.add(
          batch.map((entry) => ({ bucket: entry.key, windowStartMs: entry.windowStartMs, hits: entry.hits })),
        );
        for (const entry of batch) {
          const total = totals.get(`${entry.key}@${entry.windowStartMs}`);
          // Still the same window: the others' share is the total minus what this process added.
          if (total !== undefined && entry.bucket.windowStartMs === entry.windowStartMs) {
            entry.bucket.remote = Math.max(0, total - (entry.bucket.local - entry.bucket.unflushed));
          }
        }
        const now = this.#o.clock.nowMs();
        if (now - this.#lastPruneMs > RATE_LIMIT_WINDOW_MS) {
          this.#lastPruneMs = now;
          await this.#o.store.prune(windowStart(now) - RATE_LIMIT_WINDOW_MS);
        }
      } catch (error) {
        // Counted again next time; meanwhile this process decides on what it knows.
        for (const entry of batch) entry.bucket.unflushed += entry.hits;
        this.#o.onError?.(error);
      } finally {
        this.#flushing = undefined;
      }
    })();
    await this.#flushing;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }

  #bucket(key: string, now: number): Bucket {
    const start = windowStart(now);
    let bucket = this.#buckets.get(key);
    if (!bucket || bucket.windowStartMs !== start) {
      if (!bucket && this.#buckets.size >= BUCKET_LIMIT) this.#evictIdle(start);
      bucket = { windowStartMs: start, local: 0, unflushed: 0, remote: 0 };
      this.#buckets.set(key, bucket);
    }
    return bucket;
  }

  /** Drops buckets of past windows (their counts are in the store or no longer matter). */
  #evictIdle(currentStart: number): void {
    for (const [key, bucket] of this.#buckets) {
      if (bucket.windowStartMs !== currentStart && bucket.unflushed === 0) this.#buckets.delete(key);
    }
  }

  #schedule(): void {
    if (this.#timer || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
      this.#evictIdle(windowStart(this.#o.clock.nowMs()));
    }, this.#o.flushMs);
    this.#timer.unref();
  }

  #refusal(bucket: Bucket, now: number): AppError {
    const seconds = Math.max(1, Math.ceil((bucket.windowStartMs + RATE_LIMIT_WINDOW_MS - now) / 1000));
    return new AppError(
      "rate_limited",
      `Too many requests for this ${this.#o.subject}: at most ${this.#o.limit} per minute. Retry in ${seconds} s.`,
      { retryAfterSeconds: seconds },
    );
  }
}

const windowStart = (now: number): number => Math.floor(now / RATE_LIMIT_WINDOW_MS) * RATE_LIMIT_WINDOW_MS;
