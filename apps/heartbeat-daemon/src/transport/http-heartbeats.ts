import type { IncomingMessage, ServerResponse } from "node:http";
import { HEARTBEAT_MAX_FRAME_BYTES } from "@fleet/shared";
import type { HeartbeatTuning } from "../config.ts";
import { peerAddress } from "../heartbeats/heartbeat-frame.ts";
import type { HeartbeatIntake } from "../heartbeats/heartbeat-intake.ts";
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
}

/**
 * `POST /v1/heartbeat` (docs/api.md "Routers and heartbeats"): the same JSON as a WebSocket frame, for
 * RouterOS `/tool fetch`; the same token check, parser and batched writer, answered with the same ack.
 */
export class HttpHeartbeats {
  readonly #o: HttpHeartbeatsOptions;
  readonly #guards = new Map<string, FloodGuard>();
  readonly #unauthorized = errorFrame(UNAUTHORIZED);
  readonly #tooBig = errorFrame(`Heartbeats are at most ${HEARTBEAT_MAX_FRAME_BYTES} bytes.`);
  readonly #tooMany: string;

  constructor(options: HttpHeartbeatsOptions) {
    this.#o = options;
    this.#tooMany = errorFrame(`Too many heartbeats: at most ${options.tuning.floodPerSecond} per second.`);
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const owner = await this.#o.auth.authenticate(bearerToken(req.headers.authorization));
    if (!owner) {
      req.resume();
      return sendJson(res, 401, this.#unauthorized, { "www-authenticate": 'Bearer realm="heartbeat"' });
    }
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > HEARTBEAT_MAX_FRAME_BYTES) {
      req.resume();
      return sendJson(res, 413, this.#tooBig, { connection: "close" });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > HEARTBEAT_MAX_FRAME_BYTES) return sendJson(res, 413, this.#tooBig, { connection: "close" });
      chunks.push(chunk as Buffer);
    }
    if (!this.#guard(owner.routerId).take()) return sendJson(res, 429, this.#tooMany);
    const refused = this.#o.intake.accept(
      owner,
      Buffer.concat(chunks).toString("utf8"),
      peerAddress(req.socket.remoteAddress),
    );
    if (refused) return sendJson(res, refused.kind === "json" ? 400 : 422, errorFrame(refused.message, refused.errors));
    countHeartbeat("http");
    sendJson(res, 200, this.#o.ack);
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
