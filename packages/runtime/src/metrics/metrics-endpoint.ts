import { timingSafeEqual } from "node:crypto";
import { bearerToken } from "@fleet/shared";
import { collectDefaultMetrics, register } from "prom-client";
// Build info exists in every process that serves /metrics (pool gauges come with @fleet/db).
import "./build-info.ts";

/**
 * `GET /metrics` of every port (docs/operations.md "Metrics and probes"): the process's one
 * prom-client registry in Prometheus text format. With METRICS_TOKEN set, only
 * `Authorization: Bearer <token>` gets it; anything else is 401. All apps of a process share the
 * registry, so in the all-in-one every port shows the same metrics.
 */
let defaultsOn = false;

export interface MetricsAnswer {
  status: 200 | 401 | 404;
  headers: Record<string, string>;
  body: string;
}

const bearerMatches = (authorization: string | undefined, token: string): boolean => {
  const presented = bearerToken(authorization);
  if (presented === undefined) return false;
  const given = Buffer.from(presented);
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
};

/** Set while a METRICS_PORT server runs: the public ports then answer 404 for `/metrics`. */
let ownPorts = 0;
export const moveMetricsToOwnPort = (): (() => void) => {
  ownPorts += 1;
  let restored = false;
  return () => {
    if (!restored) ownPorts -= 1;
    restored = true;
  };
};

/** `GET /metrics` on a public port (API, heartbeat, agent health port). */
export const renderMetrics = async (
  authorization: string | undefined,
  token: string | undefined,
): Promise<MetricsAnswer> => {
  if (ownPorts > 0) {
    const body = JSON.stringify({ message: "Metrics are served on METRICS_PORT." });
    return { status: 404, headers: { "content-type": "application/json; charset=utf-8" }, body };
  }
  return metricsAnswer(authorization, token);
};

/** The answer itself, wherever `/metrics` is served. */
export const metricsAnswer = async (
  authorization: string | undefined,
  token: string | undefined,
): Promise<MetricsAnswer> => {
  if (!defaultsOn) {
    defaultsOn = true;
    // Node.js process metrics (CPU, memory, event loop lag, GC), registered once per process. The
    // lag histogram samples every 100 ms, not prom-client's default 10 ms: its timer wakes the
    // process each time, and at 10 ms that cost an idle process about 9 ms of CPU per second.
    collectDefaultMetrics({ eventLoopMonitoringPrecision: 100 });
  }
  if (token !== undefined && !bearerMatches(authorization, token)) {
    const body = JSON.stringify({ message: "Send the metrics token as `Authorization: Bearer <METRICS_TOKEN>`." });
    return {
      status: 401,
      headers: { "content-type": "application/json; charset=utf-8", "www-authenticate": 'Bearer realm="metrics"' },
      body,
    };
  }
  return { status: 200, headers: { "content-type": register.contentType }, body: await register.metrics() };
};
