import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { TrustedProxies } from "@fleet/shared";
import type { Logger } from "pino";
import { addressKey } from "../trpc/rate-limit.ts";

/**
 * How the API port guards itself (docs/operations.md "API port connections", CONTRACT 12): the
 * numbers the contract fixes; tests shrink the timeouts.
 */
export interface ApiConnectionTuning {
  /** A connection that has not sent a complete request (headers and body) within this is closed. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Open connections one source address outside TRUST_PROXY may hold; more are closed at once. */
  connectionsPerAddress: number;
}

export const API_CONNECTION_TUNING: ApiConnectionTuning = {
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  connectionsPerAddress: 256,
};

/**
 * Node checks request deadlines once per this (its default, 30 s, would let a silent connection
 * live 40 s); a walk over the open requests in C++, cheap even four times a second.
 */
const MAX_CHECK_INTERVAL_MS = 250;
/** At the cap, one warning per this period, not one per refused connection. */
const REFUSAL_LOG_PERIOD_MS = 60_000;

/** The HTTP server options that bound slow and idle connections. */
export const apiServerOptions = (tuning: ApiConnectionTuning) => ({
  keepAliveTimeout: tuning.keepAliveTimeoutMs,
  // Node adds 1 s to the idle socket's timeout by default; the contract's 5 s is the deadline, and
  // clients stop reusing a connection before the `Keep-Alive: timeout=5` it is told.
  keepAliveTimeoutBuffer: 0,
  headersTimeout: tuning.requestTimeoutMs,
  requestTimeout: tuning.requestTimeoutMs,
  connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, Math.max(10, tuning.requestTimeoutMs / 5)),
});

const REFUSAL_BODY = (cap: number) =>
  JSON.stringify({ message: `Too many open connections from this address: at most ${cap}.`, code: "rate_limited" });

/**
 * Caps the open connections of each source address (IPv6 by its /56, as the rate limits count it).
 * The peer is the address: a proxy named by TRUST_PROXY carries many clients, so its connections
 * are not counted. One over the cap gets a 429 with `Retry-After` and is closed at once.
 */
export const limitConnectionsPerAddress = (
  server: Server,
  options: { perAddress: number; trusted: TrustedProxies; logger: Logger },
): { open(address: string): number } => {
  const open = new Map<string, number>();
  const body = REFUSAL_BODY(options.perAddress);
  const refusal = Buffer.from(
    `HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  let loggedAt = Number.NEGATIVE_INFINITY;
  // The HTTP server's own listener runs only for admitted connections: a refused one never gets a
  // parser, so not one request of it is read or handled.
  const httpListeners = server.listeners("connection") as Array<(socket: Socket) => void>;
  server.removeAllListeners("connection");
  server.on("connection", (socket: Socket) => {
    const peer = socket.remoteAddress;
    const key = peer === undefined || options.trusted.contains(peer) ? undefined : addressKey(peer);
    if (key !== undefined) {
      const held = open.get(key) ?? 0;
      if (held >= options.perAddress) {
        socket.on("error", () => {});
        socket.end(refusal, () => socket.destroy());
        const now = Date.now();
        if (now - loggedAt >= REFUSAL_LOG_PERIOD_MS) {
          loggedAt = now;
          options.logger.warn(
            { perAddress: options.perAddress },
            "an address reached its connection cap: more are refused",
          );
        }
        return;
      }
      open.set(key, held + 1);
      socket.once("close", () => {
        const left = (open.get(key) ?? 1) - 1;
        if (left <= 0) open.delete(key);
        else open.set(key, left);
      });
    }
    for (const listener of httpListeners) listener.call(server, socket);
  });
  return { open: (address) => open.get(addressKey(address)) ?? 0 };
};
