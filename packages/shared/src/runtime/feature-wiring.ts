/** What a composition root keeps of a wired feature: how to stop it. */
export interface Closable {
  close(): Promise<void>;
}

/**
 * The features a composition root wired (`startApi`, `startTunnelAgent`, `startHeartbeat`), and
 * what each started after all were wired, so that one `close` stops them in reverse order: first
 * what was started (schedules, timers), then the features, the last wired first. A root calls it
 * on shutdown and on a failed start alike, so a failed start closes exactly what was already wired.
 */
export class FeatureWiring<F extends Closable = Closable> {
  readonly #features: F[] = [];
  readonly #stops: Array<() => Promise<void>> = [];
  readonly #last: () => Promise<void>;
  #closing: Promise<void> | undefined;

  /** `last`: what the root itself opened for every feature (a job engine, the status feed), closed after them. */
  constructor(last: () => Promise<void> = async () => {}) {
    this.#last = last;
  }

  /** Keeps a wired feature and hands it back. */
  add<G extends F>(feature: G): G {
    this.#features.push(feature);
    return feature;
  }

  /** Something started once the features were wired; `stop` runs before any feature closes. */
  started(stop: () => Promise<void>): void {
    this.#stops.push(stop);
  }

  /** The features in the order they were wired. */
  get features(): readonly F[] {
    return this.#features;
  }

  /** Once: a second call (shutdown after a failed start, a repeated signal) gets the first call's promise. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      while (this.#stops.length > 0) await this.#stops.pop()?.();
      while (this.#features.length > 0) await this.#features.pop()?.close();
      await this.#last();
    })();
    return this.#closing;
  }
}
