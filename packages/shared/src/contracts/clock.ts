/**
 * Injectable time source: production uses the system clock, tests move time by hand. The one shape
 * every component takes (option `clock`); `nowMs` is the same instant as `now`, without allocating a
 * Date on hot paths (rate limits, token caches, flood buckets).
 */
export interface Clock {
  now(): Date;
  /** Milliseconds since the epoch: `now().getTime()`. */
  nowMs(): number;
}

export const systemClock: Clock = { now: () => new Date(), nowMs: () => Date.now() };

/**
 * Elapsed time that never jumps: a wall-clock step (NTP, a suspended VM) must not refill a flood
 * bucket, expire a cached token or time out a connection early. Epoch-based, so `now()` reads as a
 * date, but it drifts from the wall clock over a long process life: use it for durations only.
 */
export const monotonicClock: Clock = {
  now: () => new Date(performance.timeOrigin + performance.now()),
  nowMs: () => performance.timeOrigin + performance.now(),
};

/** A clock tests set and advance; never sleeps. */
export class ManualClock implements Clock {
  #ms: number;
  constructor(start: Date | number = Date.UTC(2026, 10, 21, 12, 0, 0)) {
    this.#ms = typeof start === "number" ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  nowMs(): number {
    return this.#ms;
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
  set(date: Date | number): void {
    this.#ms = typeof date === "number" ? date : date.getTime();
  }
}
