import { parseTunnelNetwork, type TunnelNetwork, tunnelHostAt } from "../rules/tunnel-network.ts";
import { ConfigError, envString, type TEnv } from "./env-parsers.ts";
import { envTunnelModeName } from "./tunnel-mode-env.ts";

/**
 * `TUNNEL_NETWORK` (docs/operations.md "Configuration"), read by the API (assigns addresses) and the
 * tunnel agent. `TUNNEL_MODE=wireguard` keeps this default in development too.
 */
export const DEFAULT_TUNNEL_NETWORK = "100.64.0.0/10";

export const envTunnelNetwork = (env: TEnv): TunnelNetwork => {
  const parsed = parseTunnelNetwork(envString(env, "TUNNEL_NETWORK", DEFAULT_TUNNEL_NETWORK));
  if (typeof parsed === "string") throw new ConfigError("TUNNEL_NETWORK", parsed);
  // With the system's own hub, its address is never assigned to a router (validated by loadTunnelModeEnv).
  if (envTunnelModeName(env) === "wireguard") {
    return { ...parsed, reserved: [envString(env, "TUNNEL_HUB_ADDRESS", tunnelHostAt(parsed, 0))] };
  }
  return parsed;
};
