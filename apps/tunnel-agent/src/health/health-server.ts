import { type RunningMetricsServer, startMetricsServer } from "@fleet/runtime";
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

export type RunningHealthServer = RunningMetricsServer;

/**
 * The tunnel agent's own HTTP port when it runs alone (docs/operations.md "Metrics and probes"):
 * `/livez` (the process runs), `/readyz` and `/healthz` (the database is reachable and migrated),
 * `/metrics`. Nothing else: the agent has no API. It is the probe server of METRICS_PORT in its
 * public role (with METRICS_PORT set, its `/metrics` answers 404 like every public port's).
 */
export const startHealthServer = (options: HealthServerOptions): Promise<RunningHealthServer> =>
  startMetricsServer({
    host: options.host,
    port: options.port,
    token: options.metricsToken,
    isReady: options.isReady,
    role: "probes",
  });
