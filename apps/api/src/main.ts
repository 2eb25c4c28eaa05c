import { openDatabase } from "@fleet/db";
import { ConfigError, REDACT_PATHS } from "@fleet/shared";
import pino from "pino";
import { loadApiConfig } from "./config.ts";
import { startApi } from "./start-api.ts";

// The API alone (scale-out): `npm run start:api`, normally with DATABASE_URL.
let config: ReturnType<typeof loadApiConfig>;
try {
  config = loadApiConfig();
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
const api = await startApi({ config, db, logger });
logger.info({ url: api.url, devLogin: api.devLogin }, "api listening");

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, "shutting down");
  await api.close();
  await db.close();
  process.exit(0);
};
process.once("SIGINT", () => void stop("SIGINT"));
process.once("SIGTERM", () => void stop("SIGTERM"));
