import { readFileSync } from "node:fs";
import path from "node:path";
import { isWireguardKey, type TunnelModeEnv, wireguardPublicKey } from "@fleet/shared";

/** Where the tunnel agent keeps the hub's dev key (apps/tunnel-agent/src/wireguard/hub-key.ts writes it). */
export const HUB_KEY_FILE = path.join("tunnel-agent", "wireguard-hub.key");

/**
 * The hub's public key for adoption scripts (docs/routeros.md "The management tunnel"):
 * `TUNNEL_WG_PUBLIC_KEY`, else derived from `TUNNEL_WG_PRIVATE_KEY`, else from the dev key the
 * agent generates in DATA_DIR. Returns a function: the dev key may appear after the API started.
 */
export const hubPublicKeySource = (tunnel: TunnelModeEnv, dataDir: string): (() => string | undefined) => {
  if (tunnel.mode !== "wireguard") return () => undefined;
  const configured = tunnel.publicKey ?? (tunnel.privateKey ? wireguardPublicKey(tunnel.privateKey) : undefined);
  if (configured) return () => configured;
  let found: string | undefined;
  return () => {
    if (found || dataDir === "memory") return found;
    try {
      const text = readFileSync(path.resolve(dataDir, HUB_KEY_FILE), "utf8").trim();
      if (isWireguardKey(text)) found = wireguardPublicKey(text);
    } catch {
      // Not generated yet: the agent makes it at its start.
    }
    return found;
  };
};
