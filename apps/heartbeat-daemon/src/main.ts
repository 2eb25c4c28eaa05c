import cluster from "node:cluster";
import { openDatabase } from "@fleet/db";
import { startConfiguredMetricsServer, startTracing, traceLogMixin } from "@fleet/runtime";
import { ConfigError, exitOnStartupError, REDACT_PATHS } from "@fleet/shared";
import pino from "pino";
import { HEARTBEAT_NODE_FLAGS, type HeartbeatConfig, loadHeartbeatConfig } from "./config.ts";
import { startHeartbeat } from "./start-heartbeat.ts";

// The heartbeat daemon alone (scale-out): `npm run start:heartbeat`, normally with DATABASE_URL.
// HEARTBEAT_WORKERS > 1 forks that many processes that all bind the port with SO_REUSEPORT, so the
// kernel spreads connections and each process stays under its file-descriptor limit.
let config: HeartbeatConfig;
try {
  config = loadHeartbeatConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
const tracing = startTracing({ endpoint: config.otlpEndpoint, serviceName: "fleet-heartbeat" });
const logger = pino({ level: config.logLevel, redact: REDACT_PATHS, mixin: traceLogMixin });
const missingFlags = HEARTBEAT_NODE_FLAGS.filter((flag) => !process.execArgv.includes(flag));
if (missingFlags.length > 0 && cluster.isPrimary) {
  logger.warn({ missingFlags }, "node started without the daemon's flags: garbage collection costs more CPU");
}

if (config.workers > 1 && cluster.isPrimary) {
  // Migrate once here, so workers never race on it (they would serialize anyway).
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
  await db.migrate();
  await db.close();
  let stopping = false;
  const fork = () => {
    const worker = cluster.fork();
    worker.on("exit", (code, signal) => {
      if (stopping) return;
      logger.error({ pid: worker.process.pid, code, signal }, "heartbeat worker died; starting another");
      setTimeout(fork, 1_000).unref();
    });
  };
  for (let i = 0; i < config.workers; i++) fork();
  logger.info({ workers: config.workers, port: config.port }, "heartbeat workers starting");
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down workers");
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
    let alive = Object.keys(cluster.workers ?? {}).length;
    if (alive === 0) process.exit(0);
    cluster.on("exit", () => {
      alive -= 1;
      if (alive <= 0) process.exit(0);
    });
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
} else {
  const worker = config.workers > 1;
  // DATABASE_POOL_MAX per worker: a daemon needs few (one flush and one sweep at a time, token
  // lookups, the feed), and several workers must stay inside PostgreSQL's max_connections.
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolMax,
  }).catch((error: unknown) => exitOnStartupError(error));
  if (!worker) await db.migrate();
  const daemon = await startHeartbeat({ config, db, logger, reusePort: worker }).catch((error: unknown) =>
    exitOnStartupError(error, { HEARTBEAT_PORT: config.port }),
  );
  logger.info({ url: daemon.url, ws: daemon.wsUrl, pid: process.pid }, "heartbeat daemon listening");
  // METRICS_PORT: /metrics on an internal port of its own (docs/operations.md "Metrics").
  const metrics = await startConfiguredMetricsServer(config, {
    isReady: () => db.isReady(),
    logger,
    reusePort: worker,
  });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    await metrics?.close();
    await daemon.close();
    await db.close();
    await tracing.shutdown();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
}
