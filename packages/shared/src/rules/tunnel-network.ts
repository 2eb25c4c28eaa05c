import ipaddr from "ipaddr.js";
import { isCanonicalIpv4 } from "./ipv4-rules.ts";

/**
 * The management tunnel's network (TUNNEL_NETWORK, docs/operations.md "Configuration"): every
 * router's tunnel address is one of its host addresses, assigned by the system
 * (docs/api.md "Routers and heartbeats").
 */
export interface TunnelNetwork {
  /** Canonical `a.b.c.d/len` (host bits cleared). */
  cidr: string;
  /** First address of the network as an unsigned 32-bit number. */
  base: number;
  prefix: number;
  /**
   * Host addresses never given to a router: in `TUNNEL_MODE=wireguard`, the hub's own address
   * (`TUNNEL_HUB_ADDRESS`, docs/operations.md "The management tunnel").
   */
  reserved?: readonly string[];
}

/** Prefixes longer than /30 leave no usable host address besides network and broadcast. */
export const TUNNEL_NETWORK_MAX_PREFIX = 30;

const toNumber = (ip: string): number =>
  ipaddr.IPv4.parse(ip)
    .toByteArray()
    .reduce((n, b) => n * 256 + b, 0);

const toDotted = (n: number): string => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".");

/** Parses an IPv4 CIDR; an error text when it is not one (or too small to hold routers). */
export const parseTunnelNetwork = (text: string): TunnelNetwork | string => {
  const [address, prefixText, ...rest] = text.split("/");
  if (address === undefined || prefixText === undefined || rest.length > 0 || !/^\d{1,2}$/.test(prefixText)) {
    return `must be an IPv4 network like 100.64.0.0/10, got "${text}"`;
  }
  if (!isCanonicalIpv4(address)) return `must be an IPv4 network like 100.64.0.0/10, got "${text}"`;
  const prefix = Number(prefixText);
  if (prefix < 1 || prefix > TUNNEL_NETWORK_MAX_PREFIX) {
    return `must have a prefix length between /1 and /${TUNNEL_NETWORK_MAX_PREFIX}, got "${text}"`;
  }
  const size = 2 ** (32 - prefix);
  const base = toNumber(address) - (toNumber(address) % size);
  return { cidr: `${toDotted(base)}/${prefix}`, base, prefix };
};

/** Addresses a router may hold: the network's size minus its network and broadcast addresses. */
export const tunnelHostCount = (network: TunnelNetwork): number => 2 ** (32 - network.prefix) - 2;

/** The `index`-th host address (0-based), skipping the network address. */
export const tunnelHostAt = (network: TunnelNetwork, index: number): string => toDotted(network.base + 1 + index);

/** True for a canonical dotted-quad host address of the network (not its network or broadcast address). */
export const isTunnelHostAddress = (network: TunnelNetwork, value: string): boolean => {
  if (!isCanonicalIpv4(value)) return false;
  const offset = toNumber(value) - network.base;
  return offset >= 1 && offset <= tunnelHostCount(network);
};

/**
 * Why a router's tunnel address cannot be used, or null when it can: the one rule of tunnel
 * reachability (docs/api.md "Routers and heartbeats"). `none`: no address assigned (adoption not
 * finished, or migration 008 left it without one); `outside_network`: an address that is not a host
 * address of TUNNEL_NETWORK (the network changed), which nothing ever connects to. Without a
 * network only the first applies. The API answers 409 for either; the agent and the relay refuse
 * to connect. `ForwardTargetsRepository.routersWithoutReachableTunnel` is its SQL twin for the
 * start-up report.
 */
export const tunnelAddressProblem = (
  network: TunnelNetwork | undefined,
  tunnelIp: string | null | undefined,
): "none" | "outside_network" | null => {
  if (!tunnelIp) return "none";
  if (network && !isTunnelHostAddress(network, tunnelIp)) return "outside_network";
  return null;
};
