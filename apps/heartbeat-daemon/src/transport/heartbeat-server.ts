import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { renderMetrics, type TokenOwner } from "@fleet/db";
import { HEARTBEAT_MAX_FRAME_BYTES } from "@fleet/shared";
import type { Logger } from "pino";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import type { HeartbeatTuning } from "../config.ts";
import { parseHeartbeat, peerAddress, toWrite } from "../heartbeats/heartbeat-frame.ts";
import type { HeartbeatWriter } from "../heartbeats/heartbeat-writer.ts";
import type { Clock } from "@fleet/shared";
import { ConnectionRegistry } from "./connections.ts";
import { FloodGuard } from "./flood-guard.ts";
import { bearerToken, type TokenAuthenticator } from "./token-auth.ts";
import { countHeartbeat, watchConnections } from "../metrics/prometheus.ts";

export const HEARTBEAT_PATH = "/v1/heartbeat";
/** Close codes: 1008 policy (revoked token, flood), 1001 going away (shutdown), 1009 too big (ws). */
export const CLOSE_REVOKED = 1008;
/** A router may hold this many sockets; a newer one closes the oldest (reconnect storms). */
const MAX_SOCKETS_PER_ROUTER = 3;
/** Frames refused in a row before a flooding peer is disconnected. */
const FLOOD_DISCONNECT_AFTER = 200;
/** A peer that does not read its acks is cut off before its buffer grows without bound. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
/** The ping round is cut into slices this far apart. */
const PING_TICK_MS = 50;
// Routers over HTTP get one bucket each; the map is capped so bad traffic cannot grow it forever.
const MAX_HTTP_GUARDS = 200_000;

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

interface Peer {
  owner: TokenOwner;
  address: string | null;
  alive: boolean;
  guard: FloodGuard;
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
};

/** Answers a refused upgrade over the raw socket (no WebSocket exists yet) and closes it once sent. */
const rejectUpgrade = (socket: Socket, status: number, reason: string, message: string, extra = "") => {
  const body = JSON.stringify({ type: "error", message });
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.once("finish", destroySocket);
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
};

function destroySocket(this: Socket) {
  this.destroy();
}

const UNAUTHORIZED = "Missing, unknown or revoked heartbeat token: send Authorization: Bearer <heartbeat_token>.";

/**
 * The heartbeat transport of docs/api.md "Routers and heartbeats": WebSocket at /v1/heartbeat (token checked at the
 * upgrade, before a socket exists), the same JSON over POST /v1/heartbeat, and /healthz.
 */
