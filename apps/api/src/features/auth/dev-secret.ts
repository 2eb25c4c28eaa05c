import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * The development HS256 key: generated once and kept in DATA_DIR so tokens survive restarts and
 * every process of one machine agrees (docs/operations.md "Configuration"). `memory` keeps it in this process only.
 */
export const resolveDevJwtSecret = (dataDir: string, fileName = "jwt-secret"): string => {
  if (dataDir === "memory") return randomBytes(32).toString("base64url");
  const file = path.resolve(dataDir, fileName);
  try {
    const existing = readFileSync(file, "utf8").trim();
    if (existing.length >= 32) return existing;
  } catch {
    // First start: fall through and create it.
  }
  mkdirSync(path.dirname(file), { recursive: true });
  const secret = randomBytes(48).toString("base64url");
  try {
    // "wx": a process racing us wrote it first; theirs wins.
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: "wx" });
    return secret;
  } catch {
    return readFileSync(file, "utf8").trim();
  }
};
