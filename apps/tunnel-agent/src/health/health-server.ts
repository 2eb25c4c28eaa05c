import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { renderMetrics } from "@fleet/db";
// The agent's counters exist (at zero) from the first scrape, even before the relay has run.
import "../metrics/agent-metrics.ts";

export interface HealthServerOptions {
  /** HOST. */
  host: string;
  /** AGENT_HEALTH_PORT (0 = any free port). */
  port: number;
  /** True when the database answers and migrations are applied. */
  isReady: () => Promise<boolean>;
  /** METRICS_TOKEN: bearer required for `GET /metrics` when set. */
  metricsToken?: string | undefined;
}

export interface RunningHealthServer {
  port: number;
  close(): Promise<void>;
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
};

/**
 * The tunnel agent's own HTTP port when it runs alone (docs/operations.md "Metrics and probes"):
 * `/livez` (the process runs), `/readyz` and `/healthz` (the database is reachable and migrated),
 * `/metrics`. Nothing else: the agent has no API.
 */
export const startHealthServer = async (options: HealthServerOptions): Promise<RunningHealthServer> => {
  let closing = false;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    req.resume();
    const handle = async () => {
      if (req.method !== "GET" && req.method !== "HEAD") return json(res, 405, { status: "method_not_allowed" });
      if (path === "/livez") return json(res, 200, { status: "ok" });
      if (path === "/readyz" || path === "/healthz") {
        const ready = !closing && (await options.isReady().catch(() => false));
        return json(res, ready ? 200 : 503, { status: ready ? "ok" : "unavailable" });
      }
      if (path === "/metrics") {
        const answer = await renderMetrics(req.headers.authorization, options.metricsToken);
        res.writeHead(answer.status, { ...answer.headers, "content-length": Buffer.byteLength(answer.body) });
        return res.end(answer.body);
      }
      return json(res, 404, { status: "not_found" });
    };
    handle().catch(() => {
      if (!res.headersSent) json(res, 500, { status: "error" });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: options.host, port: options.port }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      closing = true;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    },
  };
};
