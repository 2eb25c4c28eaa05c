import { parseRouterOsBoolean } from "../rules/routeros-duration.ts";
import { z } from "zod";
import { breaksTextRule, TEXT_RULE_MESSAGE, textRule } from "../rules/text-rules.ts";
import { successEnvelope } from "./common.schema.ts";

/**
 * The health a heartbeat may carry (docs/api.md "Health"): `resources`, `interfaces`, `ping`. One plain
 * reader per part serves both zod (heartbeat.schema.ts) and the daemon's fast path, so the two agree
 * by construction. Values come as RouterOS writes them: numbers (`12.000000`) or numeric strings;
 * "NaN", "inf", negative or implausible values are refused, naming the field.
 */

/** At most this many interfaces in one heartbeat. */
export const HEALTH_MAX_INTERFACES = 64;
/** An interface name: at most this many characters, text rule. */
export const HEALTH_INTERFACE_NAME_MAX = 100;
/** A byte or error counter (64-bit on RouterOS): at most 2^64. */
export const HEALTH_MAX_COUNTER = 2 ** 64;
export const HEALTH_TEMPERATURE_RANGE = [-100, 250] as const;
export const HEALTH_VOLTAGE_MAX = 100;
/** Packets of one ping report, and its round-trip times in milliseconds. */
export const HEALTH_PING_MAX_PACKETS = 100;
export const HEALTH_PING_MAX_RTT_MS = 60_000;
const PING_TARGET_MAX = 255;

export interface THealthResources {
  cpu_load?: number | null;
  memory_total?: number | null;
  memory_free?: number | null;
  disk_total?: number | null;
  disk_free?: number | null;
  temperature?: number | null;
  voltage?: number | null;
}
export interface THealthInterface {
  name: string;
  rx_bytes?: number | null;
  tx_bytes?: number | null;
  rx_errors?: number | null;
  tx_errors?: number | null;
  running?: boolean | null;
}
export interface THealthPing {
  target?: string | null;
  sent?: number | null;
  received?: number | null;
  rtt_avg_ms?: number | null;
  rtt_max_ms?: number | null;
}

/** A refused value: its path below the part (`["interfaces", 3, "rx_bytes"]`) and why. */
export interface HealthIssue {
  path: Array<string | number>;
  message: string;
}

const isDigitAt = (text: string, i: number): boolean => {
  const code = text.charCodeAt(i);
  return code >= 0x30 && code <= 0x39;
};

/** The end of a run of digits starting at `i` (i itself when there is none). */
const skipDigits = (text: string, i: number): number => {
  let at = i;
  while (at < text.length && isDigitAt(text, at)) at++;
  return at;
};

const isNumericText = (text: string): boolean => {
  // Digits with an optional sign, fraction and exponent; no "NaN", "inf", hex or spaces.
  const n = text.length;
  if (n === 0 || n > 40) return false;
  let i = text[0] === "-" || text[0] === "+" ? 1 : 0;
  const whole = skipDigits(text, i);
  let digits = whole - i;
  i = whole;
  if (text[i] === ".") {
    const fraction = skipDigits(text, i + 1);
    digits += fraction - i - 1;
    i = fraction;
  }
  if (digits === 0) return false;
  if (text[i] === "e" || text[i] === "E") {
    i++;
    if (text[i] === "-" || text[i] === "+") i++;
    const exponent = skipDigits(text, i);
    if (exponent === i) return false;
    i = exponent;
  }
  return i === n;
};

/** A number as RouterOS writes it; undefined when it is not one. */
const toNumber = (value: unknown): number | undefined => {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "string" && isNumericText(value)) {
    const parsed = Number(value);
    return Number.isFinite(parsed) ? parsed : undefined;
  }
  return undefined;
};

interface NumberRule {
  min: number;
  max: number;
  integer?: boolean;
}

