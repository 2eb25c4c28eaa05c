/**
 * Runs the CPU-heavy start of change steps (login, backups, guard, script) a few at a time, first
 * come first served (issue 39). A wave's steps arrive together: started all at once they share the
 * agent's one event loop round-robin, and each one's start ends only when nearly all of them have
 * been served. In turn, the k-th waits only for the k-1 ahead of it: the same work and the same end
 * of the wave, but most steps done sooner. A slot is held until the work ends or for `holdMs`,
 * whichever comes first: a router slow to answer never holds the others back for longer.
 */
export class StartQueue {
  readonly #limit: number;
  readonly #holdMs: number;
  readonly #waiting: Array<() => void> = [];
  #running = 0;

  constructor(limit: number, holdMs: number) {
    this.#limit = Math.max(1, limit);
    this.#holdMs = holdMs;
  }

  /** Steps waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#running < this.#limit) this.#running++;
    // A slot handed over by the one that frees it (the count stays), in the order of arrival.
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    let held = true;
    const free = () => {
      if (!held) return;
      held = false;
      clearTimeout(timer);
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    };
    // Never what keeps a stopping agent alive: the work itself is.
    const timer = setTimeout(free, this.#holdMs).unref();
    try {
      return await work();
    } finally {
      free();
    }
  }
}
