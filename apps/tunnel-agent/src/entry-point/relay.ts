import net from "node:net";
import type { RelayTarget } from "@fleet/db";
import { ipv4InCidr, listen } from "@fleet/shared";
import type { Logger } from "pino";
import type { RelayConnectionEvents } from "./connection-log.ts";
import { parseProxyHeader, V1_MAX_LENGTH, V2_MAX_LENGTH } from "./proxy-protocol.ts";
import { countRelayBytes, countRelayConnection } from "../metrics/agent-metrics.ts";

export interface EntryPointRelayOptions {
  /** ENTRY_POINT_BIND. */
  bind: string;
  /** ENTRY_POINT_PROXY_PROTOCOL: read a PROXY v1/v2 header first and check its source instead. */
  proxyProtocol: boolean;
  logger: Logger;
  /** How long a client may take to send its PROXY header. */
  headerTimeoutMs?: number;
  /** How long connecting to the router's tunnel address may take. */
  connectTimeoutMs?: number;
  /** First wait before binding a busy port again; doubles per attempt up to `bindRetryMaxMs`. */
  bindRetryBaseMs?: number;
  bindRetryMaxMs?: number;
  /** Audit hook: accepted connections when they end, refused ones at once (see connection-log.ts). */
  events?: RelayConnectionEvents | undefined;
}

/** Counters per forward, for tests and operators. */
export interface RelayStats {
  accepted: number;
  refused: number;
}

/** How long a half-closed pair may wait for its other side to finish. */
const LINGER_MS = 30_000;

interface Pair {
  client: net.Socket;
  upstream: net.Socket | undefined;
  /**
   * Set when admitted: the audited source, start (performance.now()) and the bytes of the PROXY
   * header, which are the relay's, not the client's stream (not counted in `bytes_in`).
   */
  admitted?: { source: string; startedAt: number; headerBytes: number };
  /** The upstream connection to the router was established: only such connections are audited. */
  reached?: boolean;
}

/** Bytes of the client's own stream the relay read (the PROXY header excluded). */
const clientBytesIn = (pair: Pair): number => Math.max(0, pair.client.bytesRead - (pair.admitted?.headerBytes ?? 0));

interface Listener {
  target: RelayTarget;
  server: net.Server;
  pairs: Set<Pair>;
  stats: RelayStats;
  listening: boolean;
  /** Failed binds so far (a busy port is retried with backoff, announced once). */
  bindFailures: number;
  retryTimer: NodeJS.Timeout | undefined;
}

/**
 * The entry point (docs/api.md "Tunnel agent and entry point"): one listener per active forward on `bind:port`. A client is
 * checked against the forward's `allow_only_cidr` before anything else happens; a refused client is
 * destroyed at once and no upstream connection is made, so not a byte reaches the router. Allowed
 * clients are piped both ways to `tunnel_ip:port` with backpressure (`pipe` pauses the faster side)
 * and half-close passed through. When a forward leaves the active set, its listener and every
 * connection it carries are closed.
 */
export class EntryPointRelay {
  readonly #o: Required<Omit<EntryPointRelayOptions, "events">>;
  readonly #events: RelayConnectionEvents | undefined;
  readonly #listeners = new Map<string, Listener>();
  #stopped = false;

