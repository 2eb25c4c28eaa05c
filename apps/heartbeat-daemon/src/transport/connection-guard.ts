import type { Socket } from "node:net";
import type { Clock } from "@fleet/shared";

/**
 * The heartbeat port serves routers first (docs/api.md "Routers and heartbeats"): connections that
 * have not proved a token cannot take the room routers need.
 *
 * A connection is *waiting* from its accept until its first request's headers are complete, and
 * again after each answer to a request that was not an authenticated heartbeat (a probe,
 * `/metrics`, a refused token): then it must start its next request soon or go. Waiting connections
 * are the only ones the guard may close; a connection whose request is being handled, or that
 * proved a token, is never touched (Node's own `requestTimeout` bounds a slow body, and an
 * authenticated keep-alive connection idles up to the server's keep-alive timeout).
 *
 * - A waiting connection is closed `requestTimeoutMs` after its accept (no complete request) or
 *   `idleTimeoutMs` after an unauthenticated answer (idle keep-alive).
 * - One source address keeps at most `perAddress` connections that have waited `evictAfterMs` or
 *   longer; the oldest beyond that are closed. Younger ones are never closed for this: a reconnect
 *   storm through one load balancer's address accepts thousands at once, each with its request a
 *   moment away.
 * - At `maxConnections` a new connection takes the place of the connection that has waited longest
 *   (a router's request comes within milliseconds of its connection, so the longest waiting is the
 *   idlest); only when none waits (every connection is a router's or busy with a request) is the new
 *   one closed at accept, and the router retries.
 *
 * All of this runs from one timer while something waits (none otherwise) and on accept; nothing
 * here runs per heartbeat but, while some connection waits, one `Map.delete` when a request arrives.
 */
/** Connections one sweep closes at most before it lets other work run. */
const SWEEP_CLOSES = 200;

export interface ConnectionGuardOptions {
  maxConnections: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
  perAddress: number;
  evictAfterMs: number;
  /** The daemon's `monotonicClock` (deadlines must not move with a wall-clock step); tests pass a `ManualClock`. */
  clock: Clock;
  /** Called (at most once per call to accept) when a new connection is closed for want of room. */
  onFull?: () => void;
}

interface Waiting {
  address: string;
  /** When it started waiting (its place in the eviction order). */
  since: number;
  deadline: number;
}

export interface ConnectionGuardStats {
  /** Connections open now (waiting or not). */
  open: number;
  /** Connections waiting for a request now. */
  waiting: number;
  /** Closed because their deadline passed (no request in time, or idle without a token). */
  timedOut: number;
  /** Closed because their address held too many old waiting connections, or to make room. */
  evicted: number;
  /** New connections closed at accept: the process was full of routers and young connections. */
  refused: number;
}

export class ConnectionGuard {
  readonly #o: ConnectionGuardOptions;
  /** Insertion order = order of `since`: the first entry is the one waiting longest. */
  readonly #waiting = new Map<Socket, Waiting>();
  #open = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #periodMs: number;
  readonly stats: ConnectionGuardStats = { open: 0, waiting: 0, timedOut: 0, evicted: 0, refused: 0 };
  readonly #onClose: (this: Socket) => void;

  constructor(options: ConnectionGuardOptions) {
    this.#o = options;
    this.#periodMs = Math.max(
      20,
      Math.min(1_000, options.idleTimeoutMs / 5, options.requestTimeoutMs / 5, options.evictAfterMs / 2),
    );
    const waiting = this.#waiting;
    const guard = this;
    // One listener function for every socket (`this` is the socket), not a closure per socket.
    this.#onClose = function (this: Socket) {
      guard.#open -= 1;
      waiting.delete(this);
    };
  }

  get open(): number {
    return this.#open;
  }

  get waiting(): number {
    return this.#waiting.size;
  }

  /** The server's `connection` event. Returns false when the socket was closed at once (no room). */
  accept(socket: Socket): boolean {
    if (this.#open >= this.#o.maxConnections && !this.#evictOldest()) {
      this.stats.refused += 1;
      this.#o.onFull?.();
      socket.destroy();
      return false;
    }
    this.#open += 1;
    // `on`, not `once`: 'close' comes once anyway, and `once` would wrap the listener per socket.
    socket.on("close", this.#onClose);
    const now = this.#o.clock.nowMs();
    this.#wait(socket, now, now + this.#o.requestTimeoutMs);
    return true;
  }

  /** A request's headers are complete (a `request` or `upgrade` event): no longer waiting. */
  requested(socket: Socket): void {
    // Nearly always nothing waits (a router's connections proved a token): no lookup per heartbeat then.
    if (this.#waiting.size !== 0) this.#waiting.delete(socket);
  }

  /**
   * An answer to a request that proved no token went out: the connection may stay for another
   * request, but only `idleTimeoutMs`.
   */
  answeredWithoutToken(socket: Socket): void {
    if (socket.destroyed) return;
    const now = this.#o.clock.nowMs();
    this.#waiting.delete(socket);
    this.#wait(socket, now, now + this.#o.idleTimeoutMs);
  }

  /** Counts for tests and metrics. */
  snapshot(): ConnectionGuardStats {
    return { ...this.stats, open: this.#open, waiting: this.#waiting.size };
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#waiting.clear();
  }

  #wait(socket: Socket, since: number, deadline: number): void {
    this.#waiting.set(socket, { address: socket.remoteAddress ?? "", since, deadline });
    this.#schedule();
  }

  /** Closes the connection that has waited longest, if any waits. */
  #evictOldest(): boolean {
    for (const socket of this.#waiting.keys()) {
      this.#drop(socket);
      this.stats.evicted += 1;
      return true;
    }
    return false;
  }

  #drop(socket: Socket): void {
    this.#waiting.delete(socket);
    socket.destroy();
  }

  #schedule(soon = false): void {
    if (this.#timer !== undefined || this.#waiting.size === 0) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#schedule(this.sweep());
      },
      soon ? 0 : this.#periodMs,
    );
    this.#timer.unref();
  }

  /**
   * Closes waiting connections past their deadline, then each address's oldest beyond `perAddress`,
   * at most SWEEP_CLOSES per call (thousands closed in one go would stall the acks); returns true
   * when it stopped there and should run again at once.
   */
  sweep(now = this.#o.clock.nowMs()): boolean {
    let budget = SWEEP_CLOSES;
    const old = new Map<string, number>();
    for (const [socket, entry] of this.#waiting) {
      if (entry.deadline <= now) {
        if (budget === 0) return true;
        budget -= 1;
        this.#drop(socket);
        this.stats.timedOut += 1;
      } else if (now - entry.since >= this.#o.evictAfterMs) {
        old.set(entry.address, (old.get(entry.address) ?? 0) + 1);
      }
    }
    const excess = new Map<string, number>();
    for (const [address, count] of old) if (count > this.#o.perAddress) excess.set(address, count - this.#o.perAddress);
    if (excess.size === 0) return false;
    // Oldest first: the map's order.
    for (const [socket, entry] of this.#waiting) {
      if (now - entry.since < this.#o.evictAfterMs) break;
      const left = excess.get(entry.address);
      if (left === undefined || left === 0) continue;
      if (budget === 0) return true;
      budget -= 1;
      excess.set(entry.address, left - 1);
      this.#drop(socket);
      this.stats.evicted += 1;
    }
    return false;
  }
}
