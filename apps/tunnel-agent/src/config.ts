import { readFileSync } from "node:fs";
import {
  type EntryPointEnv,
  envInt,
  envLogLevel,
  envOptional,
  envPort,
  envSecret,
  envPortOptional,
  envString,
  envTunnelModeName,
  envTunnelNetwork,
  envTunnelSshPort,
  envUrl,
  loadEntryPointEnv,
  loadTunnelModeEnv,
  type TEnv,
  type TunnelModeEnv,
  type TunnelNetwork,
  requireInProduction,
  withSecretFiles,
} from "@fleet/shared";

/** Everything the tunnel agent reads from its environment, parsed once (docs/operations.md "Configuration"). */
export interface TunnelAgentConfig {
  databaseUrl: string | undefined;
  /** `DATABASE_POOL_MAX`: connections of the process's pool on PostgreSQL (docs/operations.md "Configuration"). */
  databasePoolMax: number;
  dataDir: string;
  logLevel: string;
  /** `HOST`: bind address of the health port. */
  host: string;
  /** `AGENT_HEALTH_PORT`: /livez, /readyz, /healthz and /metrics when the agent runs alone. */
  healthPort: number;
  /** `METRICS_TOKEN`: when set, /metrics needs `Authorization: Bearer <it>`. */
  metricsToken: string | undefined;
  /** `METRICS_PORT`: when set, `/metrics` and the probes on a port of their own (public ports answer 404 for `/metrics`). */
  metricsPort: number | undefined;
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: OTLP/HTTP base URL; traces are sent only when set (docs/operations.md "Tracing"). */
  otlpEndpoint: string | undefined;
  /** ENTRY_POINT_*: which forwards this agent's relay serves and where it listens. */
  entryPoint: EntryPointEnv;
  /** `TUNNEL_NETWORK`: the agent and the relay connect only to assigned addresses inside it. */
  tunnelNetwork: TunnelNetwork;
  /** `TUNNEL_MODE` and, in `wireguard` mode, the hub this agent runs (docs/operations.md "The management tunnel"). */
  tunnel: TunnelModeEnv;
  /** When the hub re-reads every binding: a node-cron expression with seconds (every 30 s), fixed, not read from the environment; node-cron, which runs it, checks it when the hub starts. */
  wireguardReconcileCron: string;
  /** How often the hub reads its peers' last handshakes for `tunnel_status`. */
  wireguardStatusPollMs: number;
  ssh: {
    /** `TUNNEL_SSH_PORT`: SSH port on each router's tunnel_ip. */
    port: number;
    /** `TUNNEL_SSH_USER`. */
    user: string;
    /** `TUNNEL_SSH_KEY`: private key file; unset = a dev key generated once in DATA_DIR. */
    keyFile: string | undefined;
    /** Covers TCP connect, key exchange and authentication. */
    connectTimeoutMs: number;
    commandTimeoutMs: number;
  };
  jobs: {
    /**
     * `TUNNEL_JOB_LEASE_MS`: how long an attempt may run before it is taken to have died with its
     * agent and is run again by another (rounded up to whole seconds: the job engine's unit).
     */
    leaseMs: number;
    /** Backstop poll of an idle agent; new jobs wake it at once (LISTEN/NOTIFY). */
    pollSeconds: number;
    /** Jobs one agent runs at once (different routers; one router's jobs never overlap). */
    concurrency: number;
    /** Further jobs at once that are only forward and access applies/removals (never behind bulk work). */
    interactiveConcurrency: number;
    /** `TUNNEL_CHANGE_CONCURRENCY`: further jobs at once that are fleet change steps (mostly waiting on routers). */
    changeConcurrency: number;
    /**
     * `TUNNEL_CHANGE_START_CONCURRENCY`: of those, how many run their start (login, backups, guard,
     * script) at once; the others wait their turn, first come first served.
     */
    changeStartConcurrency: number;
  };
  /** `TUNNEL_RECONCILE_INTERVAL_MS`: period of the router-vs-database reconciliation (also run at start). */
  reconcileIntervalMs: number;
  /** Safety net of the expiry timer, which otherwise wakes at the next `expires_at`. */
  expirySweepIntervalMs: number;
  /** How often the relay re-reads the active forwards (API and agent may be separate processes). */
  relayPollMs: number;
  /** Configuration backups (docs/api.md "Configuration backups"). */
  backups: {
    /** `BACKUP_INTERVAL_HOURS` (default 24): each router's configuration is read this often; 0 = no schedule. */
    intervalHours: number;
    /** `BACKUP_RETENTION` (default 100): versions kept per router. */
    retention: number;
    /** `BACKUP_MAX_BYTES` (default 4 MiB): an export over it is not read further, not stored, and reported as the backup's failure. */
    maxBytes: number;
  };
  /** `ACCESS_PASSWORD_KEY` (>= 32 bytes, shared with the API); dev: the file `access-password-key` in DATA_DIR. */
  accessPasswordKey: string | undefined;
}

