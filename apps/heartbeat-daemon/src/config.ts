import { readFileSync } from "node:fs";
import {
  withSecretFiles,
  ConfigError,
  envInt,
  envLogLevel,
  envOptional,
  envPort,
  envPortOptional,
  envString,
  envTunnelModeName,
  envTunnelNetwork,
  envUrl,
  isHealthPingTarget,
  tunnelHostAt,
  requireMetricsGuardInProduction,
  type TEnv,
} from "@fleet/shared";

/** Everything the heartbeat daemon reads from its environment, parsed once (docs/operations.md "Configuration"). */
export interface HeartbeatConfig {
  host: string;
  /** HEARTBEAT_PORT: WebSocket and HTTP heartbeats, /healthz. */
  port: number;
  /** HEARTBEAT_INTERVAL_MS: the period routers are told to beat at (in every ack). */
  intervalMs: number;
  /** MISSED_HEARTBEATS: consecutive missed periods that open a fault. */
  missedHeartbeats: number;
  /** `RESOURCE_SAMPLE_SECONDS` (default 300): one health sample per router per this period (docs/api.md "Health"). */
  resourceSampleSeconds: number;
  /**
   * `HEALTH_PING_TARGET` (default: the hub's tunnel address in wireguard mode, else unset, as the
   * API's): a heartbeat whose ping names another target is refused (docs/api.md "Health").
   */
  healthPingTarget: string | undefined;
  databaseUrl: string | undefined;
  /** `METRICS_TOKEN`: when set, `GET /metrics` needs `Authorization: Bearer <it>`. */
  metricsToken: string | undefined;
  /** `METRICS_PORT`: when set, `/metrics` and the probes on a port of their own (public ports answer 404 for `/metrics`). */
  metricsPort: number | undefined;
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: OTLP/HTTP base URL; traces are sent only when set (docs/operations.md "Tracing"). */
  otlpEndpoint: string | undefined;
  /** `DATABASE_POOL_MAX`: connections of the process's pool on PostgreSQL (docs/operations.md "Configuration"). */
  databasePoolMax: number;
  dataDir: string;
  logLevel: string;
  /** HEARTBEAT_WORKERS: processes sharing the port (`npm run start:heartbeat`); >1 needs PostgreSQL. */
  workers: number;
  /** Not from the environment: tuning with sensible defaults, overridden by tests and the bench. */
  tuning: HeartbeatTuning;
}

export interface HeartbeatTuning {
  /** Acknowledged heartbeats are written at least this often. */
  flushIntervalMs: number;
  /**
   * While every pending heartbeat is a router beating on time (it changes nothing but its liveness
   * row), the flush waits this long instead (heartbeats/heartbeat-writer.ts): fewer, larger flushes.
   */
  steadyFlushMs: number;
  /** ... or as soon as this many routers are pending. */
  maxBatchRows: number;
  /** How often the fault sweeper looks for routers past their threshold while one can be due. */
  sweepIntervalMs: number;
  /**
   * The longest wait between sweeps while no router can be due yet (the oldest pulse is further
   * from its threshold). Each sweep marks the daemons alive, so this stays well under coverageGapMs.
   */
  sweepIdleMs: number;
  /** Routers the sweeper handles per statement. */
  sweepLimit: number;
  /** A cached token is checked against the database again after this long. */
  tokenCacheTtlMs: number;
  /** First-time token lookups are gathered this long into one query (transport/token-auth.ts). */
  tokenGatherMs: number;
  /** Pinger visit period: a socket quiet for 1.5 periods is pinged, then terminated if still silent at the next visit (transport/pinger.ts). */
  pingIntervalMs: number;
  /** Per connection (and per router over HTTP): burst, then sustained frames per second. */
  floodBurst: number;
  floodPerSecond: number;
  /** No daemon alive for longer than this means every daemon was away (the restart rule). */
  coverageGapMs: number;
  /**
   * Connections (WebSocket and HTTP) one process holds at most; more are closed as they are
   * accepted, and the router retries (with SO_REUSEPORT, most likely into another process). A
   * process may hold 20,000 file descriptors: this leaves room for the database pool, the status
   * feed and logs, which a reconnect storm that sends one process too many routers would otherwise
   * take (a flush failed with EMFILE once, at 100,000 routers on 8 processes).
   */
  maxConnections: number;
  /**
   * A connection must complete a request within this long of its accept (and any request within
   * this long of its first byte), else it is closed (docs/api.md "Routers and heartbeats": 10 s).
   */
  requestTimeoutMs: number;
  /** A keep-alive connection whose last request proved no token (a probe, a refused token) may idle this long (5 s). */
  unauthenticatedIdleMs: number;
  /**
   * Connections waiting for a request (see transport/connection-guard.ts) that one source address
   * may keep once they have waited `evictWaitingAfterMs`; its oldest beyond this are closed.
   */
  waitingPerAddress: number;
  /** A connection waiting this long may be closed to make room for a newer one (at the per-address or process limit). */
  evictWaitingAfterMs: number;
}

