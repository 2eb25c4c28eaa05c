/**
 * Availability reports (docs/api.md "Availability"): report ranges and per-period availability
 * from hourly downtime. Pure: the caller passes `now` and the stored hours.
 */
import { AppError } from "../errors/app-error.ts";
import {
  downtimeBetween,
  effectiveLastSeen,
  type HeartbeatCoverageState,
  round2,
  splitByUtcHour,
  type TimeInterval,
} from "./router-health.ts";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** docs/api.md "Availability": limits tests probe at the edges. */
export const AVAILABILITY_LIMITS = {
  /** The longest report range, and METRICS_RETENTION_DAYS's default. */
  maxRangeDays: 400,
  /** Days a report covers when `from` is not given. */
  defaultRangeDays: 30,
} as const;

export type TAvailabilityGranularity = "day" | "month";

/** A report range: `[start, end)`, whole UTC hours. */
export interface ReportRange {
  start: Date;
  end: Date;
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;
const DATE_MESSAGE = "must be a date (YYYY-MM-DD) or an ISO 8601 date-time with an offset";

/** A calendar date at UTC midnight, or null when the text names no real day (2026-02-30). */
const parseDateOnly = (value: string): Date | null => {
  const m = DATE_ONLY.exec(value);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return date;
};

const parseBound = (value: string, field: "from" | "to"): { at: Date; dateOnly: boolean } => {
  const day = parseDateOnly(value);
  if (day) return { at: day, dateOnly: true };
  if (DATE_TIME.test(value)) {
    const at = Date.parse(value);
    const day = parseDateOnly(value.slice(0, 10));
    if (!Number.isNaN(at) && day) return { at: new Date(at), dateOnly: false };
  }
  throw new AppError("validation_failed", `'${field}' is not a date.`, { fields: { [field]: [DATE_MESSAGE] } });
};

/**
 * The range of a report (docs/api.md "Availability"): `from` and `to` are UTC dates (`to` included
 * whole) or date-times (taken to the whole UTC hour: `from` down, `to` up). Defaults: `to` today,
 * `from` 30 days before `to`. Refused with 422 naming the field: malformed, `from` not before
 * `to`, a range over 400 days.
 */
export const parseReportRange = (
  query: { from?: string | undefined; to?: string | undefined },
  now: Date,
  maxDays: number = AVAILABILITY_LIMITS.maxRangeDays,
): ReportRange => {
  const to = query.to === undefined ? undefined : parseBound(query.to, "to");
  const from = query.from === undefined ? undefined : parseBound(query.from, "from");
  const today = Math.floor(now.getTime() / DAY_MS) * DAY_MS;
  let end = to ? to.at.getTime() + (to.dateOnly ? DAY_MS : 0) : today + DAY_MS;
  end = Math.ceil(end / HOUR_MS) * HOUR_MS;
  let start = from ? from.at.getTime() : end - AVAILABILITY_LIMITS.defaultRangeDays * DAY_MS;
  start = Math.floor(start / HOUR_MS) * HOUR_MS;
  if (start >= end) {
    throw new AppError("validation_failed", "'from' must be before 'to'.", {
      fields: { from: ["must be before to"] },
    });
  }
  if (end - start > maxDays * DAY_MS) {
    throw new AppError("validation_failed", `A report covers at most ${maxDays} days.`, {
      fields: { to: [`must be at most ${maxDays} days after from`] },
    });
  }
  return { start: new Date(start), end: new Date(end) };
};

/** Seconds down in a window, from stored hours plus an ongoing outage, each hour capped at 3600. */
export const secondsDownIn = (
  window: ReportRange,
  stored: ReadonlyMap<number, number>,
  ongoing: TimeInterval | null,
): number => {
  const merged = new Map<number, number>();
  const [s, e] = [window.start.getTime(), window.end.getTime()];
  for (const [hour, seconds] of stored) if (hour >= s && hour < e) merged.set(hour, seconds);
  if (ongoing) {
    for (const part of splitByUtcHour(ongoing)) {
      const hour = part.hour.getTime();
      if (hour >= s && hour < e) merged.set(hour, (merged.get(hour) ?? 0) + part.ms / 1000);
    }
  }
  let total = 0;
  for (const seconds of merged.values()) total += Math.min(3_600, Math.max(0, seconds));
  return total;
};

export interface AvailabilityFigures {
  minutesDown: number;
  availabilityPercent: number;
}

/** Minutes down (2 decimals) and the share of the window that was up (2 decimals, 0..100). */
export const availabilityOf = (secondsDown: number, windowMs: number): AvailabilityFigures => {
  if (windowMs <= 0) return { minutesDown: 0, availabilityPercent: 100 };
  const down = Math.min(secondsDown * 1000, windowMs);
  return {
    minutesDown: round2(down / 60_000),
    availabilityPercent: round2(Math.max(0, 100 - (down / windowMs) * 100)),
  };
};

const periodStart = (at: number, granularity: TAvailabilityGranularity): number => {
  if (granularity === "day") return Math.floor(at / DAY_MS) * DAY_MS;
  const d = new Date(at);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
};

const nextPeriod = (start: number, granularity: TAvailabilityGranularity): number => {
  if (granularity === "day") return start + DAY_MS;
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
};

export interface AvailabilityPeriod extends AvailabilityFigures {
  periodStart: Date;
}

/**
 * One row per UTC day or month of the range, up to `now` (a period is measured over its part inside
 * the range and already past; periods wholly in the future are left out). Hours before enrollment
 * have no stored downtime, so they count as up.
 */
export const availabilityPeriods = (input: {
  range: ReportRange;
  now: Date;
  granularity: TAvailabilityGranularity;
  stored: ReadonlyMap<number, number>;
  ongoing: TimeInterval | null;
}): AvailabilityPeriod[] => {
  const end = Math.min(input.range.end.getTime(), input.now.getTime());
  const rows: AvailabilityPeriod[] = [];
  for (
    let p = periodStart(input.range.start.getTime(), input.granularity);
    p < end;
    p = nextPeriod(p, input.granularity)
  ) {
    const window = {
      start: new Date(Math.max(p, input.range.start.getTime())),
      end: new Date(Math.min(nextPeriod(p, input.granularity), end)),
    };
    const seconds = secondsDownIn(window, input.stored, input.ongoing);
    rows.push({
      periodStart: new Date(p),
      ...availabilityOf(seconds, window.end.getTime() - window.start.getTime()),
    });
  }
  return rows;
};

/**
 * The silence of a router still going on at `now`, as the metrics and reports count it: from its
 * first missed heartbeat (restart rule applied) until now, or until the daemons were last alive
 * when none is watching. Null when it is on time, never seen, or no daemon ever ran.
 */
export const ongoingDowntime = (
  lastSeenAt: Date | null,
  coverage: (HeartbeatCoverageState & { intervalMs: number }) | null,
  now: Date,
): TimeInterval | null => {
  if (!lastSeenAt || !coverage) return null;
  const watchedUntil =
    now.getTime() - coverage.aliveAt.getTime() > Math.max(coverage.intervalMs, 5_000) ? coverage.aliveAt : now;
  return downtimeBetween(
    effectiveLastSeen(lastSeenAt, coverage, coverage.intervalMs),
    watchedUntil,
    coverage.intervalMs,
  );
};