export const startHeartbeatServer = async (o: HeartbeatServerOptions): Promise<HeartbeatServer> => {
  const ack = JSON.stringify({ type: "ack", interval_ms: o.intervalMs });
  // Encoded once: every heartbeat gets the same bytes back.
  const ackFrame = Buffer.from(ack);
  const registry = new ConnectionRegistry(MAX_SOCKETS_PER_ROUTER);
  const peers = new WeakMap<WebSocket, Peer>();
  const httpGuards = new Map<string, FloodGuard>();
  let closing = false;

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: HEARTBEAT_MAX_FRAME_BYTES,
    perMessageDeflate: false,
    clientTracking: false,
  });

  // One set of listener functions for every socket (`this` is the socket): 15,000 sockets per
  // process would otherwise carry four closures each.
  function onSocketError(this: WebSocket, error: Error) {
    o.logger.debug({ err: error, routerId: peers.get(this)?.owner.routerId }, "heartbeat socket error");
  }
  function onPong(this: WebSocket) {
    const peer = peers.get(this);
    if (peer) peer.alive = true;
  }
  function onClose(this: WebSocket) {
    const peer = peers.get(this);
    if (peer) registry.remove(peer.owner.routerId, this);
  }
  function onMessage(this: WebSocket, data: RawData, isBinary: boolean) {
    const peer = peers.get(this);
    if (peer) onFrame(this, peer, data, isBinary);
  }

  const accept = (ws: WebSocket, owner: TokenOwner, address: string | null) => {
    const peer: Peer = {
      owner,
      address,
      alive: true,
      guard: new FloodGuard(o.tuning.floodBurst, o.tuning.floodPerSecond),
    };
    peers.set(ws, peer);
    for (const older of registry.add(owner.routerId, ws)) older.close(CLOSE_REVOKED, "replaced by a newer connection");
    ws.on("error", onSocketError);
    ws.on("pong", onPong);
    ws.on("close", onClose);
    ws.on("message", onMessage);
  };

  const sendError = (ws: WebSocket, message: string) => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: "error", message }));
  };

  const onFrame = (ws: WebSocket, peer: Peer, data: RawData, isBinary: boolean) => {
    peer.alive = true;
    if (!peer.guard.take()) {
      if (peer.guard.refusedInRow >= FLOOD_DISCONNECT_AFTER) {
        ws.close(CLOSE_REVOKED, "too many frames");
        return;
      }
      if (peer.guard.shouldWarn()) {
        sendError(
          ws,
          `Too many frames: at most ${o.tuning.floodPerSecond} per second are processed; extra frames are dropped.`,
        );
      }
      return;
    }
    if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      ws.terminate();
      return;
    }
    if (isBinary) {
      sendError(ws, "Send heartbeats as JSON text frames.");
      return;
    }
    const parsed = parseHeartbeat(Array.isArray(data) ? Buffer.concat(data).toString("utf8") : data.toString("utf8"));
    if (!parsed.ok) {
      sendError(ws, parsed.message);
      return;
    }
    o.writer.enqueue(toWrite(peer.owner.routerId, parsed.frame, o.clock.now(), peer.address));
    countHeartbeat("ws");
    ws.send(ackFrame, { binary: false });
  };

  const onUpgrade = async (req: IncomingMessage, socket: Socket, head: Buffer) => {
    // No closure here may capture `req`: a listener that lives as long as the socket would keep
    // the whole request (headers and all) alive with it.
    socket.on("error", destroySocket);
    const path = (req.url ?? "").split("?")[0];
    if (path !== HEARTBEAT_PATH)
      return rejectUpgrade(socket, 404, "Not Found", `WebSocket heartbeats live at ${HEARTBEAT_PATH}.`);
    if (closing)
      return rejectUpgrade(socket, 503, "Service Unavailable", "The daemon is shutting down; reconnect shortly.");
    const owner = await o.auth.authenticate(bearerToken(req.headers.authorization));
    if (!owner)
      return rejectUpgrade(socket, 401, "Unauthorized", UNAUTHORIZED, 'WWW-Authenticate: Bearer realm="heartbeat"\r\n');
    if (closing || socket.destroyed)
      return rejectUpgrade(socket, 503, "Service Unavailable", "The daemon is shutting down.");
    const address = peerAddress(req.socket.remoteAddress);
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, owner, address));
  };

  const httpGuard = (routerId: string): FloodGuard => {
    let guard = httpGuards.get(routerId);
    if (!guard) {
      if (httpGuards.size >= MAX_HTTP_GUARDS) httpGuards.clear();
      guard = new FloodGuard(o.tuning.floodBurst, o.tuning.floodPerSecond);
      httpGuards.set(routerId, guard);
    }
    return guard;
  };

  const onHttpHeartbeat = async (req: IncomingMessage, res: ServerResponse) => {
    const owner = await o.auth.authenticate(bearerToken(req.headers.authorization));
    if (!owner) {
      req.resume();
      return json(
        res,
        401,
        { type: "error", message: UNAUTHORIZED },
        { "www-authenticate": 'Bearer realm="heartbeat"' },
      );
    }
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > HEARTBEAT_MAX_FRAME_BYTES) {
      req.resume();
      return json(
        res,
        413,
        { type: "error", message: `Heartbeats are at most ${HEARTBEAT_MAX_FRAME_BYTES} bytes.` },
        { connection: "close" },
      );
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > HEARTBEAT_MAX_FRAME_BYTES) {
        tooBig = true;
        break;
      }
      chunks.push(chunk as Buffer);
    }
    if (tooBig) {
      return json(
        res,
        413,
        { type: "error", message: `Heartbeats are at most ${HEARTBEAT_MAX_FRAME_BYTES} bytes.` },
        { connection: "close" },
      );
    }
    if (!httpGuard(owner.routerId).take()) {
      return json(res, 429, {
        type: "error",
        message: `Too many heartbeats: at most ${o.tuning.floodPerSecond} per second.`,
      });
    }
    const parsed = parseHeartbeat(Buffer.concat(chunks).toString("utf8"));
    if (!parsed.ok) return json(res, parsed.kind === "json" ? 400 : 422, { type: "error", message: parsed.message });
    o.writer.enqueue(toWrite(owner.routerId, parsed.frame, o.clock.now(), peerAddress(req.socket.remoteAddress)));
    countHeartbeat("http");
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(ack) });
    res.end(ack);
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "").split("?")[0];
    const handle = async () => {
      // docs/operations.md "Metrics and probes": liveness without the database, readiness with it.
      if (path === "/livez" && (req.method === "GET" || req.method === "HEAD")) return json(res, 200, { status: "ok" });
      if (path === "/metrics" && (req.method === "GET" || req.method === "HEAD")) {
        const answer = await renderMetrics(req.headers.authorization, o.metricsToken);
        res.writeHead(answer.status, { ...answer.headers, "content-length": Buffer.byteLength(answer.body) });
        return res.end(answer.body);
      }
      if ((path === "/healthz" || path === "/readyz") && (req.method === "GET" || req.method === "HEAD")) {
        const ready = !closing && (await o.isReady().catch(() => false));
        return json(res, ready ? 200 : 503, { status: ready ? "ok" : "unavailable" });
      }
      if (path === HEARTBEAT_PATH) {
        if (req.method !== "POST")
          return json(res, 405, { type: "error", message: "Use POST or a WebSocket upgrade." }, { allow: "POST" });
        if (closing) return json(res, 503, { type: "error", message: "The daemon is shutting down." });
        return onHttpHeartbeat(req, res);
      }
      req.resume();
      return json(res, 404, { type: "error", message: `No route for ${req.method} ${path}.` });
    };
    handle().catch((error) => {
      o.logger.error({ err: error }, "heartbeat request failed");
      if (!res.headersSent) json(res, 500, { type: "error", message: "Internal error." });
      else res.destroy();
    });
  };

  const server: Server = createServer({ keepAliveTimeout: 65_000 }, onRequest);
  server.on("upgrade", (req, socket, head) => {
    onUpgrade(req, socket as Socket, head).catch((error) => {
      o.logger.error({ err: error }, "heartbeat upgrade failed");
      socket.destroy();
    });
  });
  server.on("clientError", (_error, socket) => socket.destroy());

  // Dead peers: a socket that answered neither a ping nor sent a frame for a whole period goes.
  // The sockets are visited in slices spread over the period: pinging 15,000 sockets in one go
  // would stall the event loop (and every ack behind it) for a few hundred milliseconds.
  const pingTickMs = Math.min(PING_TICK_MS, o.tuning.pingIntervalMs);
  const ticksPerPeriod = Math.max(1, Math.floor(o.tuning.pingIntervalMs / pingTickMs));
  let cursor = registry.all();
  let perTick = 1;
  const pinger = setInterval(() => {
    for (let visited = 0; visited < perTick; visited++) {
      const next = cursor.next();
      if (next.done) {
        // A new round: size the slices so this round takes one period.
        cursor = registry.all();
        perTick = Math.max(1, Math.ceil(registry.count / ticksPerPeriod));
        return;
      }
      const ws = next.value;
      const peer = peers.get(ws);
      if (!peer) continue;
      if (!peer.alive) {
        ws.terminate();
        continue;
      }
      peer.alive = false;
      ws.ping();
    }
  }, pingTickMs);
  pinger.unref();

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(
      { host: o.host, port: o.port, reusePort: o.reusePort ?? false, exclusive: o.reusePort ? true : undefined },
      () => {
        server.off("error", reject);
        resolve();
      },
    );
  });
  const port = (server.address() as AddressInfo).port;
  const unwatch = watchConnections(() => registry.count);
  const host = o.host === "0.0.0.0" || o.host === "::" ? "127.0.0.1" : o.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;

  return {
    url,
    port,
    connections: () => registry.count,
    closeRouter: (routerId, reason) => {
      for (const ws of registry.sockets(routerId)) ws.close(CLOSE_REVOKED, reason);
    },
    close: async () => {
      closing = true;
      unwatch();
      clearInterval(pinger);
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const ws of registry.all()) ws.close(1001, "daemon shutting down");
      server.closeIdleConnections();
      // Peers get a moment to answer the close handshake; then the sockets are cut.
      const force = setTimeout(() => {
        for (const ws of registry.all()) ws.terminate();
        server.closeAllConnections();
      }, 2_000);
      force.unref();
      await stopped;
      clearTimeout(force);
    },
  };
};
