import { parseArgs } from "node:util";
import {
  type AdminContext,
  AdminError,
  type AdminOutput,
  clearTunnelPinCommand,
  createApiKeyCommand,
  createOrganizationCommand,
  failedJobsCommand,
  migrateCommand,
  parseKeyScopes,
  retryJobCommand,
  statusCommand,
} from "./admin-commands.ts";

export const ADMIN_USAGE = `usage: npm run admin -- <command> [--json]
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

export interface AdminIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** The database a command works on, opened only once the command line is known to be good. */
export type OpenAdminContext = () => Promise<{ context: AdminContext; close(): Promise<void> }>;

type Command = (context: AdminContext) => Promise<AdminOutput>;

/**
 * `npm run admin -- ...` (docs/operations.md "Commands") without the process around it: writes
 * what the command prints and returns the exit code (0 done, 2 refused with one line, 1 failed).
 * admin-cli.ts is the process; tests call this directly and spawn the process only for what is
 * about being one (production environment, exit codes reaching the shell).
 */
export const runAdmin = async (argv: string[], io: AdminIo, open: OpenAdminContext): Promise<number> => {
  let line: CommandLine;
  try {
    line = parseCommandLine(argv);
  } catch (error) {
    return refuse(io, error);
  }
  if ("usage" in line) {
    io.stdout(`${ADMIN_USAGE}\n`);
    return line.usage;
  }
  const { command, json, migrates } = line;
  const { context, close } = await open();
  try {
    if (!migrates && !(await context.db.isReady())) {
      throw new AdminError("migrations are pending: run `npm run admin -- migrate` first");
    }
    const output = await command(context);
    io.stdout(json ? `${JSON.stringify(output.json, null, 2)}\n` : `${output.text.join("\n")}\n`);
    return 0;
  } catch (error) {
    return refuse(io, error);
  } finally {
    await close();
  }
};

const refuse = (io: AdminIo, error: unknown): number => {
  io.stderr(`admin: ${error instanceof Error ? error.message : String(error)}\n`);
  return error instanceof AdminError ? 2 : 1;
};

/** A command to run, or the usage to print with its exit code (asked for: 0; no command: 2). */
type CommandLine = { command: Command; json: boolean; migrates: boolean } | { usage: 0 | 2 };

const parseCommandLine = (argv: string[]): CommandLine => {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    // An unknown option or a missing value: the same one line and code as any other bad input.
    throw new AdminError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) return { usage: values.help ? 0 : 2 };
  const [name, sub, arg] = positionals;
  const run = (command: Command) => ({ command, json: values.json ?? false, migrates: name === "migrate" });
  if (name === "migrate") return run(migrateCommand);
  if (name === "status") return run(statusCommand);
  if (name === "jobs" && sub === "failed") return run((c) => failedJobsCommand(c, values.queue));
  if (name === "jobs" && sub === "retry" && arg) return run((c) => retryJobCommand(c, arg));
  if (name === "org" && sub === "create") {
    const orgName = values.name;
    if (!orgName) throw new AdminError("org create needs --name");
    return run((c) => createOrganizationCommand(c, orgName, values["owner-email"]));
  }
  if (name === "apikey" && sub === "create") {
    const org = values.org;
    if (!org) throw new AdminError("apikey create needs --org <organization id>");
    const scopes = parseKeyScopes(values.scopes);
    return run((c) => createApiKeyCommand(c, org, values.name, scopes));
  }
  if (name === "tunnel" && sub === "clear-pin" && arg) return run((c) => clearTunnelPinCommand(c, arg));
  throw new AdminError(ADMIN_USAGE);
};

const parse = (argv: string[]) =>
  parseArgs({
    args: argv,
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
