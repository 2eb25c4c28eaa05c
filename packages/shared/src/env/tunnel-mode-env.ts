import ipaddr from "ipaddr.js";
import { isWireguardKey } from "../crypto/wireguard-keys.ts";
import { isTunnelHostAddress, type TunnelNetwork, tunnelHostAt } from "../rules/tunnel-network.ts";
import { ConfigError, envOptional, envPort, envString, type TEnv } from "./env-parsers.ts";

/** `TUNNEL_WG_IMPLEMENTATION`: Linux WireGuard, `wireguard-go`, or the kernel's when it has it. */
export type WireguardImplementation = "kernel" | "userspace" | "auto";

/**
 * `TUNNEL_MODE=wireguard` (docs/operations.md "The management tunnel"): the system runs a WireGuard
 * hub that every router dials; a router's tunnel address is bound to its device key.
 */
export interface WireguardTunnelEnv {
  mode: "wireguard";
  /** `TUNNEL_WG_ENDPOINT`: `host:port` routers dial (UDP), as written into adoption scripts. */
  endpoint: { host: string; port: number };
  /** `TUNNEL_WG_PORT`: the UDP port the hub listens on. */
  listenPort: number;
  /** `TUNNEL_WG_INTERFACE`: the hub's interface name (also its wireguard-go socket name). */
  interfaceName: string;
  implementation: WireguardImplementation;
  /** `TUNNEL_WG_PRIVATE_KEY` (base64; never logged); undefined: dev key generated once in DATA_DIR. */
  privateKey: string | undefined;
  /**
   * `TUNNEL_WG_PUBLIC_KEY`: the hub's public key, for an API started alone (it never needs the
   * private key); unset: derived from TUNNEL_WG_PRIVATE_KEY or the dev key in DATA_DIR.
   */
  publicKey: string | undefined;
  /** `TUNNEL_HUB_ADDRESS`: the hub's own address inside TUNNEL_NETWORK; never given to a router. */
  hubAddress: string;
}

export type TunnelModeEnv = { mode: "external" } | WireguardTunnelEnv;

/** Linux interface names: at most 15 bytes, no `/`, whitespace or `:`; kept to a safe alphabet. */
const INTERFACE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$/;
const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** `TUNNEL_MODE` alone, for parsers that only need to know which mode is on. */
export const envTunnelModeName = (env: TEnv): "external" | "wireguard" => {
  const mode = envString(env, "TUNNEL_MODE", "external").toLowerCase();
  if (mode !== "external" && mode !== "wireguard") {
    throw new ConfigError("TUNNEL_MODE", `must be external or wireguard, got "${mode}"`);
  }
  return mode;
};

const parseEndpoint = (raw: string | undefined): { host: string; port: number } => {
  const problem = `must be host:port that routers dial over UDP, such as hub.example.net:51820, got "${raw ?? ""}"`;
  if (raw === undefined)
    throw new ConfigError("TUNNEL_WG_ENDPOINT", "must be set with TUNNEL_MODE=wireguard (host:port routers dial)");
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(raw);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (!match || !host || port < 1 || port > 65535) throw new ConfigError("TUNNEL_WG_ENDPOINT", problem);
  if (!HOSTNAME.test(host) && !ipaddr.isValid(host)) throw new ConfigError("TUNNEL_WG_ENDPOINT", problem);
  return { host, port };
};

/**
 * The tunnel mode and, in `wireguard` mode, the hub's settings (CONTRACT-level defaults:
 * docs/operations.md "The management tunnel"). `network` is the parsed `TUNNEL_NETWORK`.
 */
export const loadTunnelModeEnv = (env: TEnv, network: TunnelNetwork): TunnelModeEnv => {
  if (envTunnelModeName(env) === "external") return { mode: "external" };
  const implementation = envString(env, "TUNNEL_WG_IMPLEMENTATION", "auto").toLowerCase();
  if (implementation !== "kernel" && implementation !== "userspace" && implementation !== "auto") {
    throw new ConfigError("TUNNEL_WG_IMPLEMENTATION", `must be kernel, userspace or auto, got "${implementation}"`);
  }
  const interfaceName = envString(env, "TUNNEL_WG_INTERFACE", "fleet-wg");
  if (!INTERFACE_NAME.test(interfaceName)) {
    throw new ConfigError("TUNNEL_WG_INTERFACE", "must be an interface name of 1-15 letters, digits, '_', '.' or '-'");
  }
  const privateKey = envOptional(env, "TUNNEL_WG_PRIVATE_KEY");
  if (privateKey !== undefined && !isWireguardKey(privateKey)) {
    // Never echo the value: it is the hub's private key.
    throw new ConfigError(
      "TUNNEL_WG_PRIVATE_KEY",
      "must be a WireGuard private key (base64 of 32 bytes, as `wg genkey` prints)",
    );
  }
  const publicKey = envOptional(env, "TUNNEL_WG_PUBLIC_KEY");
  if (publicKey !== undefined && !isWireguardKey(publicKey)) {
    throw new ConfigError(
      "TUNNEL_WG_PUBLIC_KEY",
      "must be a WireGuard public key (base64 of 32 bytes, as `wg pubkey` prints)",
    );
  }
  const hubAddress = envString(env, "TUNNEL_HUB_ADDRESS", tunnelHostAt(network, 0));
  if (!isTunnelHostAddress(network, hubAddress)) {
    throw new ConfigError(
      "TUNNEL_HUB_ADDRESS",
      `must be a host address inside TUNNEL_NETWORK ${network.cidr}, got "${hubAddress}"`,
    );
  }
  return {
    mode: "wireguard",
    endpoint: parseEndpoint(envOptional(env, "TUNNEL_WG_ENDPOINT")),
    listenPort: envPort(env, "TUNNEL_WG_PORT", 51820, false),
    interfaceName,
    implementation,
    privateKey,
    publicKey,
    hubAddress,
  };
};
