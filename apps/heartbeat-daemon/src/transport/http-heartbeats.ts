import type { IncomingMessage, ServerResponse } from "node:http";
import { HEARTBEAT_MAX_FRAME_BYTES } from "@fleet/shared";
import type { HeartbeatTuning } from "../config.ts";
import { peerAddress } from "../heartbeats/heartbeat-frame.ts";
import type { HeartbeatIntake } from "../heartbeats/heartbeat-intake.ts";
import type { ConnectionGuard } from "./connection-guard.ts";
import { errorFrame } from "./error-frame.ts";
import { FloodGuard } from "./flood-guard.ts";
import { sendJson } from "./http-reply.ts";
import { bearerToken, type TokenAuthenticator } from "./token-auth.ts";
import { UNAUTHORIZED } from "./ws-heartbeats.ts";
import { countHeartbeat } from "../metrics/prometheus.ts";

// Routers over HTTP get one bucket each; the map is capped so bad traffic cannot grow it forever.
const MAX_HTTP_GUARDS = 200_000;

export interface HttpHeartbeatsOptions {
  tuning: HeartbeatTuning;
  auth: TokenAuthenticator;
  intake: HeartbeatIntake;
  /** The ack body, encoded once. */
  ack: string;
  /** Told when a request proved no token (transport/connection-guard.ts). */
  connections: Pick<ConnectionGuard, "answeredWithoutToken">;
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
  readonly #guards = new Map<string, FloodGuard>();
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

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const owner = await this.#o.auth.authenticate(bearerToken(req.headers.authorization), true);
    if (!owner) {
      req.resume();
      sendJson(res, 401, this.#unauthorized, { "www-authenticate": 'Bearer realm="heartbeat"' });
      // No token proved: the connection may idle only briefly (docs/api.md "Routers and heartbeats").
      this.#o.connections.answeredWithoutToken(req.socket);
      return;
    }
    if (!isJsonContentType(req.headers["content-type"])) {
      req.resume();
      return sendJson(res, 415, this.#notJson);
    }
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > HEARTBEAT_MAX_FRAME_BYTES) {
      req.resume();
      return sendJson(res, 413, this.#tooBig, { connection: "close" });
    }
    const body = await readBody(req);
    if (body === null) return sendJson(res, 413, this.#tooBig, { connection: "close" });
    const guard = this.#guard(owner.routerId);
    if (!guard.take()) {
      return sendJson(res, 429, this.#tooMany, { "retry-after": String(guard.retryAfterSeconds()) });
    }
    const refused = this.#o.intake.accept(owner, body, peerAddress(req.socket.remoteAddress));
    if (refused) return sendJson(res, refused.kind === "json" ? 400 : 422, errorFrame(refused.message, refused.errors));
    countHeartbeat("http");
    res.writeHead(200, this.#ackHeaders);
    res.end(this.#o.ack);
  }

  #guard(routerId: string): FloodGuard {
    let guard = this.#guards.get(routerId);
    if (!guard) {
      if (this.#guards.size >= MAX_HTTP_GUARDS) this.#guards.clear();
      guard = new FloodGuard(this.#o.tuning.floodBurst, this.#o.tuning.floodPerSecond);
      this.#guards.set(routerId, guard);
    }
    return guard;
  }
}

/**
 * The body as text, or null when it grows past the frame limit. A heartbeat nearly always arrives
 * in one chunk, which is decoded as is (no copy, no async iterator per request).
 */
const readBody = (req: IncomingMessage): Promise<string | null> =>
  new Promise((resolve, reject) => {
    let first: Buffer | undefined;
    let more: Buffer[] | undefined;
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > HEARTBEAT_MAX_FRAME_BYTES) {
        req.off("data", onData);
        req.off("end", onEnd);
        req.resume();
        resolve(null);
        return;
      }
      if (first === undefined) first = chunk;
      else if (more === undefined) more = [first, chunk];
      else more.push(chunk);
    };
    const onEnd = () => {
      if (more) resolve(Buffer.concat(more, size).toString("utf8"));
      else resolve(first ? first.toString("utf8") : "");
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.once("error", reject);
  });
