/** Answers one batch of keys: a key missing from the map has no value. Throwing fails the batch. */
export type LoadBatch<K, V> = (keys: readonly K[]) => Promise<Map<K, V>>;

export interface BatcherOptions<K, V> {
  load: LoadBatch<K, V>;
  /** Keys are gathered this long before a batch starts (0: until the next event-loop turn). */
  gatherMs?: number;
  /** Batches running at once; keys asked meanwhile gather into the next, larger batch. */
  maxInFlight?: number;
  /** Keys per `load` call; a larger batch makes several calls, one after the other. */
  maxBatch?: number;
  /** Wait on a timer (`setTimeout(gatherMs)`, unref'd) even at 0: background work nobody waits for. */
  timer?: boolean;
}

/** Called with the key's value, `undefined` when it has none or its batch failed. */
export type Waiter<V> = (value: V | undefined) => void;

/**
 * Gathers keys asked within one event-loop turn (or `gatherMs`) into one `load` call, with at most
 * `maxInFlight` batches running at once. A key asked twice before its batch runs is loaded once.
 */
export class Batcher<K, V> {
  readonly #load: LoadBatch<K, V>;
  readonly #gatherMs: number;
  readonly #maxInFlight: number;
  readonly #maxBatch: number;
  readonly #timer: boolean;
  #pending = new Map<K, Array<Waiter<V>>>();
  #scheduled = false;
  #inFlight = 0;

  constructor(options: BatcherOptions<K, V>) {
    this.#load = options.load;
    this.#gatherMs = options.gatherMs ?? 0;
    this.#maxInFlight = options.maxInFlight ?? Number.POSITIVE_INFINITY;
    this.#maxBatch = options.maxBatch ?? Number.POSITIVE_INFINITY;
    this.#timer = options.timer ?? false;
  }

  /** Asks for `key`; `done` (if any) gets its value once its batch has run. No promise is made. */
  request(key: K, done?: Waiter<V>): void {
    const waiters = this.#pending.get(key);
    if (waiters) {
      if (done) waiters.push(done);
    } else this.#pending.set(key, done ? [done] : []);
    this.#schedule();
  }

  /** `request` as a promise. */
  get(key: K): Promise<V | undefined> {
    return new Promise((resolve) => this.request(key, resolve));
  }

  /** Batches running now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight) return;
    this.#scheduled = true;
    const run = () => {
      this.#scheduled = false;
      void this.#run();
    };
    if (this.#timer) setTimeout(run, this.#gatherMs).unref();
    else if (this.#gatherMs > 0) setTimeout(run, this.#gatherMs);
    else setImmediate(run);
  }

  async #run(): Promise<void> {
    const batch = this.#pending;
    if (batch.size === 0) return;
    this.#pending = new Map();
    this.#inFlight += 1;
    try {
      const keys = [...batch.keys()];
      for (let i = 0; i < keys.length; i += this.#maxBatch) {
        const part = keys.slice(i, i + this.#maxBatch);
        let values: Map<K, V> | undefined;
        try {
          values = await this.#load(part);
        } catch {
          values = undefined; // The batch failed: its keys have no value this time (not kept).
        }
        for (const key of part) {
          const value = values?.get(key);
          for (const done of batch.get(key) ?? []) done(value);
        }
      }
    } finally {
      this.#inFlight -= 1;
      if (this.#pending.size > 0) this.#schedule();
    }
  }
}
