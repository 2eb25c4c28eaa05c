/**
 * Wall-clock time in an IANA time zone, for quiet hours and weekly maintenance windows (docs/api.md
 * "Alerts and maintenance windows"). A wall time that a daylight-saving change skips is moved later
 * by the length of the gap (02:30 on a spring-forward night is 03:30); one that occurs twice is its
 * first occurrence: Temporal's "compatible" disambiguation.
 */

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export const WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;
export type TWeekday = (typeof WEEKDAYS)[number];

const formatters = new Map<string, Intl.DateTimeFormat>();
const formatter = (timeZone: string): Intl.DateTimeFormat => {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timeZone, f);
  }
  return f;
};

export interface ZonedParts {
  year: number;
  /** 1..12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** The wall-clock fields of `at` in `timeZone`. */
export const zonedParts = (at: Date | number, timeZone: string): ZonedParts => {
  const parts: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(at)) {
    if (part.type !== "literal") parts[part.type] = Number(part.value);
  }
  return {
    year: parts.year ?? 1970,
    month: parts.month ?? 1,
    day: parts.day ?? 1,
    hour: parts.hour ?? 0,
    minute: parts.minute ?? 0,
    second: parts.second ?? 0,
  };
};

/** Offset of `timeZone` from UTC at the instant `ms`, in milliseconds (east positive). */
const offsetAt = (ms: number, timeZone: string): number => {
  const p = zonedParts(ms, timeZone);
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return asUtc - Math.floor(ms / 1000) * 1000;
};

/** The instant whose wall clock in `timeZone` reads the given local date and minute of day. */
export const zonedToUtc = (
  local: { year: number; month: number; day: number },
  minuteOfDay: number,
  timeZone: string,
): Date => {
  const naive = Date.UTC(local.year, local.month - 1, local.day) + minuteOfDay * MINUTE_MS;
  // The offsets a day before and after cover any single change; a candidate counts when its wall
  // clock really reads `naive`.
  const before = offsetAt(naive - DAY_MS, timeZone);
  const after = offsetAt(naive + DAY_MS, timeZone);
  const readsNaive = [naive - before, naive - after]
    .filter((c) => c + offsetAt(c, timeZone) === naive)
    .sort((x, y) => x - y);
  // A skipped wall time: the offset before the change pushes it forward by the gap.
  return new Date(readsNaive[0] ?? naive - before);
};

/** "HH:MM" -> minutes of the day; null when malformed. */
export const parseClock = (text: string): number | null => {
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(text);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
};

const minuteOfDay = (p: ZonedParts) => p.hour * 60 + p.minute;
const weekdayOf = (local: { year: number; month: number; day: number }): TWeekday =>
  WEEKDAYS[new Date(Date.UTC(local.year, local.month - 1, local.day)).getUTCDay()] ?? "sun";
const addDays = (local: { year: number; month: number; day: number }, days: number) => {
  const d = new Date(Date.UTC(local.year, local.month - 1, local.day) + days * DAY_MS);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
};

export interface QuietHours {
  timezone: string;
  from: string;
  to: string;
}

/**
 * When the quiet hours around `at` end, or null when `at` is outside them. `from` after `to` spans
 * midnight; equal ones are empty.
 */
export const quietHoursEnd = (at: Date, quiet: QuietHours): Date | null => {
  const from = parseClock(quiet.from);
  const to = parseClock(quiet.to);
  if (from === null || to === null || from === to) return null;
  const p = zonedParts(at, quiet.timezone);
  const m = minuteOfDay(p);
  const inside = from < to ? m >= from && m < to : m >= from || m < to;
  if (!inside) return null;
  const today = { year: p.year, month: p.month, day: p.day };
  const endDay = from < to || m < to ? today : addDays(today, 1);
  return zonedToUtc(endDay, to, quiet.timezone);
};

export interface WeeklySchedule {
  timezone: string;
  days: readonly TWeekday[];
  from: string;
  duration_minutes: number;
}

/** The occurrences of a weekly window that overlap [from, to), in order. */
export const weeklyOccurrences = (weekly: WeeklySchedule, from: Date, to: Date): Array<{ start: Date; end: Date }> => {
  const start = parseClock(weekly.from);
  if (start === null) return [];
  const durationMs = weekly.duration_minutes * MINUTE_MS;
  const first = zonedParts(new Date(from.getTime() - durationMs - DAY_MS), weekly.timezone);
  let day = { year: first.year, month: first.month, day: first.day };
  const out: Array<{ start: Date; end: Date }> = [];
  for (let i = 0; i < 4000; i++) {
    const begin = zonedToUtc(day, start, weekly.timezone);
    if (begin.getTime() >= to.getTime()) break;
    const end = new Date(begin.getTime() + durationMs);
    if (weekly.days.includes(weekdayOf(day)) && end.getTime() > from.getTime()) out.push({ start: begin, end });
    day = addDays(day, 1);
  }
  return out;
};