  constructor(options: EntryPointRelayOptions) {
    this.#o = {
      headerTimeoutMs: 5_000,
      connectTimeoutMs: 10_000,
      bindRetryBaseMs: 250,
      bindRetryMaxMs: 30_000,
      ...options,
    };
    this.#events = options.events;
  }

  /** Makes the listeners match `targets`: opens new ones, closes removed ones, retargets moved routers. */
  async sync(targets: readonly RelayTarget[]): Promise<void> {
    if (this.#stopped) return;
    const wanted = new Map(targets.map((t) => [t.id, t]));
    for (const [id, listener] of this.#listeners) {
      const target = wanted.get(id);
      if (!target || target.port !== listener.target.port || target.allowOnlyCidr !== listener.target.allowOnlyCidr) {
        this.#closeListener(id, listener);
      } else {
        // A router that moved to another tunnel address: new connections go there.
        listener.target = target;
      }
    }
    await Promise.all(
      [...wanted.values()].filter((t) => !this.#listeners.has(t.id)).map((target) => this.#open(target)),
    );
  }

  /** Forward ids with a bound listener, and their ports. */
  listening(): Array<{ id: string; port: number }> {
    return [...this.#listeners.values()]
      .filter((l) => l.listening)
      .map((l) => ({ id: l.target.id, port: l.target.port }));
  }

  /** Forwards whose port was busy and is being retried, with the failed binds so far. */
  pendingBinds(): Array<{ id: string; port: number; failures: number }> {
    return [...this.#listeners.values()]
      .filter((l) => !l.listening && l.bindFailures > 0)
      .map((l) => ({ id: l.target.id, port: l.target.port, failures: l.bindFailures }));
  }

  /** Open relayed connections (all forwards, or one). */
  connections(forwardId?: string): number {
    if (forwardId) return this.#listeners.get(forwardId)?.pairs.size ?? 0;
    let n = 0;
    for (const listener of this.#listeners.values()) n += listener.pairs.size;
    return n;
  }

  stats(forwardId: string): RelayStats | undefined {
    const stats = this.#listeners.get(forwardId)?.stats;
    return stats ? { ...stats } : undefined;
  }

  async close(): Promise<void> {
    this.#stopped = true;
    for (const [id, listener] of this.#listeners) this.#closeListener(id, listener);
  }

  async #open(target: RelayTarget): Promise<void> {
    const listener: Listener = {
      target,
      server: this.#newServer(),
      pairs: new Set(),
      stats: { accepted: 0, refused: 0 },
      listening: false,
      bindFailures: 0,
      retryTimer: undefined,
    };
    this.#listeners.set(target.id, listener);
    await this.#bind(listener);
  }

  #newServer(): net.Server {
    return net.createServer({ allowHalfOpen: true, pauseOnConnect: true });
  }

  /**
   * Binds the forward's port. A busy port (another process, a socket still in TIME_WAIT's grip,
   * an outgoing connection on it) is retried with backoff while the forward stays active: one
   * warning when it is first found busy, one line when it finally binds, nothing per attempt.
   */
  async #bind(listener: Listener): Promise<void> {
    const { target } = listener;
    const server = listener.bindFailures === 0 ? listener.server : this.#newServer();
    listener.server = server;
    server.on("connection", (socket) => this.#accept(listener, socket));
    try {
      await listen(server, { host: this.#o.bind, port: target.port, exclusive: true });
    } catch (error) {
      server.close();
      if (this.#listeners.get(target.id) !== listener || this.#stopped) return;
      listener.bindFailures++;
      const delay = Math.min(
        this.#o.bindRetryMaxMs,
        this.#o.bindRetryBaseMs * 2 ** Math.min(listener.bindFailures - 1, 20),
      );
      if (listener.bindFailures === 1) {
        this.#o.logger.warn(
          { forwardId: target.id, port: target.port, code: (error as NodeJS.ErrnoException).code },
          "entry-point port busy; retrying with backoff until it is free",
        );
      }
      listener.retryTimer = setTimeout(() => {
        listener.retryTimer = undefined;
        if (this.#listeners.get(target.id) === listener && !this.#stopped) void this.#bind(listener);
      }, delay);
      listener.retryTimer.unref();
      return;
    }
    listener.listening = true;
    server.on("error", (error) =>
      this.#o.logger.error({ err: error, forwardId: target.id }, "entry-point listener failed"),
    );
    if (this.#listeners.get(target.id) !== listener) {
      server.close();
      return;
    }
    if (listener.bindFailures > 0) {
      this.#o.logger.info(
        { forwardId: target.id, port: target.port, attempts: listener.bindFailures + 1 },
        "entry-point port bound after it was busy",
      );
    }
  }

  #closeListener(id: string, listener: Listener): void {
    this.#listeners.delete(id);
    clearTimeout(listener.retryTimer);
    listener.server.close();
    for (const pair of listener.pairs) this.#endPair(listener, pair);
  }

  #accept(listener: Listener, client: net.Socket): void {
    const pair: Pair = { client, upstream: undefined };
    listener.pairs.add(pair);
    client.on("error", () => this.#endPair(listener, pair));
    client.on("close", () => this.#sideClosed(listener, pair));
    if (!this.#o.proxyProtocol) {
      this.#admit(listener, pair, client.remoteAddress ?? "", Buffer.alloc(0), 0);
      return;
    }
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => this.#refuse(listener, pair, "no PROXY header in time"), this.#o.headerTimeoutMs);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const result = parseProxyHeader(buffered);
      if (result.status === "incomplete") {
        if (buffered.length > Math.max(V1_MAX_LENGTH, V2_MAX_LENGTH))
          this.#refuse(listener, pair, "PROXY header too long");
        return;
      }
      clearTimeout(timer);
      client.off("data", onData);
      client.pause();
      if (result.status === "invalid") {
        this.#refuse(listener, pair, result.reason);
        return;
      }
      if (result.header.command !== "proxy") {
        this.#refuse(listener, pair, "PROXY header carries no client address");
        return;
      }
      this.#admit(listener, pair, result.header.source.address, buffered.subarray(result.length), result.length);
    };
    client.on("close", () => clearTimeout(timer));
    client.on("data", onData);
    // pauseOnConnect leaves the socket explicitly paused; a 'data' listener alone does not resume it.
    client.resume();
  }

  #refuse(listener: Listener, pair: Pair, reason: string, source?: string): void {
    listener.stats.refused++;
    countRelayConnection(false);
    this.#o.logger.info({ forwardId: listener.target.id, source, reason }, "entry-point connection refused");
    this.#events?.denied({ forwardId: listener.target.id, sourceIp: source, reason });
    this.#endPair(listener, pair);
  }

  #admit(listener: Listener, pair: Pair, source: string, early: Buffer, headerBytes: number): void {
    const { client } = pair;
    if (!ipv4InCidr(source, listener.target.allowOnlyCidr)) {
      this.#refuse(listener, pair, "source outside allow_only_cidr", source);
      return;
    }
    listener.stats.accepted++;
    countRelayConnection(true);
    pair.admitted = { source, startedAt: performance.now(), headerBytes };
    const { tunnelIp, port, targetPort } = listener.target;
    const upstream = net.connect({ host: tunnelIp, port: targetPort ?? port, allowHalfOpen: true });
    pair.upstream = upstream;
    upstream.setTimeout(this.#o.connectTimeoutMs, () => this.#endPair(listener, pair));
    upstream.on("error", () => this.#endPair(listener, pair));
    upstream.on("close", () => this.#sideClosed(listener, pair));
    upstream.once("connect", () => {
      pair.reached = true;
      upstream.setTimeout(0);
      // Management sessions (SSH, web UIs) are chatty: send small writes at once.
      upstream.setNoDelay(true);
      client.setNoDelay(true);
      // Bytes that arrived in the same packet as the PROXY header belong to the client's stream.
      if (early.length > 0) upstream.write(early);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  /**
   * One side finished both directions. The other side is ended, not destroyed: it may still be
   * flushing the last bytes it was handed. The pair is forgotten once both sides are closed.
   */
  #sideClosed(listener: Listener, pair: Pair): void {
    const { client, upstream } = pair;
    if (!upstream) {
      this.#endPair(listener, pair);
      return;
    }
    if (client.closed && upstream.closed) {
      if (listener.pairs.delete(pair)) {
        countRelayBytes(clientBytesIn(pair), client.bytesWritten);
        this.#ended(listener, pair);
      }
      return;
    }
    if (!client.closed) client.end();
    if (!upstream.closed) upstream.end();
    // A peer that never closes its half must not pin the pair forever.
    setTimeout(() => this.#endPair(listener, pair), LINGER_MS).unref();
  }

  /** Forced end (refusal, error, forward closed): both sockets go at once. */
  #endPair(listener: Listener, pair: Pair): void {
    if (!listener.pairs.delete(pair)) return;
    if (pair.upstream) countRelayBytes(clientBytesIn(pair), pair.client.bytesWritten);
    pair.client.destroy();
    pair.upstream?.destroy();
    this.#ended(listener, pair);
  }

  /**
   * An admitted connection is gone: report it once, with the bytes each way. Only a connection
   * that reached the router is audited (docs/api.md "Audit log and webhooks"); one whose upstream
   * never connected (router down, rule missing) is logged, since nothing was forwarded.
   */
  #ended(listener: Listener, pair: Pair): void {
    if (!pair.admitted) return;
    if (!pair.reached) {
      this.#o.logger.warn(
        { forwardId: listener.target.id, source: pair.admitted.source, router: listener.target.tunnelIp },
        "entry-point connection admitted but the router could not be reached; nothing forwarded",
      );
      return;
    }
    if (!this.#events) return;
    this.#events.accepted({
      forwardId: listener.target.id,
      sourceIp: pair.admitted.source,
      bytesIn: clientBytesIn(pair),
      bytesOut: pair.client.bytesWritten,
      durationMs: performance.now() - pair.admitted.startedAt,
    });
  }
}
