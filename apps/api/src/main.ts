import { openDatabase, startMetricsServer, startTracing, traceLogMixin } from "@fleet/db";
import { closeOnSignals, loadConfigOrExit, REDACT_PATHS, requestLogMixin } from "@fleet/shared";
import pino from "pino";
import { loadApiConfig } from "./config.ts";
import { startApi } from "./start-api.ts";

// The API alone (scale-out): `npm run start:api`, normally with DATABASE_URL.
const config = loadConfigOrExit(() => loadApiConfig());
const tracing = startTracing({ endpoint: config.otlpEndpoint, serviceName: "fleet-api" });
const logger = pino({
  level: config.logLevel,
  redact: REDACT_PATHS,
  mixin: () => ({ ...requestLogMixin(), ...traceLogMixin() }),
});
const db = await openDatabase({
  databaseUrl: config.databaseUrl,
  dataDir: config.dataDir,
  poolSize: config.databasePoolMax,
});
await db.migrate();
const api = await startApi({ config, db, logger });
logger.info({ url: api.url, devLogin: api.devLogin }, "api listening");
// METRICS_PORT: /metrics on an internal port of its own (docs/operations.md "Metrics").
const metrics =
  config.metricsPort === undefined
    ? undefined
    : await startMetricsServer({
        host: config.host,
        port: config.metricsPort,
        token: config.metricsToken,
        isReady: () => db.isReady(),
      });
if (metrics) logger.info({ port: metrics.port }, "metrics listening");

closeOnSignals(
  async () => {
    await metrics?.close();
    await api.close();
    await db.close();
    await tracing.shutdown();
  },
  (signal) => logger.info({ signal }, "shutting down"),
);
