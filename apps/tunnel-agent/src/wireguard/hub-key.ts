import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { generateWireguardKeyPair, isWireguardKey } from "@fleet/shared";

/** Beside the agent's SSH key; the API reads the public half from here (hub-public-key.ts). */
export const HUB_KEY_FILE = path.join("tunnel-agent", "wireguard-hub.key");

/**
 * The hub's private key (docs/operations.md "Configuration" `TUNNEL_WG_PRIVATE_KEY`): the
 * configured one, else a dev key generated once in DATA_DIR (mode 0600), or per process with
 * DATA_DIR=memory. Never logged.
 */
export const resolveHubPrivateKey = (configured: string | undefined, dataDir: string): string => {
  if (configured) return configured;
  if (dataDir === "memory") return generateWireguardKeyPair().privateKey;
  const file = path.resolve(dataDir, HUB_KEY_FILE);
  const read = (): string | undefined => {
    try {
      const text = readFileSync(file, "utf8").trim();
      if (!isWireguardKey(text)) throw new Error(`${file} does not hold a WireGuard private key`);
      return text;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  };
  const existing = read();
  if (existing) return existing;
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const { privateKey } = generateWireguardKeyPair();
  try {
    // "wx": another process beside us wrote it first; theirs wins.
    writeFileSync(file, `${privateKey}\n`, { mode: 0o600, flag: "wx" });
    chmodSync(file, 0o600);
    return privateKey;
  } catch {
    const other = read();
    if (!other) throw new Error(`could not create ${file}`);
    return other;
  }
};
