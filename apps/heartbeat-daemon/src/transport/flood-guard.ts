import type { Clock } from "@fleet/shared";

/**
 * A token bucket per connection (and per router over HTTP): `burst` frames at once, `perSecond`
 * sustained. A router beats once per interval, so only a broken or hostile peer ever hits it.
 */
export class FloodGuard {
  readonly #burst: number;
  readonly #perMs: number;
  readonly #clock: Clock;
  #tokens: number;
  #last: number;
  /** Frames refused since the last accepted one. */
  refusedInRow = 0;
  /** When the last error frame about flooding went out (one per second at most). */
  lastWarnedAt = Number.NEGATIVE_INFINITY;

  /** `clock`: the daemon's `monotonicClock` (a wall-clock step must not refill or drain the bucket). */
  constructor(burst: number, perSecond: number, clock: Clock) {
    this.#burst = burst;
    this.#perMs = perSecond / 1000;
    this.#clock = clock;
    this.#tokens = burst;
    this.#last = clock.nowMs();
  }

  /** When the last frame came (the clock's ms; taken or refused): the peer was there. */
  get lastFrameAt(): number {
    return this.#last;
  }

  /** True when the frame may be processed. */
  take(): boolean {
    const now = this.#clock.nowMs();
    this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#last) * this.#perMs);
    this.#last = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      this.refusedInRow = 0;
      return true;
    }
    this.refusedInRow += 1;
    return false;
  }

  /** Whole seconds until the next frame would be taken (for `Retry-After`; at least 1). */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((1 - this.#tokens) / this.#perMs / 1000));
  }

  /** True at most once per second: whether to tell the peer it is being throttled. */
  shouldWarn(): boolean {
    const now = this.#clock.nowMs();
    if (now - this.lastWarnedAt < 1_000) return false;
    this.lastWarnedAt = now;
    return true;
  }
}
