import { parseArgs } from "node:util";
import { openDatabase } from "@fleet/db";
import { exitOnStartupError, loadConfigOrExit } from "@fleet/shared";
import { loadAdminConfig } from "../config.ts";
import {
  type AdminContext,
  AdminError,
  clearTunnelPinCommand,
  type AdminOutput,
  createApiKeyCommand,
  createOrganizationCommand,
  failedJobsCommand,
  migrateCommand,
  parseKeyScopes,
  retryJobCommand,
  statusCommand,
} from "./admin-commands.ts";

const USAGE = `usage: npm run admin -- <command> [--json]
  migrate                                  apply pending migrations (application and job engine)
  status                                   migrations, processes, queue depths, connected routers, open faults
  jobs failed [--queue Q]                  jobs that failed for good, with their last error
  jobs retry <id>                          retry one failed or dead-lettered job
  org create --name N [--owner-email E]    create an organization (and its owner) without dev-login
  apikey create --org <id> [--name N] [--scopes S,...]
                                           an API key for an organization (default: every tenant
                                           scope; tunnel:assign only here)
  tunnel clear-pin <address>               forget the host key pinned at a tunnel address (after
                                           checking the device there)
(docs/operations.md "Commands")`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    json: { type: "boolean", default: false },
    queue: { type: "string" },
    name: { type: "string" },
    "owner-email": { type: "string" },
    org: { type: "string" },
    scopes: { type: "string" },
    help: { type: "boolean", default: false },
  },
});

const run = async (context: AdminContext, args: string[]): Promise<AdminOutput> => {
  const [command, sub, arg] = args;
  if (command === "migrate") return migrateCommand(context);
  if (command === "status") return statusCommand(context);
  if (command === "jobs" && sub === "failed") return failedJobsCommand(context, values.queue);
  if (command === "jobs" && sub === "retry" && arg) return retryJobCommand(context, arg);
  if (command === "org" && sub === "create") {
    if (!values.name) throw new AdminError("org create needs --name");
    return createOrganizationCommand(context, values.name, values["owner-email"]);
  }
  if (command === "apikey" && sub === "create") {
    if (!values.org) throw new AdminError("apikey create needs --org <organization id>");
    return createApiKeyCommand(context, values.org, values.name, parseKeyScopes(values.scopes));
  }
  if (command === "tunnel" && sub === "clear-pin" && arg) return clearTunnelPinCommand(context, arg);
  throw new AdminError(USAGE);
};

if (values.help || positionals.length === 0) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(positionals.length === 0 && !values.help ? 2 : 0);
}
const config = loadConfigOrExit(() => loadAdminConfig());
// The embedded database of a running `npm start` is its own: one line says so (docs/operations.md "Commands").
const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 }).catch(
  (error: unknown) => exitOnStartupError(error),
);
let code = 0;
try {
  if (positionals[0] !== "migrate" && !(await db.isReady())) {
    throw new AdminError("migrations are pending: run `npm run admin -- migrate` first");
  }
  const output = await run({ db, heartbeatIntervalMs: config.heartbeatIntervalMs }, positionals);
  process.stdout.write(values.json ? `${JSON.stringify(output.json, null, 2)}\n` : `${output.text.join("\n")}\n`);
} catch (error) {
  code = error instanceof AdminError ? 2 : 1;
  process.stderr.write(`admin: ${error instanceof Error ? error.message : String(error)}\n`);
} finally {
  await db.close();
}
process.exit(code);
