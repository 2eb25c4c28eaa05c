import type { IncomingMessage, ServerResponse } from "node:http";
import { bearerToken, type Clock, HEARTBEAT_MAX_FRAME_BYTES } from "@fleet/shared";
import type { HeartbeatTuning } from "../config.ts";
import { peerAddress } from "../heartbeats/heartbeat-frame.ts";
import type { HeartbeatIntake } from "../heartbeats/heartbeat-intake.ts";
import type { ConnectionGuard } from "./connection-guard.ts";
import { errorFrame } from "./error-frame.ts";
import { FloodGuard } from "./flood-guard.ts";
import { sendJson } from "./http-reply.ts";
import type { CachedOwner, TokenAuthenticator } from "./token-auth.ts";
import { UNAUTHORIZED } from "./ws-heartbeats.ts";
import { countHeartbeat } from "../metrics/prometheus.ts";

/** Answers a request whose handling threw (a 500, or the socket closed once headers went out). */
export type Fail = (res: ServerResponse, error: unknown) => void;

export interface HttpHeartbeatsOptions {
  tuning: HeartbeatTuning;
  auth: TokenAuthenticator;
  intake: HeartbeatIntake;
  /** The ack body, encoded once. */
  ack: string;
  /** Told when a request proved no token (transport/connection-guard.ts). */
  connections: Pick<ConnectionGuard, "answeredWithoutToken">;
  /** The flood buckets' time (`monotonicClock`). */
  clock: Clock;
}

/** JSON, or no content type at all (a bare `/tool fetch`); anything else is 415 (docs/api.md "Errors"). */
const isJsonContentType = (value: string | undefined): boolean => {
  if (value === undefined || value.startsWith("application/json")) return true;
  const type = value.split(";")[0]?.trim().toLowerCase() ?? "";
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
};

/**
 * `POST /v1/heartbeat` (docs/api.md "Routers and heartbeats"): the real routers' path (RouterOS `/tool fetch`
 * cannot hold a WebSocket), so it gets the socket path's care: the same token cache, parser and
 * batched writer, the same ack, keep-alive connections (see heartbeat-server.ts), and a flood bound
 * per router answered 429 with `Retry-After`.
 */
export class HttpHeartbeats {
  readonly #o: HttpHeartbeatsOptions;
  readonly #ackHeaders: Record<string, string>;
  readonly #unauthorized = errorFrame(UNAUTHORIZED);
  readonly #tooBig = errorFrame(`Heartbeats are at most ${HEARTBEAT_MAX_FRAME_BYTES} bytes.`);
  readonly #notJson = errorFrame("Send the heartbeat as JSON (Content-Type: application/json).");
  readonly #tooMany: string;

  constructor(options: HttpHeartbeatsOptions) {
    this.#o = options;
    this.#ackHeaders = {
      "content-type": "application/json; charset=utf-8",
      "content-length": String(Buffer.byteLength(options.ack)),
    };
    this.#tooMany = errorFrame(`Too many heartbeats: at most ${options.tuning.floodPerSecond} per second.`);
  }

  /**
   * Answers one heartbeat. Synchronous while the token is cached (nearly always): no promise per
   * request. `fail` gets what throws, also from the body's callbacks (one function for every
   * request, given the response: no closure per request).
   */
  handle(req: IncomingMessage, res: ServerResponse, fail: Fail): void {
    const header = req.headers.authorization;
    const owner = this.#o.auth.cachedBearer(header, true);
    if (owner !== undefined) {
      this.#owned(req, res, owner, fail);
      return;
    }
    this.#o.auth.authenticate(bearerToken(header), true).then(
      (found) => this.#owned(req, res, found, fail),
      (error) => fail(res, error),
    );
  }

  #owned(req: IncomingMessage, res: ServerResponse, owner: CachedOwner | null, fail: Fail): void {
    if (!owner) {
      req.resume();
      sendJson(res, 401, this.#unauthorized, { "www-authenticate": 'Bearer realm="heartbeat"' });
      // No token proved: the connection may idle only briefly (docs/api.md "Routers and heartbeats").
      this.#o.connections.answeredWithoutToken(req.socket);
      return;
    }
    if (!isJsonContentType(req.headers["content-type"])) {
      req.resume();
      sendJson(res, 415, this.#notJson);
      return;
    }
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > HEARTBEAT_MAX_FRAME_BYTES) {
      req.resume();
      sendJson(res, 413, this.#tooBig, { connection: "close" });
      return;
    }
    readBody(req, (body) => {
      try {
        this.#accept(req, res, owner, body);
      } catch (error) {
        fail(res, error);
      }
    });
  }

  #accept(req: IncomingMessage, res: ServerResponse, owner: CachedOwner, body: string | null): void {
    if (body === null) {
      sendJson(res, 413, this.#tooBig, { connection: "close" });
      return;
    }
    // The router's bucket lives on its cached owner: no map of its own, gone with the cache entry.
    let guard = owner.httpFlood;
    if (guard === undefined) {
      guard = new FloodGuard(this.#o.tuning.floodBurst, this.#o.tuning.floodPerSecond, this.#o.clock);
      owner.httpFlood = guard;
    }
    if (!guard.take()) {
      sendJson(res, 429, this.#tooMany, { "retry-after": String(guard.retryAfterSeconds()) });
      return;
    }
    const refused = this.#o.intake.accept(owner, body, peerAddress(req.socket.remoteAddress));
    if (refused) {
      sendJson(res, refused.kind === "json" ? 400 : 422, errorFrame(refused.message, refused.errors));
      return;
    }
    countHeartbeat("http");
    const spending = this.#o.intake.beforeAck(owner);
    if (spending === undefined) {
      res.writeHead(200, this.#ackHeaders);
      res.end(this.#o.ack);
      return;
    }
    // A token's first heartbeat: its adoption URL is spent before the ack (never rejects).
    spending
      .then(() => {
        if (res.writableEnded || res.destroyed) return;
        res.writeHead(200, this.#ackHeaders);
        res.end(this.#o.ack);
      })
      .catch(() => res.destroy());
  }
}

/**
 * The body as text (null when it grows past the frame limit) to `done`. A heartbeat nearly always
 * arrives in one chunk, which is decoded as is (no copy, no promise or async iterator per request).
 * A request that fails mid-body is the socket's error: the server's handlers close it, nothing is answered.
 */
const readBody = (req: IncomingMessage, done: (body: string | null) => void): void => {
  let first: Buffer | undefined;
  let more: Buffer[] | undefined;
  let size = 0;
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size > HEARTBEAT_MAX_FRAME_BYTES) {
      req.off("data", onData);
      req.off("end", onEnd);
      req.resume();
      done(null);
      return;
    }
    if (first === undefined) first = chunk;
    else if (more === undefined) more = [first, chunk];
    else more.push(chunk);
  };
  const onEnd = () => {
    if (more) done(Buffer.concat(more, size).toString("utf8"));
    else done(first ? first.toString("utf8") : "");
  };
  req.on("data", onData);
  req.on("end", onEnd);
};
