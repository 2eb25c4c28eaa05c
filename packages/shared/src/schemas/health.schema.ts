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
const PACKETS: NumberRule = { min: 0, max: HEALTH_PING_MAX_PACKETS, integer: true };
const RTT: NumberRule = { min: 0, max: HEALTH_PING_MAX_RTT_MS };

/** The numbers of a part, in the order their issues are reported. */
type NumberFields = ReadonlyArray<readonly [string, NumberRule]>;
const RESOURCE_NUMBERS: NumberFields = [
  ["cpu_load", PERCENT],
  ["memory_total", BYTES],
  ["memory_free", BYTES],
  ["disk_total", BYTES],
  ["disk_free", BYTES],
  ["temperature", { min: HEALTH_TEMPERATURE_RANGE[0], max: HEALTH_TEMPERATURE_RANGE[1] }],
  ["voltage", { min: 0, max: HEALTH_VOLTAGE_MAX }],
];
const INTERFACE_NUMBERS: NumberFields = [
  ["rx_bytes", COUNTER],
  ["tx_bytes", COUNTER],
  ["rx_errors", COUNTER],
  ["tx_errors", COUNTER],
];
const PING_NUMBERS: NumberFields = [
  ["sent", PACKETS],
  ["received", PACKETS],
  ["rtt_avg_ms", RTT],
  ["rtt_max_ms", RTT],
];

/*
 * Parse once: a part whose values are already plain (numbers in range, no -0, no key of its own)
 * is returned as the parsed JSON itself; only a part holding RouterOS forms ("12.000000", "yes")
 * or unknown keys is copied. A heartbeat's 64 interfaces otherwise cost 64 objects and their
 * boxed numbers again, which the daemon's garbage collector paid for every heartbeat.
 */

/** Whether `value` is already the plain form of a number under `rule` (absent and null included). */
const isPlainNumber = (value: unknown, rule: NumberRule): boolean =>
  value === undefined ||
  value === null ||
  (typeof value === "number" &&
    value >= rule.min &&
    value <= rule.max &&
    (value !== 0 || 1 / value > 0) &&
    (rule.integer !== true || Number.isInteger(value)));

/** Own enumerable keys of a parsed JSON object (for...in: no array, parsed JSON inherits none). */
const keyCount = (value: object): number => {
  let n = 0;
  for (const _ in value) n++;
  return n;
};

/** The keys of `fields` present in `value` when each holds a plain number, else -1. */
const plainNumbers = (value: Record<string, unknown>, fields: NumberFields): number => {
  let present = 0;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] as readonly [string, NumberRule];
    const v = value[field[0]];
    if (v === undefined) continue;
    if (!isPlainNumber(v, field[1])) return -1;
    present++;
  }
  return present;
};

/** Reads every number of `fields` into `target` (the copying path); issues pushed in field order. */
const readNumbers = (
  source: Record<string, unknown>,
  fields: NumberFields,
  target: Record<string, unknown>,
  path: Array<string | number>,
  issues: HealthIssue[],
): void => {
  for (const [key, rule] of fields) readNumber(source, key, rule, target, path, issues);
};

/** `resources`: null/undefined as given, else the plain values; issues are pushed. */
export const readHealthResources = (value: unknown, issues: HealthIssue[]): THealthResources | null | undefined => {
  if (value === undefined || value === null) return value;
  if (!isObject(value)) {
    issues.push({ path: [], message: "must be an object" });
    return undefined;
  }
  const before = issues.length;
  let out: Record<string, unknown> = value;
  if (plainNumbers(value, RESOURCE_NUMBERS) !== keyCount(value)) {
    out = {};
    readNumbers(value, RESOURCE_NUMBERS, out, [], issues);
  }
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

/** An entry read (or kept as parsed) under the rules above. */
const asInterface = (entry: Record<string, unknown>): THealthInterface => entry as unknown as THealthInterface;

/** Up to this many interfaces, a repeated name is found by comparing with the earlier ones (no Set). */
const NAMES_SCANNED = 16;

/** Whether an interface is plain as parsed: a valid name (checked before), plain counters and running, no other key. */
const isPlainInterface = (item: Record<string, unknown>): boolean => {
  const numbers = plainNumbers(item, INTERFACE_NUMBERS);
  if (numbers < 0) return false;
  const running = item.running;
  if (running !== undefined && running !== null && typeof running !== "boolean") return false;
  return 1 + numbers + (running === undefined ? 0 : 1) === keyCount(item);
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
  // The parsed array itself while every entry is plain; a copy from the first entry that is not.
  let copy: THealthInterface[] | undefined;
  const names = value.length > NAMES_SCANNED ? new Set<string>() : undefined;
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
    if (names ? names.has(name) : repeatsName(copy ?? (value as THealthInterface[]), i, name)) {
      issues.push({ path: [i, "name"], message: "must not repeat another interface's name" });
      return undefined;
    }
    names?.add(name);
    if (name === item.name && isPlainInterface(item)) {
      copy?.push(asInterface(item));
      continue;
    }
    const entry: Record<string, unknown> = { name };
    const before = issues.length;
    readNumbers(item, INTERFACE_NUMBERS, entry, [i], issues);
    if (item.running === null) entry.running = null;
    else if (item.running !== undefined) {
      const running = parseRouterOsBoolean(item.running);
      if (running === null) issues.push({ path: [i, "running"], message: 'must be true, false, "yes" or "no"' });
      else entry.running = running;
    }
    if (issues.length > before) return undefined;
    copy ??= (value as THealthInterface[]).slice(0, i);
    copy.push(asInterface(entry));
  }
  return copy ?? (value as THealthInterface[]);
};

/** Whether one of the first `count` interfaces (already read) is named `name`. */
const repeatsName = (read: readonly THealthInterface[], count: number, name: string): boolean => {
  for (let j = 0; j < count; j++) if ((read[j] as THealthInterface).name === name) return true;
  return false;
};

const isPlainTarget = (target: unknown): boolean =>
  target === undefined ||
  target === null ||
  (typeof target === "string" && target.length <= PING_TARGET_MAX && !breaksTextRule(target));

/** `ping`: a few packets to the configured target; received never more than sent. */
export const readHealthPing = (value: unknown, issues: HealthIssue[]): THealthPing | null | undefined => {
  if (value === undefined || value === null) return value;
  if (!isObject(value)) {
    issues.push({ path: [], message: "must be an object" });
    return undefined;
  }
  const before = issues.length;
  let out: Record<string, unknown> = value;
  const numbers = isPlainTarget(value.target) ? plainNumbers(value, PING_NUMBERS) : -1;
  if (numbers < 0 || numbers + (value.target === undefined ? 0 : 1) !== keyCount(value)) {
    out = {};
    const target = value.target;
    if (target === null) out.target = null;
    else if (target !== undefined) {
      if (typeof target !== "string" || target.length > PING_TARGET_MAX)
        issues.push({ path: ["target"], message: `must be a string of at most ${PING_TARGET_MAX} characters` });
      else if (breaksTextRule(target)) issues.push({ path: ["target"], message: TEXT_RULE_MESSAGE });
      else out.target = target;
    }
    readNumbers(value, PING_NUMBERS, out, [], issues);
  }
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
