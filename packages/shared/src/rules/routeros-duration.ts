/**
 * RouterOS values as `:serialize to=json` and `/system resource get uptime` write them
 * (docs/routeros.md "Adoption", docs/api.md "Routers and heartbeats"). Pure functions, loops rather than
 * regular expressions: they run on every heartbeat that carries an uptime.
 */

const UNIT_SECONDS = { w: 604_800, d: 86_400, h: 3_600, m: 60, s: 1 } as const;
// Each unit at most once and in this order, as RouterOS prints them: 1w2d3h4m5s.
const UNIT_ORDER = "wdhms";

const isDigit = (code: number) => code >= 0x30 && code <= 0x39;

/** Digits from `at`; returns the end index, or -1 when there are none. */
const digitsEnd = (text: string, at: number): number => {
  let i = at;
  while (i < text.length && isDigit(text.charCodeAt(i))) i++;
  return i === at ? -1 : i;
};

/**
 * A RouterOS duration in seconds, or null when `text` is not one. Accepted: unit groups in order
 * (`1w`, `52w3d`, `1d`, `5m10s`, `0s`, `1w2d3h4m5s`, `150ms`), optionally followed by a clock
 * `H:MM:SS` with an optional fraction (`1w2d03:04:05`, `3d14:05:00`, `00:05:00`, `23:59:59`,
 * `00:00:01.5`) when no h/m/s unit was given. Minutes and seconds of a clock are two digits below 60.
 */
export const parseRouterOsDuration = (text: string): number | null => {
  const n = text.length;
  if (n === 0 || n > 64) return null;
  let i = 0;
  let seconds = 0;
  let lastUnit = -1;
  while (i < n) {
    const end = digitsEnd(text, i);
    if (end < 0) return null;
    if (end === n) return null; // a bare number is seconds, not a duration: handled by the caller
    const next = text.charCodeAt(end);
    if (next === 0x3a /* : */) {
      if (lastUnit >= UNIT_ORDER.indexOf("h")) return null;
      const clock = parseClock(text, i);
      return clock === null ? null : seconds + clock;
    }
    const value = Number(text.slice(i, end));
    // "ms" (milliseconds) is the one two-letter unit; it must be last.
    if (next === 0x6d /* m */ && text.charCodeAt(end + 1) === 0x73 /* s */) {
      if (end + 2 !== n) return null;
      return seconds + value / 1000;
    }
    const unit = UNIT_ORDER.indexOf(text[end] as string);
    if (unit < 0 || unit <= lastUnit) return null;
    lastUnit = unit;
    seconds += value * UNIT_SECONDS[UNIT_ORDER[unit] as keyof typeof UNIT_SECONDS];
    i = end + 1;
  }
  return seconds;
};

/** `H:MM:SS[.fraction]` from `at` to the end of `text`, in seconds; null when malformed. */
const parseClock = (text: string, at: number): number | null => {
  const hoursEnd = digitsEnd(text, at);
  if (hoursEnd < 0 || text.charCodeAt(hoursEnd) !== 0x3a) return null;
  const minutes = twoDigits(text, hoursEnd + 1);
  if (minutes === null || minutes > 59 || text.charCodeAt(hoursEnd + 3) !== 0x3a) return null;
  const secs = twoDigits(text, hoursEnd + 4);
  if (secs === null || secs > 59) return null;
  let end = hoursEnd + 6;
  let fraction = 0;
  if (end < text.length) {
    if (text.charCodeAt(end) !== 0x2e /* . */) return null;
    const fractionEnd = digitsEnd(text, end + 1);
    if (fractionEnd !== text.length) return null;
    fraction = Number(`0${text.slice(end, fractionEnd)}`);
    end = fractionEnd;
  }
  return Number(text.slice(at, hoursEnd)) * 3_600 + minutes * 60 + secs + fraction;
};

const twoDigits = (text: string, at: number): number | null => {
  const a = text.charCodeAt(at);
  const b = text.charCodeAt(at + 1);
  if (!isDigit(a) || !isDigit(b)) return null;
  return (a - 0x30) * 10 + (b - 0x30);
};

/**
 * A decimal number written as text (`12`, `12.000000`, as `:serialize` may leave it), or null.
 * Stricter than `Number()`: no sign, exponent, hex, spaces or empty string.
 */
export const parseDecimalText = (text: string): number | null => {
  const intEnd = digitsEnd(text, 0);
  if (intEnd < 0 || text.length > 32) return null;
  if (intEnd === text.length) return Number(text);
  if (text.charCodeAt(intEnd) !== 0x2e) return null;
  if (digitsEnd(text, intEnd + 1) !== text.length) return null;
  return Number(text);
};

/**
 * Uptime in seconds from what a router sends: a number (`12`, `12.000000`), a numeric string, or a
 * RouterOS duration (`1w2d03:04:05`). Null when it is none of these (or negative / not finite).
 */
export const parseUptimeSeconds = (value: unknown): number | null => {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? value : null;
  if (typeof value !== "string") return null;
  return parseDecimalText(value) ?? parseRouterOsDuration(value);
};

/** `true`/`false`, or the strings RouterOS writes for them: "true"/"false"/"yes"/"no". Null otherwise. */
export const parseRouterOsBoolean = (value: unknown): boolean | null => {
  if (typeof value === "boolean") return value;
  if (typeof value !== "string" || value.length > 5) return null;
  switch (value.toLowerCase()) {
    case "true":
    case "yes":
      return true;
    case "false":
    case "no":
      return false;
    default:
      return null;
  }
};
