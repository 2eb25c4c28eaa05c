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
