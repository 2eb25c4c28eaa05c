import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { seedPgliteDataDir } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";

const root = path.resolve(import.meta.dirname, "../..");

export interface SystemProcess {
  child: ChildProcess;
  /** Everything the process wrote to stdout (JSON log lines) and stderr (banner). */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  dataDir: string;
  cleanup(): void;
}

/**
 * Runs an entry point (e.g. `npm start`'s) as a real process on the project's Node. `migrated`:
 * its PGlite DATA_DIR starts as a copy of the run's migrated template (seedPgliteDataDir), for a
 * test that is not about a first install.
 */
export const spawnSystem = (
  entry: string,
  env: Record<string, string>,
  options: { migrated?: boolean } = {},
): SystemProcess => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "fleet-"));
  if (options.migrated && !env.DATABASE_URL) seedPgliteDataDir(dataDir);
  const child = spawn(process.execPath, [path.join(root, entry)], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", DATA_DIR: dataDir, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    dataDir,
    cleanup: () => {
      if (child.exitCode === null) child.kill("SIGKILL");
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
};

/**
 * How long a start may take: ~3.5 s on a quiet 2-core machine, but a start at the suite's busiest
 * moment (the slow system files run first, three at once) once printed nothing for 60 s.
 */
export const START_TIMEOUT_MS = 120_000;

/** Waits until `pattern` appears in the process's stderr and returns its first group. */
export const waitForOutput = async (
  proc: SystemProcess,
  pattern: RegExp,
  timeoutMs = START_TIMEOUT_MS,
): Promise<string> => {
  const match = () => {
    const found = pattern.exec(proc.stderr());
    if (found) return found[1] ?? found[0];
    if (proc.child.exitCode !== null) throw new Error(`process exited (${proc.child.exitCode}): ${proc.stderr()}`);
    return undefined;
  };
  return eventually(match, String(pattern), timeoutMs).catch((error: Error) => {
    throw proc.child.exitCode !== null ? error : new Error(`${error.message}; stderr: ${proc.stderr()}`);
  });
};