/** Reads `source[key]` into `target[key]` under `rule`; pushes an issue when refused. */
const readNumber = (
  source: Record<string, unknown>,
  key: string,
  rule: NumberRule,
  target: Record<string, unknown>,
  path: Array<string | number>,
  issues: HealthIssue[],
): void => {
  const value = source[key];
  if (value === undefined) return;
  if (value === null) {
    target[key] = null;
    return;
  }
  const number = toNumber(value);
  if (number === undefined) {
    issues.push({ path: [...path, key], message: "must be a number" });
    return;
  }
  if (number < rule.min || number > rule.max) {
    issues.push({ path: [...path, key], message: `must be between ${rule.min} and ${rule.max}` });
    return;
  }
  if (rule.integer && !Number.isInteger(number)) {
    issues.push({ path: [...path, key], message: "must be a whole number" });
    return;
  }
  target[key] = number === 0 ? 0 : number; // no -0
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const PERCENT: NumberRule = { min: 0, max: 100 };
const BYTES: NumberRule = { min: 0, max: HEALTH_MAX_COUNTER, integer: true };
const COUNTER: NumberRule = { min: 0, max: HEALTH_MAX_COUNTER, integer: true };

/** `resources`: null/undefined as given, else the plain values; issues are pushed. */
export const readHealthResources = (value: unknown, issues: HealthIssue[]): THealthResources | null | undefined => {
  if (value === undefined || value === null) return value;
  if (!isObject(value)) {
    issues.push({ path: [], message: "must be an object" });
    return undefined;
  }
  const out: Record<string, unknown> = {};
  const before = issues.length;
  readNumber(value, "cpu_load", PERCENT, out, [], issues);
  readNumber(value, "memory_total", BYTES, out, [], issues);
  readNumber(value, "memory_free", BYTES, out, [], issues);
  readNumber(value, "disk_total", BYTES, out, [], issues);
  readNumber(value, "disk_free", BYTES, out, [], issues);
  readNumber(
    value,
    "temperature",
    { min: HEALTH_TEMPERATURE_RANGE[0], max: HEALTH_TEMPERATURE_RANGE[1] },
    out,
    [],
    issues,
  );
  readNumber(value, "voltage", { min: 0, max: HEALTH_VOLTAGE_MAX }, out, [], issues);
  if (issues.length === before) {
    const resources = out as THealthResources;
    if (
      resources.memory_free != null &&
      resources.memory_total != null &&
      resources.memory_free > resources.memory_total
    )
      issues.push({ path: ["memory_free"], message: "must not exceed memory_total" });
    else if (resources.disk_free != null && resources.disk_total != null && resources.disk_free > resources.disk_total)
      issues.push({ path: ["disk_free"], message: "must not exceed disk_total" });
  }
  return out as THealthResources;
};

/** `interfaces`: at most HEALTH_MAX_INTERFACES, each named once. */
export const readHealthInterfaces = (value: unknown, issues: HealthIssue[]): THealthInterface[] | null | undefined => {
  if (value === undefined || value === null) return value;
  if (!Array.isArray(value)) {
    issues.push({ path: [], message: "must be an array" });
    return undefined;
  }
  if (value.length > HEALTH_MAX_INTERFACES) {
    issues.push({ path: [], message: `must hold at most ${HEALTH_MAX_INTERFACES} interfaces` });
    return undefined;
  }
  const out: THealthInterface[] = [];
  const names = new Set<string>();
  for (let i = 0; i < value.length; i++) {
    const item = value[i];
    if (!isObject(item)) {
      issues.push({ path: [i], message: "must be an object" });
      return undefined;
    }
    const name = typeof item.name === "number" && Number.isFinite(item.name) ? String(item.name) : item.name;
    if (typeof name !== "string" || name.length === 0 || name.length > HEALTH_INTERFACE_NAME_MAX) {
      issues.push({ path: [i, "name"], message: `must be a name of 1 to ${HEALTH_INTERFACE_NAME_MAX} characters` });
      return undefined;
    }
    if (breaksTextRule(name)) {
      issues.push({ path: [i, "name"], message: TEXT_RULE_MESSAGE });
      return undefined;
    }
    if (names.has(name)) {
      issues.push({ path: [i, "name"], message: "must not repeat another interface's name" });
      return undefined;
    }
    names.add(name);
    const entry: Record<string, unknown> = { name };
    const before = issues.length;
    readNumber(item, "rx_bytes", COUNTER, entry, [i], issues);
    readNumber(item, "tx_bytes", COUNTER, entry, [i], issues);
    readNumber(item, "rx_errors", COUNTER, entry, [i], issues);
    readNumber(item, "tx_errors", COUNTER, entry, [i], issues);
    if (item.running === null) entry.running = null;
    else if (item.running !== undefined) {
      const running = parseRouterOsBoolean(item.running);
      if (running === null) issues.push({ path: [i, "running"], message: 'must be true, false, "yes" or "no"' });
      else entry.running = running;
    }
    if (issues.length > before) return undefined;
    out.push(entry as unknown as THealthInterface);
  }
  return out;
};

/** `ping`: a few packets to the configured target; received never more than sent. */
export const readHealthPing = (value: unknown, issues: HealthIssue[]): THealthPing | null | undefined => {
  if (value === undefined || value === null) return value;
  if (!isObject(value)) {
    issues.push({ path: [], message: "must be an object" });
    return undefined;
  }
  const out: Record<string, unknown> = {};
  const before = issues.length;
  const target = value.target;
  if (target === null) out.target = null;
  else if (target !== undefined) {
    if (typeof target !== "string" || target.length > PING_TARGET_MAX)
      issues.push({ path: ["target"], message: `must be a string of at most ${PING_TARGET_MAX} characters` });
    else if (breaksTextRule(target)) issues.push({ path: ["target"], message: TEXT_RULE_MESSAGE });
    else out.target = target;
  }
  const packets: NumberRule = { min: 0, max: HEALTH_PING_MAX_PACKETS, integer: true };
  readNumber(value, "sent", packets, out, [], issues);
  readNumber(value, "received", packets, out, [], issues);
  readNumber(value, "rtt_avg_ms", { min: 0, max: HEALTH_PING_MAX_RTT_MS }, out, [], issues);
  readNumber(value, "rtt_max_ms", { min: 0, max: HEALTH_PING_MAX_RTT_MS }, out, [], issues);
  if (issues.length === before) {
    const ping = out as THealthPing;
    if (ping.received != null && ping.sent != null && ping.received > ping.sent)
      issues.push({ path: ["received"], message: "must not exceed sent" });
  }
  return out as THealthPing;
};

/** Used memory or disk as a percentage of the total (null when either is missing or the total is 0). */
export const usedPercent = (total: number | null | undefined, free: number | null | undefined): number | null =>
  total == null || free == null || total <= 0 ? null : ((total - free) / total) * 100;

/** Ping loss in percent of the packets sent (null when none were sent). */
export const pingLossPercent = (ping: THealthPing | null | undefined): number | null =>
  ping?.sent == null || ping.received == null || ping.sent === 0
    ? null
    : ((ping.sent - ping.received) / ping.sent) * 100;

// ---- Reads (docs/api.md "Health") ----

/** Bounds of the series reads; exported so tests probe the edges. */
export const HEALTH_SERIES_LIMITS = {
  /** At most this many points in one answer (span / step): 400 days of hours fit. */
  maxPoints: 10_000,
  /** Default span when `from` is left out: one day at `5m`, 30 days at `1h`. */
  defaultSpanMs: { "5m": 86_400_000, "1h": 30 * 86_400_000 },
  stepMs: { "5m": 300_000, "1h": 3_600_000 },
} as const;

const seriesBound = textRule(
  z.string({ error: "must be an ISO 8601 date-time" }).max(64, { error: "must be an ISO 8601 date-time" }),
);
const seriesStep = z.enum(["5m", "1h"], { error: "must be 5m or 1h" });

/** GET /api/routers/{router_id}/resources. */
export const ZRouterResourcesQuery = z.object({
  router_id: textRule(z.string({ error: "must be a string" })),
  from: seriesBound.optional(),
  to: seriesBound.optional(),
  step: seriesStep.optional(),
});
export type TRouterResourcesQuery = z.infer<typeof ZRouterResourcesQuery>;

/**
 * GET /api/routers/{router_id}/interfaces/{name}/traffic. Over REST `name` arrives percent-encoded
 * (`vlan%2F10`), up to three characters a character; the service takes it decoded and holds it to
 * {@link isHealthInterfaceName}.
 */
export const ZRouterTrafficQuery = ZRouterResourcesQuery.extend({
  name: textRule(
    z
      .string({ error: "must be a string" })
      .min(1)
      .max(3 * HEALTH_INTERFACE_NAME_MAX),
  ),
});

/** A name a heartbeat could have reported: 1 to HEALTH_INTERFACE_NAME_MAX characters, text rule. */
export const isHealthInterfaceName = (name: string): boolean =>
  name.length >= 1 && name.length <= HEALTH_INTERFACE_NAME_MAX && !breaksTextRule(name);
export type TRouterTrafficQuery = z.infer<typeof ZRouterTrafficQuery>;

const measure = (description: string) => z.number().nullable().meta({ description });
const RESOURCE_FIELDS = {
  cpu_load: measure("Percent."),
  memory_used_percent: measure("Percent of memory_total."),
  disk_used_percent: measure("Percent of disk_total."),
  temperature: measure("Degrees C."),
  voltage: measure("V."),
  ping_loss_percent: measure("Percent of the packets sent."),
  ping_rtt_ms: measure("Average round-trip time, ms."),
} as const;
export const HEALTH_RESOURCE_FIELDS = Object.keys(RESOURCE_FIELDS) as Array<keyof typeof RESOURCE_FIELDS>;

/** One point of a resource series; at `1h` with `min_`/`max_` beside each measure (then the plain one is the average). */
export const ZResourcePoint = z
  .object({
    at: z.string().meta({ description: "Start of the sample period or hour, ISO 8601 +00:00." }),
    ...RESOURCE_FIELDS,
    ...Object.fromEntries(
      HEALTH_RESOURCE_FIELDS.flatMap((field) => [
        [`min_${field}`, z.number().nullable().optional()],
        [`max_${field}`, z.number().nullable().optional()],
      ]),
    ),
  })
  .meta({ id: "ResourcePoint" });
export type TResourcePoint = z.infer<typeof ZResourcePoint>;
export const ZRouterResources = successEnvelope(z.array(ZResourcePoint)).meta({ id: "RouterResources" });

export const ZInterfaceState = z
  .object({
    name: z.string(),
    running: z.boolean().nullable(),
    rx_bytes: z.number().nullable(),
    tx_bytes: z.number().nullable(),
    rx_errors: z.number().nullable(),
    tx_errors: z.number().nullable(),
    rx_bps: z
      .number()
      .nullable()
      .meta({ description: "Bits per second over the last interval; null after a counter reset." }),
    tx_bps: z.number().nullable(),
    reported_at: z.string(),
  })
  .meta({ id: "InterfaceState" });
export type TInterfaceState = z.infer<typeof ZInterfaceState>;
export const ZRouterInterfaces = successEnvelope(z.array(ZInterfaceState)).meta({ id: "RouterInterfaces" });

export const ZTrafficPoint = z
  .object({
    at: z.string(),
    rx_bps: z
      .number()
      .nullable()
      .meta({ description: "Average bits per second; null when only counter resets were seen." }),
    tx_bps: z.number().nullable(),
    rx_errors: z.number().nullable().meta({ description: "Errors counted in the period." }),
    tx_errors: z.number().nullable(),
  })
  .meta({ id: "TrafficPoint" });
export type TTrafficPoint = z.infer<typeof ZTrafficPoint>;
export const ZRouterTraffic = successEnvelope(z.array(ZTrafficPoint)).meta({ id: "RouterTraffic" });
