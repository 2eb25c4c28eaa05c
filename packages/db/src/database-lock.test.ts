import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DataDirLockedError } from "@fleet/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "./database.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// The lock itself is tested in @fleet/runtime (data-dir-lock.test.ts); here, that the embedded database takes it.
describe("DATA_DIR lock of the embedded database", () => {
  it("openDatabase refuses a held DATA_DIR before PGlite touches its files", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "h21-lock-"));
    dirs.push(dir);
    const other = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    await once(other, "spawn");
    try {
      writeFileSync(path.join(dir, "pglite.lock"), String(other.pid));
      await expect(openDatabase({ databaseUrl: undefined, dataDir: dir })).rejects.toBeInstanceOf(DataDirLockedError);
      expect(existsSync(path.join(dir, "pglite", "PG_VERSION"))).toBe(false);
    } finally {
      other.kill();
    }
  });
});
