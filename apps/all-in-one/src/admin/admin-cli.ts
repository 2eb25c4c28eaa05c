import { openDatabase } from "@fleet/db";
import { exitOnStartupError, loadConfigOrExit } from "@fleet/shared";
import { loadAdminConfig } from "../config.ts";
import { runAdmin } from "./admin-run.ts";

// The process around runAdmin (admin-run.ts): configuration and the database only for a good command line.
const code = await runAdmin(
  process.argv.slice(2),
  { stdout: (text) => process.stdout.write(text), stderr: (text) => process.stderr.write(text) },
  async () => {
    const config = loadConfigOrExit(() => loadAdminConfig());
    // The embedded database of a running `npm start` is its own: one line says so (docs/operations.md "Commands").
    const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 }).catch(
      (error: unknown) => exitOnStartupError(error),
    );
    return { context: { db, heartbeatIntervalMs: config.heartbeatIntervalMs }, close: () => db.close() };
  },
);
process.exit(code);
