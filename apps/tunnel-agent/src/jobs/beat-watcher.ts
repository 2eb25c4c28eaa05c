import type { Logger } from "pino";

export interface BeatWatcherOptions {
  /** The latest heartbeat (epoch ms) of each router that has one (packages/db ChangeExecutorRepository). */
  lastSeen(routerIds: readonly string[]): Promise<Map<string, number>>;
  /** Period of the one read that serves every waiting step. */
  checkMs: number;
  logger: Logger;
}

interface Waiter {
  afterMs: number;
  resolve: (beat: boolean) => void;
  timer: NodeJS.Timeout;
}

/**
 * Waits for routers' heartbeats (docs/routeros.md "The guard"): a change step that has run its
 * script waits here for the router's next heartbeat instead of a delayed job, and every waiting
 * step of the agent shares one read of `router_liveness` each `checkMs`, so confirming a wave of
 * routers costs one query a period, not one job round trip per router.
 */
export class BeatWatcher {
  readonly #o: BeatWatcherOptions;
  readonly #waiting = new Map<string, Set<Waiter>>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: BeatWatcherOptions) {
    this.#o = options;
  }

  /** True once the router has beaten after `afterMs` (epoch ms); false after `timeoutMs` without. */
  wait(routerId: string, afterMs: number, timeoutMs: number): Promise<boolean> {
    if (this.#closed || timeoutMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiters = this.#waiting.get(routerId) ?? new Set<Waiter>();
      const waiter: Waiter = {
        afterMs,
        resolve,
        timer: setTimeout(() => this.#settle(routerId, waiter, false), timeoutMs),
      };
      waiters.add(waiter);
      this.#waiting.set(routerId, waiters);
      this.#schedule();
    });
  }

  /** Every waiter answers false at once (the agent stops). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const [routerId, waiters] of this.#waiting) for (const w of waiters) this.#settle(routerId, w, false);
  }

  #settle(routerId: string, waiter: Waiter, beat: boolean): void {
    clearTimeout(waiter.timer);
    const waiters = this.#waiting.get(routerId);
    if (!waiters?.delete(waiter)) return;
    if (waiters.size === 0) this.#waiting.delete(routerId);
    waiter.resolve(beat);
  }

  #schedule(): void {
    if (this.#timer || this.#closed || this.#waiting.size === 0) return;
    this.#timer = setTimeout(() => void this.#check(), this.#o.checkMs);
  }

  async #check(): Promise<void> {
    try {
      const seen = await this.#o.lastSeen([...this.#waiting.keys()]);
      for (const [routerId, at] of seen) {
        for (const w of [...(this.#waiting.get(routerId) ?? [])]) if (at > w.afterMs) this.#settle(routerId, w, true);
      }
    } catch (error) {
      // A failed read is tried again next period; each waiter still ends at its timeout.
      this.#o.logger.warn({ err: error }, "reading routers' heartbeats failed");
    }
    this.#timer = undefined;
    this.#schedule();
  }
}
