import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { dataDirSecret } from "./data-dir-secret.ts";

const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "fleet-secret-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("dataDirSecret", () => {
  it("creates the key once, readable by its owner only, and every later call (another process) reads the same", () => {
    const dir = freshDir();
    const first = dataDirSecret(dir, "accessPassword");
    expect(first.length).toBeGreaterThanOrEqual(32);
    const file = path.join(dir, "access-password-key");
    expect(readFileSync(file, "utf8").trim()).toBe(first);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(dataDirSecret(dir, "accessPassword")).toBe(first);
    expect(dataDirSecret(dir, "jwt")).not.toBe(first);
  });

  it("refuses a file too short to be a key (31 characters), naming it, and keeps one of 32", () => {
    const dir = freshDir();
    writeFileSync(path.join(dir, "jwt-secret"), `${"a".repeat(31)}\n`);
    expect(() => dataDirSecret(dir, "jwt")).toThrow(`${path.join(dir, "jwt-secret")} holds no key`);
    const kept = freshDir();
    writeFileSync(path.join(kept, "jwt-secret"), `${"b".repeat(32)}\n`);
    expect(dataDirSecret(kept, "jwt")).toBe("b".repeat(32));
  });

  it("DATA_DIR=memory: one value per key for the process, so the API and the agent of one process agree", () => {
    expect(dataDirSecret("memory", "accessPassword")).toBe(dataDirSecret("memory", "accessPassword"));
    expect(dataDirSecret("memory", "accessPassword")).not.toBe(dataDirSecret("memory", "webhookEncryption"));
  });
});
