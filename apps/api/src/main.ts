import { openDatabase } from "@fleet/db";
import { startConfiguredMetricsServer, startTracing, traceLogMixin } from "@fleet/runtime";
import { closeOnSignals, exitOnStartupError, loadConfigOrExit, REDACT_PATHS, requestLogMixin } from "@fleet/shared";
import pino from "pino";
import { loadApiConfig } from "./config.ts";
import { batchedStdout } from "./log-destination.ts";
import { startApi } from "./start-api.ts";

// The API alone (scale-out): `npm run start:api`, normally with DATABASE_URL.
const config = loadConfigOrExit(() => loadApiConfig());
const tracing = startTracing({ endpoint: config.otlpEndpoint, serviceName: "fleet-api" });
const logger = pino(
  {
    level: config.logLevel,
    redact: REDACT_PATHS,
    mixin: () => ({ ...requestLogMixin(), ...traceLogMixin() }),
  },
  batchedStdout(),
);
const ports = { PORT: config.port, STRIPE_EMULATOR_PORT: config.stripe.emulatorPort };
const db = await openDatabase({
  databaseUrl: config.databaseUrl,
  dataDir: config.dataDir,
  poolSize: config.databasePoolMax,
}).catch((error: unknown) => exitOnStartupError(error));
await db.migrate();
const api = await startApi({ config, db, logger }).catch((error: unknown) => exitOnStartupError(error, ports));
logger.info({ url: api.url, devLogin: api.devLogin }, "api listening");
// METRICS_PORT: /metrics on an internal port of its own (docs/operations.md "Metrics").
const metrics = await startConfiguredMetricsServer(config, { isReady: () => db.isReady(), logger });

closeOnSignals(
  async () => {
    await metrics?.close();
    await api.close();
    await db.close();
    await tracing.shutdown();
  },
  (signal) => logger.info({ signal }, "shutting down"),
);
