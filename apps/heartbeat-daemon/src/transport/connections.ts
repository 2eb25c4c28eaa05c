import type { WebSocket } from "ws";

/**
 * Open sockets per router, so a deleted router's sockets can be closed and reconnects bounded.
 * Nearly every router holds one socket, so the value is a small array rather than a Set.
 */
export class ConnectionRegistry {
  readonly #byRouter = new Map<string, WebSocket[]>();
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
    const list = this.#byRouter.get(routerId);
    this.#count += 1;
    if (!list) {
      this.#byRouter.set(routerId, [ws]);
      return [];
    }
    list.push(ws);
    // Oldest first: the newest connection wins.
    return list.length > this.#maxPerRouter ? list.slice(0, list.length - this.#maxPerRouter) : [];
  }

  remove(routerId: string, ws: WebSocket): void {
    const list = this.#byRouter.get(routerId);
    const at = list?.indexOf(ws) ?? -1;
    if (!list || at < 0) return;
    list.splice(at, 1);
    this.#count -= 1;
    if (list.length === 0) this.#byRouter.delete(routerId);
  }

  sockets(routerId: string): WebSocket[] {
    return [...(this.#byRouter.get(routerId) ?? [])];
  }

  *all(): IterableIterator<WebSocket> {
    for (const list of this.#byRouter.values()) yield* list;
  }
}
