import { type RunningApi, startApi } from "@fleet/api";
import { type Database, openDatabase } from "@fleet/db";
import type { Logger } from "pino";
import type { AllInOneConfig } from "./config.ts";

export interface RunningSystem {
  db: Database;
  api: RunningApi;
  /** Stops the apps in reverse order of start, then closes the database. */
  close(): Promise<void>;
}

export interface StartAllOptions {
  config: AllInOneConfig;
  logger: Logger;
  /** An already opened database (tests); otherwise one is opened from the configuration. */
  db?: Database;
}

/**
 * The composition root: ONE database (PGlite is in-process and single-connection) shared by the
 * API, the heartbeat daemon and the tunnel agent, each started through its own start function.
 */
export const startAll = async ({ config, logger, db: given }: StartAllOptions): Promise<RunningSystem> => {
  const db = given ?? (await openDatabase({ databaseUrl: config.api.databaseUrl, dataDir: config.api.dataDir }));
  await db.migrate();
  const stops: Array<() => Promise<void>> = [];
  try {
    const api = await startApi({ config: config.api, db, logger: logger.child({ app: "api" }) });
    stops.push(api.close);
    return {
      db,
      api,
      close: async () => {
        for (const stop of stops.reverse()) await stop();
        if (!given) await db.close();
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    if (!given) await db.close();
    throw error;
  }
};
