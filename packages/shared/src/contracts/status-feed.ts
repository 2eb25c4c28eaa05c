import type { TRouterStatusEvent } from "../schemas/router.schema.ts";

/**
 * Live router status changes (has_pulse flips, faults opened and completed, routers removed),
 * published by whoever causes them and heard by every process: the heartbeat daemon drops a
 * removed router's sockets, the API pushes changes to `routers.onStatus` subscribers. Delivery is
 * best effort (at most once); readers re-read state after reconnecting.
 */
export interface StatusFeed {
  publish(events: readonly TRouterStatusEvent[]): Promise<void>;
  /** Returns the unsubscribe function. */
  subscribe(listener: (event: TRouterStatusEvent) => void): () => void;
  /**
   * Routers whose heartbeat token was replaced (re-adoption, docs/routeros.md "Adoption"): every
   * heartbeat daemon process forgets the old token and closes the sockets opened with it. Kept
   * apart from the status events: it is not a change `routers.onStatus` subscribers are told of.
   */
  publishTokenReplaced(routerIds: readonly string[]): Promise<void>;
  /** Returns the unsubscribe function. */
  onTokenReplaced(listener: (routerId: string) => void): () => void;
  /** Sends a {@link TFeedSignal}'s items to every process (best effort, like the rest). */
  signal(kind: TFeedSignal, items: readonly string[]): Promise<void>;
  /** Returns the unsubscribe function. */
  onSignal(kind: TFeedSignal, listener: (item: string) => void): () => void;
}

/**
 * Signals between the tunnel agent and the heartbeat daemons for fleet changes (docs/routeros.md
 * "The guard"): `change.awaiting` (items: router ids) says change steps wait for these routers'
 * next heartbeat, so a daemon writes it at once instead of with its batch; `router.beat` (items:
 * `<router id>@<epoch ms seen>`) says such a heartbeat is written, so the step need not poll for it.
 */
export type TFeedSignal = "change.awaiting" | "router.beat";

/** The in-process feed: PGlite and the all-in-one process, where everything shares one process. */
export class MemoryStatusFeed implements StatusFeed {
  readonly #listeners = new Set<(event: TRouterStatusEvent) => void>();
  readonly #tokenListeners = new Set<(routerId: string) => void>();

  async publish(events: readonly TRouterStatusEvent[]): Promise<void> {
    this.deliver(events);
  }

  /** Hands events to local listeners; a throwing listener does not stop the others. */
  deliver(events: readonly TRouterStatusEvent[]): void {
    for (const event of events) {
      for (const listener of this.#listeners) {
        try {
          listener(event);
        } catch {
          // A listener's failure is its own problem.
        }
      }
    }
  }

  subscribe(listener: (event: TRouterStatusEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  async publishTokenReplaced(routerIds: readonly string[]): Promise<void> {
    this.deliverTokenReplaced(routerIds);
  }

  /** Hands replaced-token notices to local listeners; a throwing listener does not stop the others. */
  deliverTokenReplaced(routerIds: readonly string[]): void {
    for (const routerId of routerIds) {
      for (const listener of this.#tokenListeners) {
        try {
          listener(routerId);
        } catch {
          // A listener's failure is its own problem.
        }
      }
    }
  }

  onTokenReplaced(listener: (routerId: string) => void): () => void {
    this.#tokenListeners.add(listener);
    return () => {
      this.#tokenListeners.delete(listener);
    };
  }

  readonly #signals = new Map<TFeedSignal, Set<(item: string) => void>>();

  async signal(kind: TFeedSignal, items: readonly string[]): Promise<void> {
    this.deliverSignal(kind, items);
  }

  /** Hands signal items to local listeners; a throwing listener does not stop the others. */
  deliverSignal(kind: TFeedSignal, items: readonly string[]): void {
    const listeners = this.#signals.get(kind);
    if (!listeners) return;
    for (const item of items) {
      for (const listener of listeners) {
        try {
          listener(item);
        } catch {
          // A listener's failure is its own problem.
        }
      }
    }
  }

  onSignal(kind: TFeedSignal, listener: (item: string) => void): () => void {
    const listeners = this.#signals.get(kind) ?? new Set();
    listeners.add(listener);
    this.#signals.set(kind, listeners);
    return () => {
      listeners.delete(listener);
    };
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }
}
