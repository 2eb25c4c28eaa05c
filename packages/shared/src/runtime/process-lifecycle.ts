import { ConfigError } from "../env/env-parsers.ts";

/**
 * Loads configuration or stops the process with the single line docs/operations.md "Configuration" asks for
 * ("one clear line naming the variable"). Any other error is a bug and propagates.
 */
export const loadConfigOrExit = <T>(load: () => T): T => {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
};

/**
 * Start-up that can still meet a configuration problem only the running system finds (a WireGuard
 * hub interface that cannot be created, docs/operations.md "The management tunnel"): a ConfigError
 * stops the process with its one line, naming the variable; any other error propagates.
 */
export const startOrExit = async <T>(start: () => Promise<T>): Promise<T> => {
  try {
    return await start();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
};

/**
 * Graceful shutdown (docs/operations.md "Commands"): on the first SIGINT or SIGTERM, run `close` once (stop
 * accepting, finish in-flight work, close the database), then exit 0; exit 1 if closing failed.
 */
export const closeOnSignals = (close: () => Promise<void>, onSignal?: (signal: string) => void): void => {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    onSignal?.(signal);
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`shutdown failed: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
};

/**
 * A start-up failure the operator can fix, told in one line (the embedded database already open
 * by another process, say): printed as is by {@link exitOnStartupError}, without a stack trace.
 */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StartupError";
  }
}

/**
 * The one line for a start-up failure the operator can fix, or undefined for a bug: a bad
 * variable, a port in use or not allowed (named by the variable that set it, from `ports`), a
 * {@link StartupError}.
 */
export const startupErrorLine = (error: unknown, ports: Readonly<Record<string, number>> = {}): string | undefined => {
  if (error instanceof ConfigError || error instanceof StartupError) return error.message;
  const e = error as NodeJS.ErrnoException & { port?: number; address?: string };
  if (e?.syscall !== "listen" || (e.code !== "EADDRINUSE" && e.code !== "EACCES")) return undefined;
  const variable = Object.entries(ports).find(([, port]) => port === e.port)?.[0];
  const where = `${e.address ?? "?"}:${e.port ?? "?"}`;
  const fix = variable ? `set ${variable} to another port` : "choose another port";
  return e.code === "EADDRINUSE"
    ? `Cannot start: ${variable ? `${variable}=${e.port}: ` : ""}${where} is already in use (another npm start?); ${fix}.`
    : `Cannot start: ${variable ? `${variable}=${e.port}: ` : ""}${where} needs privileges to bind (ports below 1024); ${fix}.`;
};

/** For a main's start-up: prints the one line of {@link startupErrorLine} and exits 1, or rethrows a bug. */
export const exitOnStartupError = (error: unknown, ports: Readonly<Record<string, number>> = {}): never => {
  const line = startupErrorLine(error, ports);
  if (line === undefined) throw error;
  process.stderr.write(`${line}\n`);
  process.exit(1);
};
