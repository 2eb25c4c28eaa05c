import ipaddr from "ipaddr.js";

const DOCUMENTATION_V4 = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"].map((cidr) =>
  ipaddr.IPv4.parseCIDR(cidr),
);

const ipv4From = (high: number, low: number): ipaddr.IPv4 =>
  new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

/**
 * The IPv4 address an IPv6 address carries, when it is one of the forms that reach an IPv4 host
 * (docs/api.md "Audit log and webhooks"): IPv4-compatible `::a.b.c.d` (all of ::/96, so `::` and
 * `::1` too), IPv4-mapped `::ffff:a.b.c.d`, the SIIT form `::ffff:0:a.b.c.d`, the NAT64 well-known
 * prefix 64:ff9b::/96 and 6to4 2002:AABB:CCDD::/48. Undefined for any other IPv6 address.
 */
export const embeddedIPv4 = (ip: ipaddr.IPv6): ipaddr.IPv4 | undefined => {
  const p = ip.parts;
  const [p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0, p6 = 0, p7 = 0] = p;
  const upper64Zero = p0 === 0 && p1 === 0 && p2 === 0 && p3 === 0;
  if (upper64Zero && p4 === 0 && (p5 === 0 || p5 === 0xffff)) return ipv4From(p6, p7);
  if (upper64Zero && p4 === 0xffff && p5 === 0) return ipv4From(p6, p7);
  if (p0 === 0x64 && p1 === 0xff9b && p2 === 0 && p3 === 0 && p4 === 0 && p5 === 0) return ipv4From(p6, p7);
  if (p0 === 0x2002) return ipv4From(p1, p2);
  return undefined;
};

const isPublicIPv4 = (v4: ipaddr.IPv4): boolean =>
  v4.range() === "unicast" && !DOCUMENTATION_V4.some((cidr) => v4.match(cidr));

/**
 * True when an IPv4 or IPv6 address is publicly routed: not loopback, private, link-local,
 * carrier-grade NAT, unique-local, multicast, documentation or otherwise reserved. An IPv6
 * address that embeds an IPv4 address (see {@link embeddedIPv4}) is judged as the IPv4 address it
 * carries, a known SSRF bypass otherwise (`https://[::127.0.0.1]/` reaches loopback on some
 * stacks, NAT64 and 6to4 relays reach the IPv4 inside). Outbound webhooks use it (docs/api.md
 * "Audit log and webhooks").
 */
export const isPubliclyRoutedAddress = (address: string): boolean => {
  if (!ipaddr.isValid(address)) return false;
  const ip = ipaddr.parse(address);
  if (ip.kind() === "ipv4") return isPublicIPv4(ip as ipaddr.IPv4);
  const v6 = ip as ipaddr.IPv6;
  const inside = embeddedIPv4(v6);
  if (inside) return isPublicIPv4(inside);
  return v6.range() === "unicast";
};
