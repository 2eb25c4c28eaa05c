import { parseTunnelNetwork, type TunnelNetwork } from "../rules/tunnel-network.ts";
import { ConfigError, envString, type TEnv } from "./env-parsers.ts";

/** `TUNNEL_NETWORK` (docs/operations.md "Configuration"), read by the API (assigns addresses) and the tunnel agent. */
export const DEFAULT_TUNNEL_NETWORK = "100.64.0.0/10";

export const envTunnelNetwork = (env: TEnv): TunnelNetwork => {
  const parsed = parseTunnelNetwork(envString(env, "TUNNEL_NETWORK", DEFAULT_TUNNEL_NETWORK));
  if (typeof parsed === "string") throw new ConfigError("TUNNEL_NETWORK", parsed);
  return parsed;
};
