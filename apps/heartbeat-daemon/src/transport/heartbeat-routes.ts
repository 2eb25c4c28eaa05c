import type { IncomingMessage, ServerResponse } from "node:http";
import { renderMetrics } from "@fleet/db";
import type { Logger } from "pino";
import { errorFrame } from "./error-frame.ts";
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
}

const METHOD_NOT_ALLOWED = errorFrame("Use POST or a WebSocket upgrade.");
const SHUTTING_DOWN = errorFrame("The daemon is shutting down.");
const INTERNAL = errorFrame("Internal error.");
const LIVE = JSON.stringify({ status: "ok" });

/**
 * The daemon's HTTP surface: `POST /v1/heartbeat`, `GET /livez`, `/readyz`, `/healthz` and
 * `/metrics` (docs/operations.md "Metrics and probes"), else 404/405.
 */
export const heartbeatRoutes = (o: HeartbeatRoutesOptions) => {
  const handle = async (req: IncomingMessage, res: ServerResponse, path: string | undefined) => {
    if (path === HEARTBEAT_PATH) {
      if (req.method !== "POST") {
        req.resume();
        return sendJson(res, 405, METHOD_NOT_ALLOWED, { allow: "POST" });
      }
      if (o.isClosing()) {
        req.resume();
        return sendJson(res, 503, SHUTTING_DOWN);
      }
      return o.http.handle(req, res);
    }
    req.resume();
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
  return (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? "";
    const query = url.indexOf("?");
    handle(req, res, query < 0 ? url : url.slice(0, query)).catch((error) => {
      o.logger.error({ err: error }, "heartbeat request failed");
      if (!res.headersSent) sendJson(res, 500, INTERNAL);
      else res.destroy();
    });
  };
};
