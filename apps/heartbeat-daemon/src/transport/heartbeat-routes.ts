import type { IncomingMessage, ServerResponse } from "node:http";
import { renderMetrics } from "@fleet/runtime";
import type { Logger } from "pino";
import { errorFrame } from "./error-frame.ts";
import type { ConnectionGuard } from "./connection-guard.ts";
import type { HttpHeartbeats } from "./http-heartbeats.ts";
import { sendJson } from "./http-reply.ts";
import { HEARTBEAT_PATH } from "./ws-heartbeats.ts";

export interface HeartbeatRoutesOptions {
  http: HttpHeartbeats;
  logger: Logger;
  isReady: () => Promise<boolean>;
  isClosing: () => boolean;
  /** METRICS_TOKEN: bearer required for /metrics when set. */
  metricsToken?: string | undefined;
  /** Told when a request arrives, and when one that proved no token was answered (transport/connection-guard.ts). */
  connections: Pick<ConnectionGuard, "requested" | "answeredWithoutToken">;
}

const METHOD_NOT_ALLOWED = errorFrame("Use POST or a WebSocket upgrade.");
const SHUTTING_DOWN = errorFrame("The daemon is shutting down.");
const INTERNAL = errorFrame("Internal error.");
const LIVE = JSON.stringify({ status: "ok" });

/**
 * The daemon's HTTP surface: `POST /v1/heartbeat`, `GET /livez`, `/readyz`, `/healthz` and
 * `/metrics` (docs/operations.md "Metrics and probes"), else 404/405. Only a heartbeat with a valid
 * token makes its connection a router's; after any other answer the connection may idle only
 * briefly (docs/api.md "Routers and heartbeats": probes never hold a connection for long).
 */
export const heartbeatRoutes = (o: HeartbeatRoutesOptions) => {
  /** Answers everything but a heartbeat: the connection proved no token. */
  const answerOther = async (req: IncomingMessage, res: ServerResponse, path: string | undefined) => {
    req.resume();
    if (path === HEARTBEAT_PATH) {
      if (req.method !== "POST") return sendJson(res, 405, METHOD_NOT_ALLOWED, { allow: "POST" });
      return sendJson(res, 503, SHUTTING_DOWN);
    }
    const read = req.method === "GET" || req.method === "HEAD";
    // docs/operations.md "Metrics and probes": liveness without the database, readiness with it.
    if (path === "/livez" && read) return sendJson(res, 200, LIVE);
    if (path === "/metrics" && read) {
      const answer = await renderMetrics(req.headers.authorization, o.metricsToken);
      res.writeHead(answer.status, { ...answer.headers, "content-length": Buffer.byteLength(answer.body) });
      return res.end(answer.body);
    }
    if ((path === "/healthz" || path === "/readyz") && read) {
      const ready = !o.isClosing() && (await o.isReady().catch(() => false));
      return sendJson(res, ready ? 200 : 503, JSON.stringify({ status: ready ? "ok" : "unavailable" }));
    }
    return sendJson(res, 404, errorFrame(`No route for ${req.method} ${path}.`));
  };
  const fail = (res: ServerResponse, error: unknown) => {
    o.logger.error({ err: error }, "heartbeat request failed");
    if (!res.headersSent) sendJson(res, 500, INTERNAL);
    else res.destroy();
  };
  return (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? "";
    const query = url.indexOf("?");
    const path = query < 0 ? url : url.slice(0, query);
    const socket = req.socket;
    o.connections.requested(socket);
    if (path === HEARTBEAT_PATH && req.method === "POST" && !o.isClosing()) {
      // The hot path: the heartbeat tells the guard itself when its token is refused.
      try {
        o.http.handle(req, res, fail);
      } catch (error) {
        fail(res, error);
      }
      return;
    }
    answerOther(req, res, path)
      .catch((error) => fail(res, error))
      .finally(() => o.connections.answeredWithoutToken(socket));
  };
};
