import ipaddr from "ipaddr.js";

/**
 * IPv4 rules of docs/api.md "Tunnel agent and entry point" (forward `dst_address` and `allow_from`). Everything here is a
 * pure function of its input. Only canonical dotted quads are accepted: inet_aton-style spellings
 * (`127.1`, `0x7f.0.0.1`, `017700000001`, `0`, `010.0.0.1`) are known filter bypasses, because two
 * parsers disagree about which address they name.
 */

/** What an IPv4 address is, for the purposes of a forward. */
export type TIpv4Class =
  | "public"
  | "private"
  | "loopback"
  | "link-local"
  | "multicast"
  | "carrier-grade NAT"
  | "documentation"
  | "reserved"
  | "unspecified"
  | "broadcast";

export type TIpRuleResult<T> = { ok: true; value: T } | { ok: false; message: string };

const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const QUAD = `${OCTET}(?:\\.${OCTET}){3}`;
const PREFIX = "(?:[0-9]|[12][0-9]|3[0-2])";
const CANONICAL_IPV4 = new RegExp(`^${QUAD}$`);
const CANONICAL_PREFIX = new RegExp(`^${PREFIX}$`);

/**
 * The one IPv4 pattern, for code that re-checks a value where it becomes code on a router (command
 * builders, generated scripts): a dotted quad of plain decimal parts 0-255 without leading zeros.
 */
export const IPV4_PATTERN: RegExp = CANONICAL_IPV4;
/** {@link IPV4_PATTERN} with a `/0`-`/32` prefix. */
export const IPV4_CIDR_PATTERN = new RegExp(`^${QUAD}/${PREFIX}$`);
/** An address or an address with a prefix ({@link IPV4_PATTERN}, {@link IPV4_CIDR_PATTERN}). */
export const IPV4_OR_CIDR_PATTERN = new RegExp(`^${QUAD}(?:/${PREFIX})?$`);

// RFC 5737. ipaddr.js files these under "reserved"; users deserve the precise reason.
const DOCUMENTATION: ReadonlyArray<[ipaddr.IPv4, number]> = [
  ipaddr.IPv4.parseCIDR("192.0.2.0/24"),
  ipaddr.IPv4.parseCIDR("198.51.100.0/24"),
  ipaddr.IPv4.parseCIDR("203.0.113.0/24"),
];

/** Smallest and largest prefix length `allow_from` may have (docs/api.md "Limits"). */
export const ALLOW_FROM_PREFIX = { min: 24, max: 32 } as const;

/** True only for `a.b.c.d` with each part 0-255 written in plain decimal without leading zeros. */
export const isCanonicalIpv4 = (value: string): boolean =>
  CANONICAL_IPV4.test(value) && ipaddr.IPv4.isValidFourPartDecimal(value);

/** Classifies a canonical IPv4 address (call {@link isCanonicalIpv4} first). */
export const classifyIpv4 = (value: string): TIpv4Class => {
  const ip = ipaddr.IPv4.parse(value);
  if (DOCUMENTATION.some((range) => ip.match(range))) return "documentation";
  switch (ip.range()) {
    case "unspecified":
      return "unspecified";
    case "broadcast":
      return "broadcast";
    case "multicast":
      return "multicast";
    case "linkLocal":
      return "link-local";
    case "loopback":
      return "loopback";
    case "carrierGradeNat":
      return "carrier-grade NAT";
    case "private":
      return "private";
    case "reserved":
      return "reserved";
    default:
      // "unicast", and the globally routed anycast blocks ipaddr.js names (as112, amt).
      return "public";
  }
};

const describeClass = (kind: TIpv4Class): string => {
  switch (kind) {
    case "loopback":
      return "a loopback address (127.0.0.0/8)";
    case "link-local":
      return "a link-local address (169.254.0.0/16)";
    case "multicast":
      return "a multicast address (224.0.0.0/4)";
    case "carrier-grade NAT":
      return "a carrier-grade NAT address (100.64.0.0/10)";
    case "documentation":
      return "a documentation address (RFC 5737)";
    case "reserved":
      return "a reserved address";
    case "unspecified":
      return "an unspecified address (0.0.0.0/8)";
    case "broadcast":
      return "the broadcast address";
    case "private":
      return "a private (RFC 1918) address";
    case "public":
      return "a public address";
  }
};

