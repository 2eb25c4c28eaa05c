import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { StartupError } from "@fleet/shared";

/**
 * The keys a machine's processes keep in DATA_DIR when their variable is not set (development and
 * the all-in-one; production refuses to start without the variables, docs/operations.md
 * "Configuration"). One file per key, so every process of the machine derives the same values.
 */
export const DATA_DIR_SECRETS = {
  /** JWT_SECRET: the development HS256 key. */
  jwt: "jwt-secret",
  /** ACCESS_PASSWORD_KEY: the API shows and the tunnel agent sets the same derived password. */
  accessPassword: "access-password-key",
  /** WEBHOOK_ENCRYPTION_KEY: webhook signing secrets at rest. */
  webhookEncryption: "webhook-encryption-key",
  /** AUTH_SIGNING_KEY: the PKCS#8 PEM the API signs its own access tokens with (docs/api.md "Sign-in"). */
  authSigning: "auth-signing-key.pem",
} as const;

// DATA_DIR=memory: one value per key for the life of the process, so the API and the tunnel agent
// of one all-in-one process still agree.
const inMemory = new Map<string, string>();

/**
 * The key named `name`: read from DATA_DIR, or generated and written there (mode 0600) on first
 * use. Two processes racing to create it agree: the file is created exclusively and the loser reads it.
 * A file that holds no key (a truncated write) stops start-up rather than being replaced, which
 * would change the key under processes already using it.
 */
export const dataDirSecret = (
  dataDir: string,
  name: keyof typeof DATA_DIR_SECRETS,
  /** Makes a new key (default: 48 random bytes, base64url); a key pair's PEM for signing keys. */
  generate: () => string = () => randomBytes(48).toString("base64url"),
): string => {
  const fileName = DATA_DIR_SECRETS[name];
  if (dataDir === "memory") {
    const existing = inMemory.get(fileName) ?? generate();
    inMemory.set(fileName, existing);
    return existing;
  }
  const file = path.resolve(dataDir, fileName);
  try {
    const existing = readFileSync(file, "utf8").trim();
    if (existing.length >= 32) return existing;
  } catch {
    // First start: create it.
  }
  mkdirSync(path.dirname(file), { recursive: true });
  const secret = generate().trim();
  try {
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: "wx" });
    return secret;
  } catch {
    // The file exists: another process made it first (theirs wins), or it holds no key.
    const theirs = readFileSync(file, "utf8").trim();
    if (theirs.length >= 32) return theirs;
    throw new StartupError(
      `Cannot start: ${file} holds no key (under 32 characters). Delete it to have a new key made, or set the key's variable.`,
    );
  }
};
