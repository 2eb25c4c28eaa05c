import { parseTunnelNetwork, type TunnelNetwork, tunnelHostAt } from "../rules/tunnel-network.ts";
import { ConfigError, envOptional, envPort, envString, type TEnv } from "./env-parsers.ts";
import { envTunnelModeName } from "./tunnel-mode-env.ts";

/**
 * `TUNNEL_NETWORK` (docs/operations.md "Configuration"), read by the API (assigns addresses) and the
 * tunnel agent. `TUNNEL_MODE=wireguard` keeps this default in development too.
 */
export const DEFAULT_TUNNEL_NETWORK = "100.64.0.0/10";

/**
 * The development default (NODE_ENV not `production`): a loopback network, so `npm start` and
 * `npm run simulate` work together on one machine without root (docs/routeros.md "Simulator").
 */
export const DEVELOPMENT_TUNNEL_NETWORK = "127.64.0.0/10";

/** `TUNNEL_SSH_PORT` defaults: 22 in production, an unprivileged port in development. */
export const DEFAULT_TUNNEL_SSH_PORT = 22;
export const DEVELOPMENT_TUNNEL_SSH_PORT = 2222;

/** True unless `NODE_ENV=production`: the development defaults of docs/operations.md "Configuration" apply. */
export const isDevelopmentEnv = (env: TEnv): boolean => envOptional(env, "NODE_ENV") !== "production";

export const envTunnelNetwork = (env: TEnv): TunnelNetwork => {
  // With the system's own WireGuard hub the tunnel is real, so development keeps the production
  // network too (docs/operations.md "Configuration"); else development uses a loopback network.
  const wireguard = envTunnelModeName(env) === "wireguard";
  const fallback = isDevelopmentEnv(env) && !wireguard ? DEVELOPMENT_TUNNEL_NETWORK : DEFAULT_TUNNEL_NETWORK;
  const parsed = parseTunnelNetwork(envString(env, "TUNNEL_NETWORK", fallback));
  if (typeof parsed === "string") throw new ConfigError("TUNNEL_NETWORK", parsed);
  // With the system's own hub, its address is never assigned to a router (validated by loadTunnelModeEnv).
  if (wireguard) {
    return { ...parsed, reserved: [envString(env, "TUNNEL_HUB_ADDRESS", tunnelHostAt(parsed, 0))] };
  }
  return parsed;
};

/** `TUNNEL_SSH_PORT`, read alike by the tunnel agent and the simulator so the two agree without flags. */
export const envTunnelSshPort = (env: TEnv): number =>
  envPort(env, "TUNNEL_SSH_PORT", isDevelopmentEnv(env) ? DEVELOPMENT_TUNNEL_SSH_PORT : DEFAULT_TUNNEL_SSH_PORT, false);

/**
 * On a loopback tunnel network (the development default, where simulated routers listen on their
 * 127.x tunnel addresses), the agent's own address in it: the network's first host address. The
 * agent connects from there, as it would from its tunnel address, because adopted routers admit
 * its user only from TUNNEL_NETWORK. Undefined for any other network (the route decides).
 */
export const loopbackAgentAddress = (network: TunnelNetwork): string | undefined =>
  network.cidr.startsWith("127.") && network.prefix >= 8 ? tunnelHostAt(network, 0) : undefined;
