import { consoleDistDir, ensureConsoleBuilt } from "@fleet/console/build";
import { startConfiguredMetricsServer, startTracing, traceLogMixin } from "@fleet/runtime";
import {
  closeOnSignals,
  exitOnStartupError,
  loadConfigOrExit,
  REDACT_PATHS,
  requestLogMixin,
  startOrExit,
} from "@fleet/shared";
import pino from "pino";
import { loadAllInOneConfig } from "./config.ts";
import { startAll } from "./start-all.ts";

// `npm start`: the whole system in one process on the embedded defaults.
const config = loadConfigOrExit(() => loadAllInOneConfig());

const tracing = startTracing({ endpoint: config.api.otlpEndpoint, serviceName: "fleet" });
const logger = pino({
  level: config.api.logLevel,
  redact: REDACT_PATHS,
  mixin: () => ({ ...requestLogMixin(), ...traceLogMixin() }),
});
// docs/console.md "Build": the first `npm start` (or one after the console's sources changed) builds
// the operator console the API serves at /console; a production image carries it built.
if (config.api.consoleDir === consoleDistDir) await ensureConsoleBuilt(logger.child({ app: "console" }));
const system = await startOrExit(() =>
  startAll({ config, logger }).catch((error: unknown) =>
    // A port in use or the embedded database open elsewhere: one line naming what to change.
    exitOnStartupError(error, {
      PORT: config.api.port,
      HEARTBEAT_PORT: config.heartbeat.port,
      STRIPE_EMULATOR_PORT: config.api.stripe.emulatorPort,
    }),
  ),
);
const { api } = system;
const { entryPoint } = config.tunnelAgent;

// Human-readable banner on stderr; stdout stays JSON log lines.
const storage = config.api.databaseUrl ? "PostgreSQL (DATABASE_URL)" : `embedded PGlite in ${config.api.dataDir}`;
const lines = [
  "",
  `Fleet is running on ${storage}`,
  `  API        ${api.url}   (REST at the spec paths, tRPC at ${api.url}/trpc)`,
  `  Console    ${api.url}/console/`,
  `  Docs       ${api.url}/docs   OpenAPI ${api.url}/openapi.json`,
  `  Health     ${api.url}/healthz`,
  `  Heartbeats ${system.heartbeat.wsUrl} (WebSocket) and POST ${system.heartbeat.url}/v1/heartbeat, every ${config.heartbeat.intervalMs / 1000} s`,
  `  Forwards   entry point ${entryPoint.host}, relay on ${entryPoint.bind} ports ${entryPoint.ports.join("-")}`,
  `  Routers    authorize the tunnel agent's key: ${system.tunnelAgent.publicKey}`,
  api.stripeEmulatorUrl
    ? `  Stripe     built-in emulator at ${api.stripeEmulatorUrl} (publishable key ${api.publishableKey})`
    : "  Stripe     configured keys",
  "",
  api.devLogin
    ? `Get a token:\n  curl -s -X POST ${api.url}/v1/auth/dev-login -H 'content-type: application/json' -d '{"email":"you@example.com"}'`
    : "Dev login is off (AUTH_DEV_LOGIN=false): use tokens from your identity provider.",
  `Then:\n  curl -s ${api.url}/v1/account -H "authorization: Bearer $TOKEN"`,
  `Simulated routers of you@example.com (adopted like real ones; RouterOS over SSH on ${config.tunnelAgent.tunnelNetwork.cidr} port ${config.tunnelAgent.ssh.port}), in another terminal:\n  npm run simulate -- --routers 3 --adopt     (--help lists the options)`,
  `A forward to the web server of a simulated LAN, then a request through it (loopback allow_from: development only):\n  curl -s -X POST ${api.url}/api/routers/$ROUTER/transient-forwarding -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \\\n    -d '{"expire_after_minutes":30,"dst_address":"192.168.88.10","dst_port":80,"allow_from":"127.0.0.1"}'\n  curl -s localhost:<its port>     (the whole recipe: README "Set up")`,
  "",
];
process.stderr.write(`${lines.join("\n")}\n`);

// METRICS_PORT: /metrics on an internal port of its own (docs/operations.md "Metrics").
const metrics = await startConfiguredMetricsServer(config.api, { isReady: () => system.db.isReady(), logger });

closeOnSignals(
  async () => {
    await metrics?.close();
    await system.close();
    await tracing.shutdown();
  },
  (signal) => logger.info({ signal }, "shutting down"),
);
