import { closeOnSignals, loadConfigOrExit, REDACT_PATHS, requestLogMixin, startOrExit } from "@fleet/shared";
import pino from "pino";
import { loadAllInOneConfig } from "./config.ts";
import { startAll } from "./start-all.ts";

// `npm start`: the whole system in one process on the embedded defaults.
const config = loadConfigOrExit(() => loadAllInOneConfig());

const logger = pino({ level: config.api.logLevel, redact: REDACT_PATHS, mixin: requestLogMixin });
const system = await startOrExit(() => startAll({ config, logger }));
const { api } = system;
const { entryPoint } = config.tunnelAgent;

// Human-readable banner on stderr; stdout stays JSON log lines.
const storage = config.api.databaseUrl ? "PostgreSQL (DATABASE_URL)" : `embedded PGlite in ${config.api.dataDir}`;
const lines = [
  "",
  `Fleet is running on ${storage}`,
  `  API        ${api.url}   (REST at the spec paths, tRPC at ${api.url}/trpc)`,
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
  `Simulated routers (heartbeats + RouterOS over SSH), in another terminal:\n  npm run simulate -- --routers 5`,
  "",
];
process.stderr.write(`${lines.join("\n")}\n`);

closeOnSignals(system.close, (signal) => logger.info({ signal }, "shutting down"));
