import { openDatabase } from "@fleet/db";
import { startConfiguredMetricsServer, startTracing, traceLogMixin } from "@fleet/runtime";
import { closeOnSignals, exitOnStartupError, loadConfigOrExit, REDACT_PATHS, startOrExit } from "@fleet/shared";
import pino from "pino";
import { loadTunnelAgentConfig } from "./config.ts";
import { startHealthServer } from "./health/health-server.ts";
import { startTunnelAgent } from "./start-tunnel-agent.ts";

// The tunnel agent alone (scale-out): `npm run start:tunnel-agent`, normally with DATABASE_URL.
const config = loadConfigOrExit(() => loadTunnelAgentConfig());
const tracing = startTracing({ endpoint: config.otlpEndpoint, serviceName: "fleet-tunnel-agent" });
const logger = pino({ level: config.logLevel, redact: REDACT_PATHS, mixin: traceLogMixin });
const db = await openDatabase({
  databaseUrl: config.databaseUrl,
  dataDir: config.dataDir,
  poolSize: config.databasePoolMax,
}).catch((error: unknown) => exitOnStartupError(error));
await db.migrate();
// A WireGuard hub that cannot be created stops start-up with one line naming TUNNEL_MODE.
const agent = await startOrExit(() => startTunnelAgent({ config, db, logger })).catch(async (error: unknown) => {
  await db.close();
  throw error;
});
const health = await startHealthServer({
  host: config.host,
  port: config.healthPort,
  isReady: () => db.isReady(),
  metricsToken: config.metricsToken,
}).catch((error: unknown) => exitOnStartupError(error, { AGENT_HEALTH_PORT: config.healthPort }));
logger.info({ port: health.port }, "health port listening");
// METRICS_PORT: /metrics on an internal port of its own (docs/operations.md "Metrics").
const metrics = await startConfiguredMetricsServer(config, { isReady: () => db.isReady(), logger });
process.stderr.write(
  `Tunnel agent ${agent.workerId} running; relay on ${config.entryPoint.bind}, routers must authorize:\n  ${agent.publicKey}\n`,
);

closeOnSignals(
  async () => {
    await metrics?.close();
    await health.close();
    await agent.close();
    await db.close();
    await tracing.shutdown();
  },
  (signal) => logger.info({ signal }, "shutting down"),
);
