import { IPV4_PATTERN, isUuid } from "@fleet/shared";
// Builders for the only RouterOS commands the agent ever sends. Inputs were validated upstream,
// but every builder re-checks them against strict patterns: a command line is code on the router,
// so nothing may reach it that could close a quote, start a `[...]` or `$` expansion, or chain with `;`.

export const FORWARD_TAG_PREFIX = "fleet-fwd:";

const IPV4 = IPV4_PATTERN;
const TAG = /^fleet-fwd:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export interface AddForwardRuleInput {
  /** The router's assigned tunnel address: the rule matches only traffic sent to it (`dst-address=`). */
  tunnelIp: string;
  port: number;
  dstAddress: string;
  dstPort: number;
  forwardId: string;
  /**
   * ENTRY_POINT_TUNNEL_SOURCE: the address or IPv4 CIDR the entry point reaches routers from
   * (`src-address=`); undefined adds no source matcher.
   */
  srcAddress?: string | undefined;
}

/** A tagged NAT rule as the router reports it (from `print terse` or `:serialize to=json`). */
export interface TaggedNatRule {
  forwardId: string;
  dstPort: number;
  toAddresses: string;
  toPorts: number;
  disabled: boolean;
  /** Every reported field as text (`chain`, `action`, `dst-address`, `src-address`, ...). */
  raw: Record<string, string>;
}

/** A rule from `print terse`, with its print index. */
export interface TerseNatRule extends TaggedNatRule {
  index: number;
}

function describe(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

function checkPort(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 65535) {
    throw new Error(`${what} must be an integer in 1..65535, got ${describe(value)}`);
  }
  return value;
}

function checkIpv4(value: unknown, what: string): string {
  if (typeof value !== "string" || !IPV4.test(value)) {
    throw new Error(`${what} must be a canonical dotted-quad IPv4 address, got ${describe(value)}`);
  }
  return value;
}

function checkIpv4OrCidr(value: unknown, what: string): string {
  if (typeof value === "string") {
    const [ip, prefix, ...rest] = value.split("/");
    const prefixOk = prefix === undefined || (/^(?:3[0-2]|[12]?\d)$/.test(prefix) && rest.length === 0);
    if (ip !== undefined && IPV4.test(ip) && prefixOk) return value;
  }
  throw new Error(`${what} must be an IPv4 address or IPv4/prefix, got ${describe(value)}`);
}

/** Lower-cases so the tag written to the router equals the one later searched for. */
function checkForwardId(value: unknown): string {
  if (typeof value !== "string" || !isUuid(value)) {
    throw new Error(`forwardId must be a UUID, got ${describe(value)}`);
  }
  return value.toLowerCase();
}

export function forwardTag(forwardId: string): string {
  return `${FORWARD_TAG_PREFIX}${checkForwardId(forwardId)}`;
}

/**
 * `dst-address=` pins the rule to the tunnel: without it the rule would match the port on every
 * address of the router, its public WAN included (docs/api.md "Tunnel agent and entry point").
 */
export function addForwardRule(input: AddForwardRuleInput): string {
  const tunnelIp = checkIpv4(input.tunnelIp, "tunnelIp");
  const port = checkPort(input.port, "port");
  const dstAddress = checkIpv4(input.dstAddress, "dstAddress");
  const dstPort = checkPort(input.dstPort, "dstPort");
  const tag = forwardTag(input.forwardId);
  const src = input.srcAddress === undefined ? "" : ` src-address=${checkIpv4OrCidr(input.srcAddress, "srcAddress")}`;
  return (
    `/ip firewall nat add chain=dstnat protocol=tcp dst-address=${tunnelIp} dst-port=${port}${src} action=dst-nat` +
    ` to-addresses=${dstAddress} to-ports=${dstPort} comment="${tag}"`
  );
}

export function removeForwardRule(forwardId: string): string {
  return `/ip firewall nat remove [find where comment="${forwardTag(forwardId)}"]`;
}

/** The fallback listing, for routers older than RouterOS 7.13 (no `:serialize`). */
export function listForwardRules(): string {
  return `/ip firewall nat print terse where comment~"${FORWARD_TAG_PREFIX}"`;
}

/** The preferred listing (RouterOS 7.13+): JSON, so no field can be misread from terse text. */
export function listForwardRulesJson(): string {
  return `:put [:serialize to=json [/ip firewall nat print as-value where comment~"^${FORWARD_TAG_PREFIX}"]]`;
}

