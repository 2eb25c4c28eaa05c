import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { metricsAnswer, moveMetricsToOwnPort, renderMetrics } from "./metrics-endpoint.ts";

export interface MetricsServerOptions {
  /** HOST. */
  host: string;
  /** METRICS_PORT (0 = any free port). */
  port: number;
  /** METRICS_TOKEN: bearer required for `GET /metrics` when set. */
  token: string | undefined;
  /** True when the database answers and migrations are applied (`/readyz`). */
  isReady: () => Promise<boolean>;
  /** Several processes on one port (heartbeat workers). */
  reusePort?: boolean;
  /**
   * `metrics` (default): this is METRICS_PORT, the one port that serves `/metrics` (the public
   * ports then answer 404 for it). `probes`: a public probe port (the tunnel agent's health port),
   * whose `/metrics` moves to METRICS_PORT like every other public port's.
   */
  role?: "metrics" | "probes";
}

export interface RunningMetricsServer {
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
 * `METRICS_PORT` (docs/operations.md "Metrics"): `/metrics` (and the probes) on a port of its own,
 * which a deployment keeps inside the cluster; from then on the public ports answer 404 for
 * `/metrics`, so a public load balancer in front of them cannot hand the figures out.
 */
export const startMetricsServer = async (options: MetricsServerOptions): Promise<RunningMetricsServer> => {
  const ownsMetrics = (options.role ?? "metrics") === "metrics";
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
        const answer = await (ownsMetrics ? metricsAnswer : renderMetrics)(req.headers.authorization, options.token);
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
    server.listen(
      { host: options.host, port: options.port, ...(options.reusePort ? { reusePort: true, exclusive: true } : {}) },
      () => {
        server.off("error", reject);
        resolve();
      },
    );
  });
  const restore = ownsMetrics ? moveMetricsToOwnPort() : () => {};
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      closing = true;
      restore();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    },
  };
};

/**
 * The metrics port of a process's configuration, when METRICS_PORT is set (else undefined), with
 * the line that says where it listens: what every entry point does the same way.
 */
export const startConfiguredMetricsServer = async (
  config: { host: string; metricsPort?: number | undefined; metricsToken?: string | undefined },
  options: {
    isReady: () => Promise<boolean>;
    logger: { info(fields: object, message: string): void };
    reusePort?: boolean;
  },
): Promise<RunningMetricsServer | undefined> => {
  if (config.metricsPort === undefined) return undefined;
  const metrics = await startMetricsServer({
    host: config.host,
    port: config.metricsPort,
    token: config.metricsToken,
    isReady: options.isReady,
    ...(options.reusePort === undefined ? {} : { reusePort: options.reusePort }),
  });
  options.logger.info({ port: metrics.port }, "metrics listening");
  return metrics;
};
