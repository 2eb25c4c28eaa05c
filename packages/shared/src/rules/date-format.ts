/**
 * Date rendering rules of docs/api.md. Formatters are cached per time zone: building an
 * Intl.DateTimeFormat costs far more than using one, and this sits on every response.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

/** True when the runtime knows the IANA zone name. */
export const isKnownTimeZone = (timeZone: string): boolean => {
  if (formatters.has(timeZone)) return true;
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
};

const formatterFor = (timeZone: string): Intl.DateTimeFormat => {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    // hourCycle h23 keeps midnight as 00, never 24.
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    });
    if (formatters.size > 1000) formatters.clear();
    formatters.set(timeZone, formatter);
  }
  return formatter;
};

/**
 * Rendered instants by time zone ("UTC" too): the same few instants (an account's `created_at`)
 * come back on every request, and rendering one costs far more than finding it. Each zone keeps at
 * most `RENDERED_KEPT` (then starts over); at most `ZONES_KEPT` zones are kept.
 */
const rendered = new Map<string, Map<number, string>>();
const RENDERED_KEPT = 1000;
const ZONES_KEPT = 100;

const renderedIn = (timeZone: string): Map<number, string> => {
  let memo = rendered.get(timeZone);
  if (!memo) {
    if (rendered.size >= ZONES_KEPT) rendered.clear();
    memo = new Map();
    rendered.set(timeZone, memo);
  }
  return memo;
};

/** `render(date)`, or what it gave for the same instant in the same zone before. */
const remembered = (timeZone: string, date: Date, render: (date: Date) => string): string => {
  const memo = renderedIn(timeZone);
  const ms = date.getTime();
  let text = memo.get(ms);
  if (text === undefined) {
    text = render(date);
    if (memo.size >= RENDERED_KEPT) memo.clear();
    memo.set(ms, text);
  }
  return text;
};

/**
 * `YYYY-MM-DD HH:MM:SS` in the given IANA time zone (docs/api.md: account, setup intent, payment method and
 * invoice `created_at`). An unknown or absent zone renders UTC.
 */
export const formatDateTime = (date: Date, timeZone?: string | null): string => {
  if (!timeZone || timeZone === "UTC") return remembered("UTC", date, formatUtc);
  let formatter: Intl.DateTimeFormat;
  try {
    formatter = formatterFor(timeZone);
  } catch {
    return remembered("UTC", date, formatUtc);
  }
  return remembered(timeZone, date, (d) => {
    const p: Record<string, string> = {};
    for (const part of formatter.formatToParts(d)) p[part.type] = part.value;
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
  });
};

const formatUtc = (date: Date): string => date.toISOString().slice(0, 19).replace("T", " ");

/** ISO 8601 in UTC with an explicit `+00:00` offset and no milliseconds (docs/api.md: forwards, metrics, faults). */
export const formatIsoUtc = (date: Date): string => `${date.toISOString().slice(0, 19)}+00:00`;

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "21 Nov 2026" (docs/api.md: invoice period_start/period_end: day, abbreviated month, year), in UTC. */
export const formatDayMonthYear = (date: Date): string =>
  `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}`;
