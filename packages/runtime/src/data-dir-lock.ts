import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { StartupError } from "@fleet/shared";

/**
 * Embedded PGlite is one process's database: a second process opening the same files corrupts
 * them or dies inside PGlite. `DATA_DIR/pglite.lock` holds the owner's pid; a second process is
 * refused with one line (docs/operations.md "Commands"), a lock whose process is gone is taken over.
 */
export class DataDirLockedError extends StartupError {
  constructor(dataDir: string, pid: number) {
    super(
      `Cannot start: DATA_DIR ${dataDir} (embedded PGlite) is already open by process ${pid}. ` +
        "Stop that process, give this one its own DATA_DIR, or use PostgreSQL (DATABASE_URL), which several processes share.",
    );
    this.name = "DataDirLockedError";
  }
}

const held = new Map<string, number>();

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Takes the lock of `dataDir` (a directory that exists) for this process; answers its release. */
export const lockDataDir = (dataDir: string): (() => void) => {
  const file = path.join(dataDir, "pglite.lock");
  const count = held.get(file) ?? 0;
  if (count === 0) acquire(file, dataDir);
  held.set(file, count + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (held.get(file) ?? 1) - 1;
    if (left > 0) {
      held.set(file, left);
      return;
    }
    held.delete(file);
    try {
      if (Number(readFileSync(file, "utf8")) === process.pid) unlinkSync(file);
    } catch {
      // Already gone.
    }
  };
};

const acquire = (file: string, dataDir: string): void => {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const owner = Number(readFileSync(file, "utf8").trim());
    if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner)) {
      throw new DataDirLockedError(dataDir, owner);
    }
    // Left behind by a process that is gone (or by this one before a restart in place): take it over.
    unlinkSync(file);
  }
  throw new StartupError(`Cannot start: could not take the lock ${file}; remove it if no process uses DATA_DIR.`);
};
