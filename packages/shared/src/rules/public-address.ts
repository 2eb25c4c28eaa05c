import ipaddr from "ipaddr.js";

/**
 * True when an IPv4 or IPv6 address is publicly routed: not loopback, private, link-local,
 * carrier-grade NAT, unique-local, multicast, documentation or otherwise reserved. IPv4-mapped IPv6
 * addresses are judged as the IPv4 address they carry (a known SSRF bypass otherwise).
 * Outbound webhooks use it (docs/api.md "Audit log and webhooks").
 */
export const isPubliclyRoutedAddress = (address: string): boolean => {
  if (!ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  if (ip.kind() === "ipv4") {
    const v4 = ip as ipaddr.IPv4;
    for (const cidr of ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"]) {
      if (v4.match(ipaddr.IPv4.parseCIDR(cidr))) return false;
    }
    return v4.range() === "unicast";
  }
  return ip.range() === "unicast";
};