/** The only reader of the environment. Throws ConfigError naming the variable on a bad value. */
export const loadTunnelAgentConfig = (given: TEnv = process.env): TunnelAgentConfig => {
  // `<NAME>_FILE` of every secret (docs/operations.md "Configuration").
  const env = withSecretFiles(given, (file) => readFileSync(file, "utf8"));
  // docs/operations.md "Production": a generated key in a container's DATA_DIR dies with it.
  requireInProduction(env, ["TUNNEL_SSH_KEY"], "routers authorize one key pair; a generated one is lost on restart");
  requireInProduction(
    env,
    ["ACCESS_PASSWORD_KEY"],
    "the API and every tunnel agent derive the same temporary router passwords from it",
  );
  if (envTunnelModeName(env) === "wireguard") {
    requireInProduction(
      env,
      ["TUNNEL_WG_PRIVATE_KEY"],
      "routers are configured with the hub's public key; a generated one is lost on restart",
    );
  }
  const databaseUrl = envUrl(env, "DATABASE_URL", ["postgres:", "postgresql:"]);
  return {
    databaseUrl: databaseUrl?.toString(),
    databasePoolMax: envInt(env, "DATABASE_POOL_MAX", 10, 1, 1000),
    dataDir: envString(env, "DATA_DIR", "./.data"),
    logLevel: envLogLevel(env, "LOG_LEVEL"),
    host: envString(env, "HOST", "127.0.0.1"),
    healthPort: envPort(env, "AGENT_HEALTH_PORT", 3002),
    metricsToken: envOptional(env, "METRICS_TOKEN"),
    metricsPort: envPortOptional(env, "METRICS_PORT"),
    otlpEndpoint: envUrl(env, "OTEL_EXPORTER_OTLP_ENDPOINT", ["http:", "https:"])?.toString(),
    entryPoint: loadEntryPointEnv(env),
    tunnelNetwork: envTunnelNetwork(env),
    tunnel: loadTunnelModeEnv(env, envTunnelNetwork(env)),
    wireguardReconcileCron: "*/30 * * * * *",
    wireguardStatusPollMs: envInt(env, "TUNNEL_WG_STATUS_POLL_MS", 10_000, 100, 600_000),
    ssh: {
      port: envTunnelSshPort(env),
      user: envString(env, "TUNNEL_SSH_USER", "mgmt"),
      keyFile: envOptional(env, "TUNNEL_SSH_KEY"),
      connectTimeoutMs: 10_000,
      commandTimeoutMs: 15_000,
    },
    jobs: {
      leaseMs: envInt(env, "TUNNEL_JOB_LEASE_MS", 60_000, 1_000, 3_600_000),
      pollSeconds: 1,
      concurrency: 4,
      interactiveConcurrency: 2,
      changeConcurrency: envInt(env, "TUNNEL_CHANGE_CONCURRENCY", 64, 1, 1_000),
      changeStartConcurrency: envInt(env, "TUNNEL_CHANGE_START_CONCURRENCY", 4, 1, 1_000),
    },
    reconcileIntervalMs: envInt(env, "TUNNEL_RECONCILE_INTERVAL_MS", 60_000, 1_000, 86_400_000),
    expirySweepIntervalMs: 30_000,
    relayPollMs: 500,
    backups: {
      intervalHours: envInt(env, "BACKUP_INTERVAL_HOURS", 24, 0, 8_760),
      retention: envInt(env, "BACKUP_RETENTION", 100, 1, 10_000),
      maxBytes: envInt(env, "BACKUP_MAX_BYTES", 4 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    },
    accessPasswordKey: envSecret(env, "ACCESS_PASSWORD_KEY", 32),
  };
};
