import { timingSafeEqual } from "node:crypto";
import { collectDefaultMetrics, register } from "prom-client";

/**
 * `GET /metrics` of every port (docs/operations.md "Metrics and probes"): the process's one
 * prom-client registry in Prometheus text format. With METRICS_TOKEN set, only
 * `Authorization: Bearer <token>` gets it; anything else is 401. All apps of a process share the
 * registry, so in the all-in-one every port shows the same metrics.
 */
let defaultsOn = false;

export interface MetricsAnswer {
  status: 200 | 401;
  headers: Record<string, string>;
  body: string;
}

const bearerMatches = (authorization: string | undefined, token: string): boolean => {
  const match = /^Bearer (.+)$/.exec(authorization ?? "");
  if (!match?.[1]) return false;
  const given = Buffer.from(match[1]);
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
};

export const renderMetrics = async (
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
