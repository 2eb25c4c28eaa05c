import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import ssh2 from "ssh2";
import { generateEd25519KeyPair } from "@fleet/shared";

export interface AgentKey {
  /** OpenSSH private key text; never logged. */
  privateKey: string;
  /** `ssh-ed25519 AAAA...` line to put in a router's authorized keys. */
  publicKey: string;
}

const publicOf = (privateKey: string, source: string): string => {
  const parsed = ssh2.utils.parseKey(privateKey);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key instanceof Error) {
    throw new Error(
      `TUNNEL_SSH_KEY: ${source} is not a usable private key${key instanceof Error ? ` (${key.message})` : ""}`,
    );
  }
  return `${key.type} ${key.getPublicSSH().toString("base64")}`;
};

const generate = (): AgentKey => {
  const pair = generateEd25519KeyPair();
  return { privateKey: pair.private, publicKey: pair.public.trim() };
};

/**
 * The key the agent logs in to routers with (docs/operations.md "Configuration" `TUNNEL_SSH_KEY`): the given file,
 * else a dev ed25519 key generated once in DATA_DIR (with a `.pub` beside it for the routers), or a
 * per-process key when DATA_DIR is `memory`.
 */
export const resolveAgentKey = (keyFile: string | undefined, dataDir: string): AgentKey => {
  if (keyFile) {
    const privateKey = readFileSync(keyFile, "utf8");
    return { privateKey, publicKey: publicOf(privateKey, keyFile) };
  }
  if (dataDir === "memory") return generate();
  const file = path.resolve(dataDir, "tunnel-agent", "id_ed25519");
  try {
    const privateKey = readFileSync(file, "utf8");
    return { privateKey, publicKey: publicOf(privateKey, file) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const key = generate();
  try {
    // "wx": an agent starting beside us wrote it first; theirs wins.
    writeFileSync(file, key.privateKey, { mode: 0o600, flag: "wx" });
    writeFileSync(`${file}.pub`, `${key.publicKey} fleet-tunnel-agent\n`);
    chmodSync(file, 0o600);
    return key;
  } catch {
    const privateKey = readFileSync(file, "utf8");
    return { privateKey, publicKey: publicOf(privateKey, file) };
  }
};
