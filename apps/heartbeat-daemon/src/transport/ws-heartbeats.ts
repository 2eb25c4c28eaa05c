import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { TokenOwner } from "@fleet/db";
import { bearerToken, type Clock, HEARTBEAT_MAX_FRAME_BYTES } from "@fleet/shared";
import type { Logger } from "pino";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import type { HeartbeatTuning } from "../config.ts";
import { peerAddress } from "../heartbeats/heartbeat-frame.ts";
import type { HeartbeatIntake } from "../heartbeats/heartbeat-intake.ts";
import { ConnectionRegistry } from "./connections.ts";
import { errorFrame } from "./error-frame.ts";
import { FloodGuard } from "./flood-guard.ts";
import { type Liveness, pingVerdict, startPinger } from "./pinger.ts";
import type { TokenAuthenticator } from "./token-auth.ts";
import { countHeartbeat } from "../metrics/prometheus.ts";

export const HEARTBEAT_PATH = "/v1/heartbeat";
/** Close codes: 1008 policy (revoked token, flood), 1001 going away (shutdown), 1009 too big (ws). */
export const CLOSE_REVOKED = 1008;
const CLOSE_GOING_AWAY = 1001;
/** A router may hold this many sockets; a newer one closes the oldest (reconnect storms). */
const MAX_SOCKETS_PER_ROUTER = 3;
/** Frames refused in a row before a flooding peer is disconnected. */
const FLOOD_DISCONNECT_AFTER = 200;
/** A peer that does not read its acks is cut off before its buffer grows without bound. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

export const UNAUTHORIZED =
  "Missing, unknown or revoked heartbeat token: send Authorization: Bearer <heartbeat_token>.";

export interface WsHeartbeatsOptions {
  tuning: HeartbeatTuning;
  auth: TokenAuthenticator;
  intake: HeartbeatIntake;
  /** The ack frame, encoded once: every heartbeat gets the same bytes back. */
  ackFrame: Buffer;
  /** Flood buckets, pongs and pings share this time (`monotonicClock`). */
  clock: Clock;
  logger: Logger;
  isClosing: () => boolean;
}

interface Peer extends Liveness {
  owner: TokenOwner;
  /** The socket under the WebSocket: acks are written to it as whole pre-built frames. */
  socket: Socket;
  address: string | null;
  guard: FloodGuard;
  /** Acks waiting for a write (a token's first heartbeat): later acks go after them, in order. */
  acking?: Promise<void> | undefined;
}

/**
 * A whole unmasked text frame (RFC 6455 5.2: FIN + text opcode, server frames are not masked)
 * around `payload`, built once: the ack every heartbeat gets is written with one `socket.write`,
 * without `ws.send`'s per-message header, options and corked two-buffer write.
 */
export const textFrame = (payload: Buffer): Buffer => {
  if (payload.length >= 126) throw new Error("textFrame is for short control-size payloads");
  return Buffer.concat([Buffer.from([0x81, payload.length]), payload]);
};

/** Answers a refused upgrade over the raw socket (no WebSocket exists yet) and closes it once sent. */
const rejectUpgrade = (socket: Socket, status: number, reason: string, message: string, extra = "") => {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = errorFrame(message);
  socket.once("finish", destroySocket);
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
};

function destroySocket(this: Socket) {
  this.destroy();
}

/**
 * WebSocket heartbeats (docs/api.md "Routers and heartbeats"): the token is checked at the upgrade, before
 * a socket exists; each text frame is one heartbeat, acked at once; flood bounds per socket; dead
 * peers found by the pinger.
 */
export class WsHeartbeats {
  readonly #o: WsHeartbeatsOptions;
  readonly #registry = new ConnectionRegistry(MAX_SOCKETS_PER_ROUTER);
  readonly #peers = new WeakMap<WebSocket, Peer>();
  readonly #wss: WebSocketServer;
  readonly #stopPinger: () => void;
  readonly #tooManyFrames: string;
  readonly #ackWire: Buffer;
  // One set of listener functions for every socket (`this` is the socket): 15,000 sockets per
  // process would otherwise carry four closures each.
  readonly #onSocketError: (this: WebSocket, error: Error) => void;
  readonly #onPong: (this: WebSocket) => void;
  readonly #onClose: (this: WebSocket) => void;
  readonly #onMessage: (this: WebSocket, data: RawData, isBinary: boolean) => void;

