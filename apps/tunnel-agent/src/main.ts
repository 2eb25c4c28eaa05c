import { openDatabase } from "@fleet/db";
import { ConfigError, REDACT_PATHS } from "@fleet/shared";
import pino from "pino";
import { loadTunnelAgentConfig, type TunnelAgentConfig } from "./config.ts";
import { startTunnelAgent } from "./start-tunnel-agent.ts";

// The tunnel agent alone (scale-out): `npm run start:tunnel-agent`, normally with DATABASE_URL.
let config: TunnelAgentConfig;
try {
  config = loadTunnelAgentConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
const logger = pino({ level: config.logLevel, redact: REDACT_PATHS });
const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
await db.migrate();
const agent = await startTunnelAgent({ config, db, logger });
process.stderr.write(
  `Tunnel agent ${agent.workerId} running; relay on ${agent.relay.bind}, routers must authorize:\n  ${agent.publicKey}\n`,
);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, "shutting down");
  await agent.close();
  await db.close();
  process.exit(0);
};
process.once("SIGINT", () => void stop("SIGINT"));
process.once("SIGTERM", () => void stop("SIGTERM"));