/**
 * The V8 flags the daemon's process starts with (`npm run start:heartbeat`, the image's heartbeat
 * stage; docs/scale.md "Health samples"). V8 sizes an old generation that allocates slowly at 1.1-1.3x its live
 * heap, so at 10,000 routers it marked the whole ~95 MB heap every 12-16 s (background marking, most
 * of what health added per heartbeat); twice the live heap marks it far less often. Command line
 * only: NODE_OPTIONS refuses it.
 */
export const HEARTBEAT_NODE_FLAGS = ["--heap-growing-percent=100"] as const;

export const defaultTuning = (intervalMs: number): HeartbeatTuning => ({
  flushIntervalMs: 250,
  // A second at the default 30 s interval; a short interval (tests, demos) keeps 250 ms.
  steadyFlushMs: Math.min(1_000, Math.max(250, Math.round(intervalMs / 30))),
  maxBatchRows: 10_000,
  sweepIntervalMs: 250,
  sweepIdleMs: 1_000,
  sweepLimit: 5_000,
  tokenCacheTtlMs: 5_000,
  tokenGatherMs: 20,
  pingIntervalMs: Math.max(intervalMs, 5_000),
  // Generous for a router (one frame per interval), still a hard bound on a misbehaving one.
  floodBurst: 200,
  floodPerSecond: 50,
  coverageGapMs: 5_000,
  maxConnections: 19_000,
  requestTimeoutMs: 10_000,
  unauthenticatedIdleMs: 5_000,
  waitingPerAddress: 64,
  evictWaitingAfterMs: 2_000,
});

/**
 * The only reader of the environment. Throws ConfigError naming the variable on a bad value.
 * `serving: false` (the admin CLI reads the database settings only): no production check of the port.
 */
export const loadHeartbeatConfig = (given: TEnv = process.env, { serving = true } = {}): HeartbeatConfig => {
  // `<NAME>_FILE` of every secret (docs/operations.md "Configuration").
  const env = withSecretFiles(given, (file) => readFileSync(file, "utf8"));
  if (serving) requireMetricsGuardInProduction(env);
  const databaseUrl = envUrl(env, "DATABASE_URL", ["postgres:", "postgresql:"]);
  const workers = envInt(env, "HEARTBEAT_WORKERS", 1, 1, 64);
  if (workers > 1 && !databaseUrl) {
    throw new ConfigError("HEARTBEAT_WORKERS", "above 1 needs DATABASE_URL (embedded PGlite lives in one process)");
  }
  const intervalMs = envInt(env, "HEARTBEAT_INTERVAL_MS", 30_000, 50, 86_400_000);
  return {
    host: envString(env, "HOST", "127.0.0.1"),
    port: envPort(env, "HEARTBEAT_PORT", 3001),
    intervalMs,
    missedHeartbeats: envInt(env, "MISSED_HEARTBEATS", 10, 1, 10_000),
    resourceSampleSeconds: envInt(env, "RESOURCE_SAMPLE_SECONDS", 300, 1, 86_400),
    healthPingTarget: envHealthPingTarget(env),
    databaseUrl: databaseUrl?.toString(),
    metricsToken: envOptional(env, "METRICS_TOKEN"),
    metricsPort: envPortOptional(env, "METRICS_PORT"),
    otlpEndpoint: envUrl(env, "OTEL_EXPORTER_OTLP_ENDPOINT", ["http:", "https:"])?.toString(),
    databasePoolMax: envInt(env, "DATABASE_POOL_MAX", 10, 1, 1000),
    dataDir: envString(env, "DATA_DIR", "./.data"),
    logLevel: envLogLevel(env, "LOG_LEVEL"),
    workers,
    tuning: defaultTuning(intervalMs),
  };
};

/** The API's rule (apps/api/src/config.ts), without the hub settings the daemon never needs. */
const envHealthPingTarget = (env: TEnv): string | undefined => {
  const target = envOptional(env, "HEALTH_PING_TARGET");
  if (target !== undefined) {
    if (!isHealthPingTarget(target))
      throw new ConfigError("HEALTH_PING_TARGET", "must be an IPv4 address or a host name");
    return target;
  }
  if (envTunnelModeName(env) !== "wireguard") return undefined;
  return envString(env, "TUNNEL_HUB_ADDRESS", tunnelHostAt(envTunnelNetwork(env), 0));
};
