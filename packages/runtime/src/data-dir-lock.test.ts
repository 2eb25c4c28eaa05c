import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DataDirLockedError, lockDataDir } from "./data-dir-lock.ts";

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "h21-lock-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A live process that is not this one: the lock's owner in the refusal tests. */
const otherProcess = async () => {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  await once(child, "spawn");
  return child;
};

describe("DATA_DIR lock of the embedded database", () => {
  it("refuses a DATA_DIR another live process holds, with one line naming it and the pid", async () => {
    const dir = tempDir();
    const other = await otherProcess();
    try {
      writeFileSync(path.join(dir, "pglite.lock"), String(other.pid));
      const error = (() => {
        try {
          lockDataDir(dir);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(DataDirLockedError);
      expect((error as Error).message).toContain(`DATA_DIR ${dir}`);
      expect((error as Error).message).toContain(`process ${other.pid}`);
      expect((error as Error).message).not.toContain("\n");
      // The holder's lock is left alone.
      expect(readFileSync(path.join(dir, "pglite.lock"), "utf8")).toBe(String(other.pid));
    } finally {
      other.kill();
    }
  });

  it("takes over a lock whose process is gone, and removes its own on release", async () => {
    const dir = tempDir();
    const gone = await otherProcess();
    gone.kill();
    await once(gone, "exit");
    writeFileSync(path.join(dir, "pglite.lock"), String(gone.pid));
    const release = lockDataDir(dir);
    expect(readFileSync(path.join(dir, "pglite.lock"), "utf8")).toBe(String(process.pid));
    release();
    expect(existsSync(path.join(dir, "pglite.lock"))).toBe(false);
  });
});
