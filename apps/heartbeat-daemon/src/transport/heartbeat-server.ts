import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { type Clock, closeHttpServer, listen, serverUrl } from "@fleet/shared";
import type { Logger } from "pino";
import type { HeartbeatTuning } from "../config.ts";
import { HeartbeatIntake } from "../heartbeats/heartbeat-intake.ts";
import type { HeartbeatWriter } from "../heartbeats/heartbeat-writer.ts";
import { heartbeatRoutes } from "./heartbeat-routes.ts";
import { HttpHeartbeats } from "./http-heartbeats.ts";
import type { TokenAuthenticator } from "./token-auth.ts";
import { WsHeartbeats } from "./ws-heartbeats.ts";
import { watchConnections } from "../metrics/prometheus.ts";

export { CLOSE_REVOKED, HEARTBEAT_PATH } from "./ws-heartbeats.ts";

/** Peers get this long to answer the close handshake at shutdown; then the sockets are cut. */
const SHUTDOWN_GRACE_MS = 2_000;

export interface HeartbeatServerOptions {
  host: string;
  port: number;
  /** Several processes on one port (HEARTBEAT_WORKERS): each binds with SO_REUSEPORT. */
  reusePort?: boolean;
  intervalMs: number;
  tuning: HeartbeatTuning;
  auth: TokenAuthenticator;
  writer: HeartbeatWriter;
  clock: Clock;
  logger: Logger;
  isReady: () => Promise<boolean>;
  /** METRICS_TOKEN: bearer required for /metrics when set. */
  metricsToken?: string | undefined;
}

export interface HeartbeatServer {
  url: string;
  port: number;
  connections(): number;
  /** Closes every socket of a router (it was deleted): its heartbeats are refused from now on. */
  closeRouter(routerId: string, reason: string): void;
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
  const intake = new HeartbeatIntake({ writer: o.writer, clock: o.clock });
  const ws = new WsHeartbeats({
    tuning: o.tuning,
    auth: o.auth,
    intake,
    ackFrame: Buffer.from(ack),
    logger: o.logger,
    isClosing,
  });
  const http = new HttpHeartbeats({ tuning: o.tuning, auth: o.auth, intake, ack });

  const server: Server = createServer(
    { keepAliveTimeout: 65_000 },
    heartbeatRoutes({ http, logger: o.logger, isReady: o.isReady, isClosing, metricsToken: o.metricsToken }),
  );
  server.on("upgrade", (req, socket, head) => {
    ws.upgrade(req, socket as Socket, head).catch((error) => {
      o.logger.error({ err: error }, "heartbeat upgrade failed");
      socket.destroy();
    });
  });
  server.on("clientError", (_error, socket) => socket.destroy());

  const port = await listen(server, { host: o.host, port: o.port, reusePort: o.reusePort ?? false });
  const unwatch = watchConnections(() => ws.count);
  return {
    url: serverUrl(o.host, port),
    port,
    connections: () => ws.count,
    closeRouter: (routerId, reason) => ws.closeRouter(routerId, reason),
    close: async () => {
      closing = true;
      unwatch();
      const stopped = closeHttpServer(server, { graceMs: SHUTDOWN_GRACE_MS, onForce: () => ws.terminateAll() });
      ws.closeAll();
      await stopped;
    },
  };
};