const NOT_CANONICAL =
  "must be an IPv4 address written as four decimal numbers 0-255 without leading zeros, like 192.168.88.10";

/**
 * `dst_address`: an RFC 1918 private or a publicly routed IPv4 address. Loopback, link-local,
 * multicast, CGNAT, documentation, reserved, 0.0.0.0/8 and broadcast are refused.
 */
export const checkDstAddress = (value: string): TIpRuleResult<string> => {
  if (!isCanonicalIpv4(value)) return { ok: false, message: NOT_CANONICAL };
  const kind = classifyIpv4(value);
  if (kind === "private" || kind === "public") return { ok: true, value };
  return {
    ok: false,
    message: `must be a private (RFC 1918) or publicly routed address; ${value} is ${describeClass(kind)}`,
  };
};

/**
 * `allow_from`: an address (meaning /32) or a CIDR with prefix /24../32, all of it publicly
 * routed (with `loopback`, a range inside 127.0.0.0/8 too: development only). Answers the normalized CIDR (host bits cleared), e.g. `8.8.8.77/24` -> `8.8.8.0/24`.
 */
export const normalizeAllowFrom = (value: string, options: { loopback?: boolean } = {}): TIpRuleResult<string> => {
  const parts = value.split("/");
  if (parts.length > 2) return { ok: false, message: "must be an IPv4 address or CIDR like 8.8.8.0/24" };
  const [address = "", prefixText] = parts;
  if (!isCanonicalIpv4(address)) {
    return { ok: false, message: `${NOT_CANONICAL}, optionally followed by /24 to /32` };
  }
  let prefix = 32;
  if (prefixText !== undefined) {
    if (!CANONICAL_PREFIX.test(prefixText)) {
      return { ok: false, message: "must have a prefix length written as a number between /24 and /32" };
    }
    prefix = Number(prefixText);
    if (prefix < ALLOW_FROM_PREFIX.min || prefix > ALLOW_FROM_PREFIX.max) {
      return {
        ok: false,
        message: `must have a prefix length between /${ALLOW_FROM_PREFIX.min} and /${ALLOW_FROM_PREFIX.max}, got /${prefix}`,
      };
    }
  }
  const network = ipaddr.IPv4.networkAddressFromCIDR(`${address}/${prefix}`).toString();
  const last = ipaddr.IPv4.broadcastAddressFromCIDR(`${address}/${prefix}`).toString();
  // Special ranges are all /24 or wider and aligned, but checking both ends costs nothing.
  for (const edge of [network, last]) {
    const kind = classifyIpv4(edge);
    if (kind !== "public" && !(kind === "loopback" && options.loopback))
      return allowFromRefused(`${network}/${prefix}`);
  }
  return { ok: true, value: `${network}/${prefix}` };
};

const allowFromRefused = (cidr: string): { ok: false; message: string } => ({
  ok: false,
  message: `must be a publicly routed range; ${cidr} is ${describeClass(classifyIpv4(cidr.split("/")[0] ?? ""))}`,
});

/**
 * The production rule for a normalized `allow_from` (docs/api.md "Tunnel agent and entry point"):
 * a loopback source, which development accepts so a forward can be tried from the same machine,
 * is refused with the message every other non-public range gets.
 */
export const refuseLoopbackAllowFrom = (cidr: string): TIpRuleResult<string> =>
  classifyIpv4(cidr.split("/")[0] ?? "") === "loopback" ? allowFromRefused(cidr) : { ok: true, value: cidr };

/** True when `address` (canonical IPv4, or IPv4-mapped IPv6 as sockets report it) lies in `cidr`. */
export const ipv4InCidr = (address: string, cidr: string): boolean => {
  try {
    const parsed = ipaddr.process(address);
    if (parsed.kind() !== "ipv4") return false;
    return (parsed as ipaddr.IPv4).match(ipaddr.IPv4.parseCIDR(cidr));
  } catch {
    return false;
  }
};
