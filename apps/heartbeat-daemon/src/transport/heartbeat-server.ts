import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { type Clock, closeHttpServer, listen, serverUrl } from "@fleet/shared";
import type { Logger } from "pino";
import type { HeartbeatTuning } from "../config.ts";
import { HeartbeatIntake } from "../heartbeats/heartbeat-intake.ts";
import type { HeartbeatWriter } from "../heartbeats/heartbeat-writer.ts";
import type { WireguardBinder } from "../heartbeats/wireguard-binder.ts";
import type { AdoptionSpender } from "../heartbeats/adoption-spender.ts";
import { heartbeatRoutes } from "./heartbeat-routes.ts";
import { HttpHeartbeats } from "./http-heartbeats.ts";
import type { TokenAuthenticator } from "./token-auth.ts";
import { ConnectionGuard, type ConnectionGuardStats } from "./connection-guard.ts";
import { WsHeartbeats } from "./ws-heartbeats.ts";
import { watchConnections } from "../metrics/prometheus.ts";

export { CLOSE_REVOKED, HEARTBEAT_PATH } from "./ws-heartbeats.ts";

/** Peers get this long to answer the close handshake at shutdown; then the sockets are cut. */
const SHUTDOWN_GRACE_MS = 2_000;
/**
 * HTTP keep-alive for routers posting through a load balancer's connection pool: an idle pooled
 * connection that proved a token is kept longer than the balancers' usual 60 s idle timeout, so the
 * balancer (never the daemon) closes it and no request races a close. Connections that proved no
 * token get far less (ConnectionGuard). Headers and a whole heartbeat (16 KiB at most) must arrive
 * within `tuning.requestTimeoutMs` of a request's first byte, which bounds slow clients; Node checks
 * that once per CHECK_INTERVAL_MS (its default, 30 s, would let a slow request live 40 s).
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;
const MAX_CHECK_INTERVAL_MS = 1_000;
/**
 * After a restart every router of a process reconnects within a second or two. Node's default
 * accept queue (511) overflows then, and the kernel drops the SYNs it cannot queue: those routers
 * retry after 1, 3, 7, 15 s (TCP's backoff) and the last ones are back many seconds late. The kernel
 * caps this at net.core.somaxconn (4096 on current Linux).
 */
const LISTEN_BACKLOG = 65_535;
/** At the connection limit, one warning per this period, not one per refused connection. */
const DROP_LOG_PERIOD_MS = 60_000;

export interface HeartbeatServerOptions {
  host: string;
  port: number;
  /** Several processes on one port (HEARTBEAT_WORKERS): each binds with SO_REUSEPORT. */
  reusePort?: boolean;
  intervalMs: number;
  tuning: HeartbeatTuning;
  auth: TokenAuthenticator;
  writer: HeartbeatWriter;
  /** Binds WireGuard keys reported by heartbeats (docs/routeros.md "The management tunnel"). */
  binder?: WireguardBinder;
  /** Spends a router's adoption URL with its token's first heartbeat, before the ack (docs/routeros.md "Adoption"). */
  spender?: AdoptionSpender;
  /** HEALTH_PING_TARGET: a ping naming another target is refused (docs/api.md "Health"). */
  pingTarget?: string | undefined;
  /** Time of the heartbeats written (the daemon's clock). */
  clock: Clock;
  /** Elapsed time of the transport: timeouts, token cache, flood buckets, pings (`monotonicClock`). */
  transportClock: Clock;
  logger: Logger;
  isReady: () => Promise<boolean>;
  /** METRICS_TOKEN: bearer required for /metrics when set. */
  metricsToken?: string | undefined;
}

export interface HeartbeatServer {
  url: string;
  port: number;
  connections(): number;
  /** Connections open and waiting for a request, and how many the guard closed (transport/connection-guard.ts). */
  guard(): ConnectionGuardStats;
  /** Closes a router's sockets (it was deleted, or its token replaced; with `tokenHash` only those opened with it). */
  closeRouter(routerId: string, reason: string, tokenHash?: string): void;
  close(): Promise<void>;
}

