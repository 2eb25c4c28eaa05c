import { Counter, Gauge, Histogram } from "prom-client";
import { clusterGauge } from "@fleet/db";

/**
 * The heartbeat daemon's metrics (docs/operations.md "Metrics and probes"). The hot path only
 * increments unlabelled or fixed-label counters; gauges are read when Prometheus scrapes.
 */
const connectionSources = new Set<() => number>();
const faultSources = new Set<() => Promise<number | undefined>>();
const routerSources = new Set<() => Promise<{ online: number; offline: number } | undefined>>();
const writerSources = new Set<() => { failures: number; dropped: number }>();

new Gauge({
  name: "fleet_heartbeat_connected_routers",
  help: "Routers with an open heartbeat WebSocket on this process.",
  collect() {
    let n = 0;
    for (const count of connectionSources) n += count();
    this.set(n);
  },
});

// Cluster-wide: one process of the cluster exports it (the holder of its lease, @fleet/db).
clusterGauge({
  name: "fleet_open_faults",
  help: "Router faults currently open (read from the database at scrape); exported by one process of the cluster.",
  labelNames: [],
  async sample(set) {
    const [source] = faultSources;
    const open = source ? await source() : undefined;
    if (open === undefined) return false;
    set({}, open);
    return true;
  },
});

// Per-heartbeat counts are plain numbers, copied into the counters when Prometheus scrapes: a
// prom-client inc() hashes its labels on every call, which the hot path should not pay.
const seen = { ws: 0, http: 0, tokenHit: 0, tokenMiss: 0 };

new Counter({
  name: "fleet_heartbeats_received_total",
  help: "Heartbeats accepted, by transport (ws, http).",
  labelNames: ["transport"] as const,
  collect() {
    this.reset();
    this.inc({ transport: "ws" }, seen.ws);
    this.inc({ transport: "http" }, seen.http);
  },
});

const written = new Counter({
  name: "fleet_heartbeats_written_total",
  help: "Heartbeat rows written to the database by flushes.",
});

const flushDuration = new Histogram({
  name: "fleet_heartbeat_flush_duration_seconds",
  help: "Time one flush of pending heartbeats took.",
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
});

const flushBatch = new Histogram({
  name: "fleet_heartbeat_flush_batch_size",
  help: "Routers written by one flush.",
  buckets: [1, 10, 50, 100, 500, 1000, 2500, 5000, 10000, 25000],
});

new Counter({
  name: "fleet_heartbeat_token_cache_total",
  help: "Heartbeat token lookups answered from the cache (hit) or the database (miss).",
  labelNames: ["result"] as const,
  collect() {
    this.reset();
    this.inc({ result: "hit" }, seen.tokenHit);
    this.inc({ result: "miss" }, seen.tokenMiss);
  },
});

export const countHeartbeat = (transport: "ws" | "http"): void => {
  seen[transport] += 1;
};
export const countTokenLookup = (hit: boolean): void => {
  if (hit) seen.tokenHit += 1;
  else seen.tokenMiss += 1;
};
export const observeFlush = (rows: number, ms: number): void => {
  written.inc(rows);
  flushDuration.observe(ms / 1000);
  flushBatch.observe(rows);
};

/** A server's connection count, summed into the connected-routers gauge; returns the unwatch. */
export const watchConnections = (count: () => number): (() => void) => {
  connectionSources.add(count);
  return () => connectionSources.delete(count);
};

/**
 * Where open faults are counted (one database per process): undefined while another process
 * holds the figure's lease. Returns the unwatch.
 */
export const watchOpenFaults = (count: () => Promise<number | undefined>): (() => void) => {
  faultSources.add(count);
  return () => faultSources.delete(count);
};

// Cluster-wide: the fleet's routers by pulse, so an alert can compare the offline share.
clusterGauge({
  name: "fleet_routers",
  help: "Routers of the whole fleet by state: online (has a pulse) or offline; exported by one process of the cluster.",
  labelNames: ["state"] as const,
  async sample(set) {
    const [source] = routerSources;
    const counts = source ? await source() : undefined;
    if (counts === undefined) return false;
    set({ state: "online" }, counts.online);
    set({ state: "offline" }, counts.offline);
    return true;
  },
});

new Counter({
  name: "fleet_heartbeat_flush_failures_total",
  help: "Flushes of acknowledged heartbeats that failed (the rows stay pending and are retried).",
  collect() {
    this.reset();
    for (const read of writerSources) this.inc(read().failures);
  },
});

new Counter({
  name: "fleet_heartbeat_rows_dropped_total",
  help: "Heartbeat rows the database refused and the writer dropped.",
  collect() {
    this.reset();
    for (const read of writerSources) this.inc(read().dropped);
  },
});

/** Where the fleet's routers are counted; undefined while another process holds the lease. */
export const watchRouters = (count: () => Promise<{ online: number; offline: number } | undefined>): (() => void) => {
  routerSources.add(count);
  return () => routerSources.delete(count);
};

/** A writer's flush counters, read at scrape. */
export const watchWriter = (read: () => { failures: number; dropped: number }): (() => void) => {
  writerSources.add(read);
  return () => writerSources.delete(read);
};