/**
 * The router's configuration as text (docs/api.md "Configuration backups"). `terse` puts each
 * item on one line, so a change is one changed line; RouterOS leaves sensitive values (passwords,
 * private keys) out unless asked with `show-sensitive`, which the agent never sends.
 */
export function exportConfiguration(): string {
  return "/export terse";
}

/** An exact match: a `~` pattern would be an unanchored regex (port 4000 would also hit :40001). */
export function dropConnections(tunnelIp: string, port: number): string {
  const ip = checkIpv4(tunnelIp, "tunnelIp");
  return `/ip firewall connection remove [find where dst-address="${ip}:${checkPort(port, "port")}"]`;
}

/** Splits `key=value` pairs; values may be `"quoted"` with RouterOS backslash escapes. */
function parseTerseFields(text: string): { flags: string; fields: Record<string, string> } {
  const fields: Record<string, string> = {};
  let flags = "";
  let i = 0;
  while (i < text.length) {
    while (text[i] === " " || text[i] === "\t") i++;
    if (i >= text.length) break;
    const start = i;
    while (i < text.length && text[i] !== "=" && text[i] !== " " && text[i] !== "\t") i++;
    const key = text.slice(start, i);
    if (text[i] !== "=") {
      flags += key; // bare uppercase tokens between the index and the first field (X, D, I ...)
      continue;
    }
    i++;
    let value = "";
    if (text[i] === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === "\\" && i + 1 < text.length) i++;
        value += text[i];
        i++;
      }
      i++;
    } else {
      while (i < text.length && text[i] !== " " && text[i] !== "\t") value += text[i++];
    }
    fields[key] = value;
  }
  return { flags, fields };
}

function toInt(value: string | undefined): number {
  return value !== undefined && /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
}

/**
 * Parses `print terse` output. Only rules whose comment is exactly a fleet tag are returned
 * (a `~` search may also hit foreign comments that merely contain the prefix). Numeric fields that
 * are not a single integer (ranges, lists, missing) become NaN; the rule is still returned so a
 * reconciler can remove it by tag.
 */
export function parseTerseRules(output: string): TerseNatRule[] {
  const rules: TerseNatRule[] = [];
  for (const line of output.split(/\r?\n/)) {
    const m = /^\s*(\d+)\s+(.*)$/.exec(line);
    if (!m?.[1] || m[2] === undefined) continue;
    const { flags, fields } = parseTerseFields(m[2]);
    const tag = TAG.exec(fields.comment ?? "");
    if (!tag?.[1]) continue;
    rules.push({
      index: Number(m[1]),
      forwardId: tag[1],
      dstPort: toInt(fields["dst-port"]),
      toAddresses: fields["to-addresses"] ?? "",
      toPorts: toInt(fields["to-ports"]),
      disabled: flags.includes("X") || fields.disabled === "yes",
      raw: fields,
    });
  }
  return rules;
}

const asText = (value: unknown): string | undefined => {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return undefined;
};

/**
 * Parses `:serialize to=json` of `print as-value`: an array of objects (one object when exactly one
 * rule matched, as RouterOS serializes a single-element array). Values may be strings, numbers or
 * booleans. Only rules whose comment is exactly a fleet tag are returned. Throws on output that
 * is not JSON (the caller then falls back to `print terse`).
 */
export function parseJsonRules(output: string): TaggedNatRule[] {
  const text = output.trim();
  if (text === "") return [];
  const parsed: unknown = JSON.parse(text);
  const items = Array.isArray(parsed) ? parsed : [parsed];
  const rules: TaggedNatRule[] = [];
  for (const item of items) {
    if (item === null || typeof item !== "object") continue;
    const fields: Record<string, string> = {};
    for (const [key, value] of Object.entries(item as Record<string, unknown>)) {
      const textValue = asText(value);
      if (textValue !== undefined) fields[key] = textValue;
    }
    const tag = TAG.exec(fields.comment ?? "");
    if (!tag?.[1]) continue;
    rules.push({
      forwardId: tag[1],
      dstPort: toInt(fields["dst-port"]),
      toAddresses: fields["to-addresses"] ?? "",
      toPorts: toInt(fields["to-ports"]),
      disabled: fields.disabled === "true" || fields.disabled === "yes",
      raw: fields,
    });
  }
  return rules;
}
