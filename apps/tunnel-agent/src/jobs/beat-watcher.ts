import type { StatusFeed } from "@fleet/shared";
import type { Logger } from "pino";

export interface BeatWatcherOptions {
  /** The latest heartbeat (epoch ms) of each router that has one (packages/db ChangeExecutorRepository). */
  lastSeen(routerIds: readonly string[]): Promise<Map<string, number>>;
  /** Period of the one read that serves every waiting step. */
  checkMs: number;
  logger: Logger;
  /**
   * The heartbeat daemons' signals (StatusFeed): waiting routers are announced (`change.awaiting`)
   * so their heartbeat is written at once and heard here (`router.beat`) without waiting for a read.
   */
  feed?: Pick<StatusFeed, "signal" | "onSignal">;
}

interface Waiter {
  afterMs: number;
  resolve: (beat: boolean) => void;
  timer: NodeJS.Timeout;
}

/**
 * Waits for routers' heartbeats (docs/routeros.md "The guard"): a change step that has run its
 * script waits here for the router's next heartbeat instead of a delayed job. The daemons signal
 * the heartbeat as soon as it is written (`feed`); every waiting step of the agent also shares one
 * read of `router_liveness` each `checkMs`, the backstop (a lost signal, a daemon without them).
 */
export class BeatWatcher {
  readonly #o: BeatWatcherOptions;
  readonly #waiting = new Map<string, Set<Waiter>>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Routers to announce as awaited, sent together at the end of the tick. */
  #announce = new Set<string>();
  readonly #off: (() => void) | undefined;

  constructor(options: BeatWatcherOptions) {
    this.#o = options;
    this.#off = options.feed?.onSignal("router.beat", (item) => {
      const at = item.lastIndexOf("@");
      const seenMs = Number(item.slice(at + 1));
      if (at > 0 && Number.isFinite(seenMs)) this.#seen(item.slice(0, at), seenMs);
    });
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
      this.#announceSoon(routerId);
    });
  }

  #announceSoon(routerId: string): void {
    const feed = this.#o.feed;
    if (!feed) return;
    if (this.#announce.size === 0) {
      setImmediate(() => {
        const ids = [...this.#announce];
        this.#announce = new Set();
        feed.signal("change.awaiting", ids).catch((error: unknown) => {
          // The read each period still hears the heartbeat, a little later.
          this.#o.logger.warn({ err: error }, "announcing awaited heartbeats failed");
        });
      });
    }
    this.#announce.add(routerId);
  }

  #seen(routerId: string, atMs: number): void {
    for (const w of [...(this.#waiting.get(routerId) ?? [])]) if (atMs > w.afterMs) this.#settle(routerId, w, true);
  }

  /** Every waiter answers false at once (the agent stops). */
  close(): void {
    this.#closed = true;
    this.#off?.();
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
      for (const [routerId, at] of seen) this.#seen(routerId, at);
    } catch (error) {
      // A failed read is tried again next period; each waiter still ends at its timeout.
      this.#o.logger.warn({ err: error }, "reading routers' heartbeats failed");
    }
    this.#timer = undefined;
    this.#schedule();
  }
}
