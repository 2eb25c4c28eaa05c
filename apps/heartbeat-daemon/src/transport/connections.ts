import type { WebSocket } from "ws";

/** Open sockets per router, so a deleted router's sockets can be closed and reconnects bounded. */
export class ConnectionRegistry {
  readonly #byRouter = new Map<string, Set<WebSocket>>();
  #count = 0;
  readonly #maxPerRouter: number;

  constructor(maxPerRouter: number) {
    this.#maxPerRouter = maxPerRouter;
  }

  get count(): number {
    return this.#count;
  }

  /** Registers a socket; returns older sockets of the same router beyond the cap (to be closed). */
  add(routerId: string, ws: WebSocket): WebSocket[] {
    let set = this.#byRouter.get(routerId);
    if (!set) {
      set = new Set();
      this.#byRouter.set(routerId, set);
    }
    set.add(ws);
    this.#count += 1;
    const excess: WebSocket[] = [];
    // Sets iterate in insertion order: the oldest come first.
    for (const older of set) {
      if (set.size - excess.length <= this.#maxPerRouter) break;
      if (older !== ws) excess.push(older);
    }
    return excess;
  }

  remove(routerId: string, ws: WebSocket): void {
    const set = this.#byRouter.get(routerId);
    if (!set?.delete(ws)) return;
    this.#count -= 1;
    if (set.size === 0) this.#byRouter.delete(routerId);
  }

  sockets(routerId: string): WebSocket[] {
    return [...(this.#byRouter.get(routerId) ?? [])];
  }

  *all(): IterableIterator<WebSocket> {
    for (const set of this.#byRouter.values()) yield* set;
  }
}
