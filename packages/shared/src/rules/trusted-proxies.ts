import ipaddr from "ipaddr.js";

/**
 * `TRUST_PROXY` (docs/operations.md "Configuration"): the proxies whose `X-Forwarded-For` names the
 * client. Default: none, so a client can never choose the address it is counted and audited under.
 */
export interface TrustedProxies {
  /** As configured, for logs. */
  readonly cidrs: readonly string[];
  contains(address: string): boolean;
}

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** An address as ipaddr.js reads it, IPv4-mapped IPv6 (`::ffff:a.b.c.d`) taken as the IPv4 inside. */
const parseAddress = (text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined => {
  if (!ipaddr.isValid(text)) return undefined;
  const address = ipaddr.parse(text);
  return address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
};

export const NO_TRUSTED_PROXIES: TrustedProxies = { cidrs: [], contains: () => false };

/** A comma-separated list of addresses or CIDRs; the problem as text when one is not. */
export const parseTrustedProxies = (text: string): TrustedProxies | string => {
  const cidrs = text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "");
  const ranges: Range[] = [];
  for (const cidr of cidrs) {
    try {
      if (cidr.includes("/")) {
        ranges.push(ipaddr.parseCIDR(cidr) as Range);
      } else {
        const address = parseAddress(cidr);
        if (!address) return `"${cidr}" is not an address or CIDR`;
        ranges.push([address, address.kind() === "ipv4" ? 32 : 128]);
      }
    } catch {
      return `"${cidr}" is not an address or CIDR`;
    }
  }
  return {
    cidrs,
    contains: (text: string) => {
      const address = parseAddress(text);
      if (!address) return false;
      return ranges.some(
        ([network, bits]) => address.kind() === network.kind() && address.match([network, bits] as never),
      );
    },
  };
};

/**
 * The client of a request: the socket's peer, unless that peer is a trusted proxy; then the
 * `X-Forwarded-For` entries are read from the right (each proxy appends the address it saw), and
 * the first one that is not itself a trusted proxy is the client. A malformed entry ends the walk
 * at the last address known to be true.
 */
export const clientAddress = (
  peer: string | undefined,
  forwardedFor: string | readonly string[] | undefined,
  trusted: TrustedProxies,
): string | undefined => {
  if (peer === undefined || forwardedFor === undefined || !trusted.contains(peer)) return peer;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : (forwardedFor as string))
    .split(",")
    .map((hop) => hop.trim());
  let client = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i] ?? "";
    const address = parseAddress(hop);
    if (!address) return client;
    client = address.toString();
    if (!trusted.contains(client)) return client;
  }
  return client;
};
