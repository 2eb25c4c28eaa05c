import { holdClusterLease } from "@fleet/db";
import type { HeartbeatWriter } from "../heartbeats/heartbeat-writer.ts";
import { watchOpenFaults, watchRouters, watchWriter } from "../metrics/prometheus.ts";
import type { DaemonContext, Wired } from "./wiring.ts";

/**
 * The daemon's gauges (docs/operations.md "Metrics"), read at scrape time. The fleet-wide counts
 * are read by one process at a time (a cluster lease), the writer's by each process.
 */
export const wireMetrics = ({ db, store }: DaemonContext, { writer }: { writer: HeartbeatWriter }): Wired<object> => {
  const unwatchFaults = watchOpenFaults(async () =>
    (await holdClusterLease(db, "metrics.open-faults")) ? store.countOpenFaults() : undefined,
  );
  const unwatchRouters = watchRouters(async () =>
    (await holdClusterLease(db, "metrics.routers")) ? store.countRoutersByPulse() : undefined,
  );
  const unwatchWriter = watchWriter(() => writer.stats);
  return {
    services: {},
    schedules: [],
    close: async () => {
      unwatchFaults();
      unwatchRouters();
      unwatchWriter();
    },
  };
};
