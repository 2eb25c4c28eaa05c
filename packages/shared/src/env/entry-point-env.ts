import ipaddr from "ipaddr.js";
import { ConfigError, envBool, envOptional, envPortRange, envString, type TEnv } from "./env-parsers.ts";
import { envTunnelNetwork } from "./tunnel-network-env.ts";
import { envTunnelModeName } from "./tunnel-mode-env.ts";

/**
 * The entry point of docs/operations.md "Configuration", read by the API (host and port range for new forwards)
 * and by the tunnel agent (where its relay listens). One parser so both read the same values.
 */
export interface EntryPointEnv {
  /** `ENTRY_POINT_HOST`: the hostname answered as `entry_point`, and the key ports are unique under. */
  host: string;
  /** `ENTRY_POINT_BIND`: the address the relay listens on. */
  bind: string;
  /** `ENTRY_POINT_PORTS`: inclusive range a forward's `port` is allocated from. */
  ports: readonly [number, number];
  /** `ENTRY_POINT_PROXY_PROTOCOL`: every relay connection starts with a PROXY v1/v2 header. */
  proxyProtocol: boolean;
  /**
   * `ENTRY_POINT_TUNNEL_SOURCE`: the IPv4 address or CIDR the entry point reaches routers from,
   * normalized (host bits cleared, `/32` written as a bare address, as RouterOS prints it); every
   * dst-nat rule then carries `src-address=` with it. Undefined when unset.
   */
  tunnelSource: string | undefined;
}

/** Outside Linux's ephemeral range (32768-60999), so no outgoing connection ever holds a forward's port. */
export const DEFAULT_ENTRY_POINT_PORTS: readonly [number, number] = [61000, 61999];

const parseTunnelSource = (raw: string | undefined): string | undefined => {
  if (raw === undefined) return undefined;
  const problem = `must be an IPv4 address or CIDR such as 10.255.0.1 or 10.255.0.0/24, got "${raw}"`;
  const [address, prefixText, ...rest] = raw.split("/");
  if (address === undefined || rest.length > 0 || !ipaddr.IPv4.isValidFourPartDecimal(address)) {
    throw new ConfigError("ENTRY_POINT_TUNNEL_SOURCE", problem);
  }
  if (prefixText === undefined) return ipaddr.IPv4.parse(address).toString();
  if (!/^(?:3[0-2]|[12]?\d)$/.test(prefixText)) throw new ConfigError("ENTRY_POINT_TUNNEL_SOURCE", problem);
  const prefix = Number(prefixText);
  const network = ipaddr.IPv4.networkAddressFromCIDR(`${address}/${prefix}`).toString();
  return prefix === 32 ? network : `${network}/${prefix}`;
};

const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

export const loadEntryPointEnv = (env: TEnv): EntryPointEnv => {
  const host = envString(env, "ENTRY_POINT_HOST", "localhost");
  if (!HOSTNAME.test(host) && !ipaddr.isValid(host)) {
    throw new ConfigError("ENTRY_POINT_HOST", `must be a hostname or IP address, got "${host}"`);
  }
  const bind = envString(env, "ENTRY_POINT_BIND", "127.0.0.1");
  if (!ipaddr.isValid(bind)) {
    throw new ConfigError("ENTRY_POINT_BIND", `must be an IP address to listen on, got "${bind}"`);
  }
  return {
    host: host.toLowerCase(),
    bind,
    ports: envPortRange(env, "ENTRY_POINT_PORTS", DEFAULT_ENTRY_POINT_PORTS),
    proxyProtocol: envBool(env, "ENTRY_POINT_PROXY_PROTOCOL", false),
    // docs/operations.md "The management tunnel": with the system's hub, connections come from its address.
    tunnelSource:
      parseTunnelSource(envOptional(env, "ENTRY_POINT_TUNNEL_SOURCE")) ??
      (envTunnelModeName(env) === "wireguard" ? envTunnelNetwork(env).reserved?.[0] : undefined),
  };
};