/**
 * The heartbeat transport of docs/api.md "Routers and heartbeats", assembled: one HTTP server whose upgrades go
 * to the WebSocket side (`ws-heartbeats.ts`) and whose requests go to the routes (`heartbeat-routes.ts`:
 * `POST /v1/heartbeat` in `http-heartbeats.ts`, `/healthz`). Both sides feed one intake (parser and
 * batched writer).
 */
export const startHeartbeatServer = async (o: HeartbeatServerOptions): Promise<HeartbeatServer> => {
  const ack = JSON.stringify({ type: "ack", interval_ms: o.intervalMs });
  let closing = false;
  const isClosing = () => closing;
  const intake = new HeartbeatIntake({
    writer: o.writer,
    clock: o.clock,
    logger: o.logger,
    ...(o.binder ? { binder: o.binder } : {}),
    ...(o.spender ? { spender: o.spender } : {}),
    ...(o.pingTarget !== undefined ? { pingTarget: o.pingTarget } : {}),
  });
  const ws = new WsHeartbeats({
    tuning: o.tuning,
    auth: o.auth,
    intake,
    ackFrame: Buffer.from(ack),
    clock: o.transportClock,
    logger: o.logger,
    isClosing,
  });
  let dropLoggedAt = Number.NEGATIVE_INFINITY;
  const guard = new ConnectionGuard({
    maxConnections: o.tuning.maxConnections,
    requestTimeoutMs: o.tuning.requestTimeoutMs,
    idleTimeoutMs: o.tuning.unauthenticatedIdleMs,
    perAddress: o.tuning.waitingPerAddress,
    evictAfterMs: o.tuning.evictWaitingAfterMs,
    clock: o.transportClock,
    onFull: () => {
      const now = o.transportClock.nowMs();
      if (now - dropLoggedAt < DROP_LOG_PERIOD_MS) return;
      dropLoggedAt = now;
      o.logger.warn(
        { maxConnections: o.tuning.maxConnections },
        "connection limit of this process reached: new connections are closed (routers retry); add daemon processes",
      );
    },
  });

  const http = new HttpHeartbeats({
    tuning: o.tuning,
    auth: o.auth,
    intake,
    ack,
    connections: guard,
    clock: o.transportClock,
  });

  const server: Server = createServer(
    {
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      headersTimeout: o.tuning.requestTimeoutMs,
      requestTimeout: o.tuning.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, Math.max(10, o.tuning.requestTimeoutMs / 5)),
      // Routers send tiny bodies and a handful of headers; Nagle would only add latency to acks.
      noDelay: true,
    },
    heartbeatRoutes({
      http,
      logger: o.logger,
      isReady: o.isReady,
      isClosing,
      metricsToken: o.metricsToken,
      connections: guard,
    }),
  );
  // Connections that proved no token are bounded by the guard (docs/api.md "Routers and heartbeats").
  server.on("connection", (socket: Socket) => guard.accept(socket));
  server.on("upgrade", (req, socket, head) => {
    guard.requested(socket as Socket);
    ws.upgrade(req, socket as Socket, head).catch((error) => {
      o.logger.error({ err: error }, "heartbeat upgrade failed");
      socket.destroy();
    });
  });
  server.on("clientError", (_error, socket) => socket.destroy());

  const port = await listen(server, {
    host: o.host,
    port: o.port,
    reusePort: o.reusePort ?? false,
    backlog: LISTEN_BACKLOG,
  });
  const unwatch = watchConnections(() => ws.count);
  return {
    url: serverUrl(o.host, port),
    port,
    connections: () => ws.count,
    guard: () => guard.snapshot(),
    closeRouter: (routerId, reason, tokenHash) => ws.closeRouter(routerId, reason, tokenHash),
    close: async () => {
      closing = true;
      unwatch();
      guard.close();
      const stopped = closeHttpServer(server, { graceMs: SHUTDOWN_GRACE_MS, onForce: () => ws.terminateAll() });
      ws.closeAll();
      await stopped;
    },
  };
};