  constructor(options: WsHeartbeatsOptions) {
    this.#o = options;
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: HEARTBEAT_MAX_FRAME_BYTES,
      perMessageDeflate: false,
      clientTracking: false,
    });
    this.#ackWire = textFrame(options.ackFrame);
    this.#tooManyFrames = errorFrame(
      `Too many frames: at most ${options.tuning.floodPerSecond} per second are processed; extra frames are dropped.`,
    );
    const peers = this.#peers;
    const registry = this.#registry;
    const logger = options.logger;
    const clock = options.clock;
    const onFrame = (ws: WebSocket, peer: Peer, data: RawData, isBinary: boolean) =>
      this.#onFrame(ws, peer, data, isBinary);
    this.#onSocketError = function (this: WebSocket, error: Error) {
      logger.debug({ err: error, routerId: peers.get(this)?.owner.routerId }, "heartbeat socket error");
    };
    this.#onPong = function (this: WebSocket) {
      const peer = peers.get(this);
      if (peer) peer.pongAt = clock.nowMs();
    };
    this.#onClose = function (this: WebSocket) {
      const peer = peers.get(this);
      if (peer) registry.remove(peer.owner.routerId, this);
    };
    const internal = errorFrame("Internal error: the frame was not processed.");
    this.#onMessage = function (this: WebSocket, data: RawData, isBinary: boolean) {
      const peer = peers.get(this);
      if (!peer) return;
      // docs/api.md "Errors": one frame fails alone. Whatever its handling throws is answered with
      // an error frame on this socket; nothing reaches the emitter (an uncaught throw there would
      // end the process, and every router's connection with it).
      try {
        onFrame(this, peer, data, isBinary);
      } catch (error) {
        logger.error({ err: error, routerId: peer.owner.routerId }, "heartbeat frame failed");
        if (this.readyState === this.OPEN) this.send(internal);
      }
    };
    const periodMs = options.tuning.pingIntervalMs;
    this.#stopPinger = startPinger(this.#registry, periodMs, clock, (ws, now) => {
      const peer = peers.get(ws);
      return peer ? pingVerdict(peer, peer.guard.lastFrameAt, now, periodMs) : undefined;
    });
  }

  get count(): number {
    return this.#registry.count;
  }

  /** The `upgrade` event of the HTTP server. */
  async upgrade(req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    // No closure here may capture `req`: a listener that lives as long as the socket would keep
    // the whole request (headers and all) alive with it.
    socket.on("error", destroySocket);
    const path = (req.url ?? "").split("?")[0];
    if (path !== HEARTBEAT_PATH)
      return rejectUpgrade(socket, 404, "Not Found", `WebSocket heartbeats live at ${HEARTBEAT_PATH}.`);
    if (this.#o.isClosing())
      return rejectUpgrade(socket, 503, "Service Unavailable", "The daemon is shutting down; reconnect shortly.");
    const owner = await this.#o.auth.authenticate(bearerToken(req.headers.authorization));
    if (!owner)
      return rejectUpgrade(socket, 401, "Unauthorized", UNAUTHORIZED, 'WWW-Authenticate: Bearer realm="heartbeat"\r\n');
    if (this.#o.isClosing() || socket.destroyed)
      return rejectUpgrade(socket, 503, "Service Unavailable", "The daemon is shutting down.");
    const address = peerAddress(req.socket.remoteAddress);
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, owner, address, socket));
  }

  /**
   * Closes the sockets of a router (it was deleted, or its token replaced): its heartbeats are
   * refused from now on. With `tokenHash`, only the sockets opened with that token.
   */
  closeRouter(routerId: string, reason: string, tokenHash?: string): void {
    for (const ws of this.#registry.sockets(routerId)) {
      if (tokenHash === undefined || this.#peers.get(ws)?.owner.tokenHash === tokenHash)
        ws.close(CLOSE_REVOKED, reason);
    }
  }

  /** Shutdown, first step: the close handshake (1001) with every peer. */
  closeAll(): void {
    this.#stopPinger();
    for (const ws of this.#registry.all()) ws.close(CLOSE_GOING_AWAY, "daemon shutting down");
  }

  /** Shutdown, after the grace period: cut what is left. */
  terminateAll(): void {
    for (const ws of this.#registry.all()) ws.terminate();
  }

  #accept(ws: WebSocket, owner: TokenOwner, address: string | null, socket: Socket): void {
    const peer: Peer = {
      owner,
      socket,
      address,
      pongAt: Number.NEGATIVE_INFINITY,
      pingedAt: null,
      guard: new FloodGuard(this.#o.tuning.floodBurst, this.#o.tuning.floodPerSecond, this.#o.clock),
    };
    this.#peers.set(ws, peer);
    for (const older of this.#registry.add(owner.routerId, ws))
      older.close(CLOSE_REVOKED, "replaced by a newer connection");
    ws.on("error", this.#onSocketError);
    ws.on("pong", this.#onPong);
    ws.on("close", this.#onClose);
    ws.on("message", this.#onMessage);
  }

  #send(ws: WebSocket, frame: string): void {
    if (ws.readyState === ws.OPEN) ws.send(frame);
  }

  #onFrame(ws: WebSocket, peer: Peer, data: RawData, isBinary: boolean): void {
    if (!peer.guard.take()) {
      if (peer.guard.refusedInRow >= FLOOD_DISCONNECT_AFTER) {
        ws.close(CLOSE_REVOKED, "too many frames");
        return;
      }
      if (peer.guard.shouldWarn()) this.#send(ws, this.#tooManyFrames);
      return;
    }
    if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      ws.terminate();
      return;
    }
    if (isBinary) {
      this.#send(ws, errorFrame("Send heartbeats as JSON text frames."));
      return;
    }
    const text = Array.isArray(data) ? Buffer.concat(data).toString("utf8") : data.toString("utf8");
    const refused = this.#o.intake.accept(peer.owner, text, peer.address);
    if (refused) {
      this.#send(ws, errorFrame(refused.message, refused.errors));
      return;
    }
    countHeartbeat("ws");
    const spending = this.#o.intake.beforeAck(peer.owner);
    if (spending !== undefined || peer.acking !== undefined) {
      this.#ackLater(ws, peer, spending);
      return;
    }
    // Safe beside ws's own writes: without compression its sender writes every frame whole and at
    // once (nothing queued), so frames never interleave; a closing socket gets no ack.
    if (ws.readyState === ws.OPEN) peer.socket.write(this.#ackWire);
  }

  /** The ack once `spending` (a token's first heartbeat spends its adoption URL) and earlier acks are done. */
  #ackLater(ws: WebSocket, peer: Peer, spending: Promise<void> | undefined): void {
    const before = peer.acking;
    const acked = Promise.all([before, spending])
      .then(() => {
        if (ws.readyState === ws.OPEN) peer.socket.write(this.#ackWire);
      })
      .catch(() => undefined)
      .finally(() => {
        if (peer.acking === acked) peer.acking = undefined;
      });
    peer.acking = acked;
  }
}
