import type { ForwardRecord, ForwardTargetsRepository } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import type { Logger } from "pino";
import type { ForwardLifecycle } from "../jobs/forward-lifecycle.ts";

export interface ExpirySweeperOptions {
  forwards: ForwardTargetsRepository;
  lifecycle: ForwardLifecycle;
  clock: Clock;
  logger: Logger;
  /** Longest sleep between sweeps, whatever the next expiry says (forwards created elsewhere). */
  safetyIntervalMs: number;
  /** Called with the forwards a sweep closed (wakes the job consumer and the relay). */
  onSwept?: (closed: ForwardRecord[]) => void;
}

// setTimeout takes a signed 32-bit delay.
const MAX_TIMER_MS = 2 ** 31 - 1;
const MIN_DELAY_MS = 100;

/**
 * Closes forwards whose `expires_at` has come (Active -> Expired) and queues their removal jobs
 * (docs/api.md "Tunnel agent and entry point"). A timer sleeps until the next expiry, capped by a safety interval, and the
 * first sweep at start closes what expired while no agent ran. `sweep()` is a plain function so
 * tests with a manual clock call it directly.
 */
export class ExpirySweeper {
  readonly #o: ExpirySweeperOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;

  constructor(options: ExpirySweeperOptions) {
    this.#o = options;
  }

  async sweep(): Promise<ForwardRecord[]> {
    const closed = await this.#o.lifecycle.expireDue(this.#o.clock.now());
    if (closed.length > 0) {
      this.#o.logger.info({ forwards: closed.map((f) => f.id) }, "expired forwards closed; removal queued");
      this.#o.onSwept?.(closed);
    }
    return closed;
  }

  /** Sweeps now, then keeps sweeping at each next expiry. */
  async start(): Promise<void> {
    await this.sweep();
    await this.#schedule();
  }

  /** Re-plans the timer (a forward was created that expires sooner than the current plan). */
  async reschedule(): Promise<void> {
    if (!this.#stopped) await this.#schedule();
  }

  async close(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  async #schedule(): Promise<void> {
    const next = await this.#o.forwards.nextExpiry();
    if (this.#stopped) return;
    const untilNext = next ? next.getTime() - this.#o.clock.now().getTime() : Number.POSITIVE_INFINITY;
    // A floor keeps a row another agent is sweeping right now from spinning this timer.
    const delay = Math.max(MIN_DELAY_MS, Math.min(untilNext, this.#o.safetyIntervalMs, MAX_TIMER_MS));
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#running = this.sweep()
        .catch((error: unknown) => this.#o.logger.error({ err: error }, "expiry sweep failed"))
        .then(() => this.#schedule())
        .catch((error: unknown) => this.#o.logger.error({ err: error }, "expiry schedule failed"));
    }, delay);
    this.#timer.unref?.();
  }
}
