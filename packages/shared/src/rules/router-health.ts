/**
 * Router health rules (docs/api.md "Fault", "Metric"; docs/api.md "Routers and heartbeats"), shared by the heartbeat daemon
 * (which writes faults and downtime) and the API (which reads metrics). Pure: no clock, no I/O.
 *
 * Jitter rule: a heartbeat counts as on time when it arrives within one interval plus half an
 * interval of the previous one. Only a longer gap is downtime, and then it runs from the moment the
 * first missed heartbeat was due (previous heartbeat + one interval) until the next heartbeat.
 *
 * Restart rule: when every daemon was away (an outage of the daemons, not of the router), a router
 * that was still on time when the outage began is treated as last seen when coverage resumed, so it
 * gets its full threshold to reconnect and the daemons' absence is not counted as its downtime.
 */

export interface TimeInterval {
  from: Date;
  to: Date;
}

/** The daemons' coverage record: continuous since `coveredSince`; last outage began at `outageStartedAt`. */
export interface HeartbeatCoverageState {
  coveredSince: Date;
  aliveAt: Date;
  outageStartedAt: Date | null;
}

const HOUR_MS = 3_600_000;

/** How late a heartbeat may be and still count as on time. */
export const jitterToleranceMs = (intervalMs: number): number => Math.floor(intervalMs / 2);

/**
 * The daemons' coverage record when a daemon starts: if no daemon was alive within `gapLimitMs`,
 * every daemon was away, and coverage restarts now. Otherwise another daemon is running and the
 * record stands.
 */
export const coverageOnStart = (
  existing: HeartbeatCoverageState | null,
  now: Date,
  gapLimitMs: number,
): HeartbeatCoverageState => {
  if (!existing) return { coveredSince: now, aliveAt: now, outageStartedAt: null };
  if (now.getTime() - existing.aliveAt.getTime() > gapLimitMs) {
    return { coveredSince: now, aliveAt: now, outageStartedAt: existing.aliveAt };
  }
  return { ...existing, aliveAt: new Date(Math.max(existing.aliveAt.getTime(), now.getTime())) };
};

/** The restart rule (see the file comment): when a router's misses start counting. */
export const effectiveLastSeen = (
  lastSeen: Date,
  coverage: Pick<HeartbeatCoverageState, "coveredSince" | "outageStartedAt"> | null,
  intervalMs: number,
): Date => {
  if (!coverage?.outageStartedAt) return lastSeen;
  const onTimeAtOutage =
    lastSeen.getTime() + intervalMs + jitterToleranceMs(intervalMs) >= coverage.outageStartedAt.getTime();
  if (onTimeAtOutage && lastSeen.getTime() < coverage.coveredSince.getTime()) return coverage.coveredSince;
  return lastSeen;
};

/**
 * Downtime between a heartbeat (effective last seen) and the next one arriving at `at` (or `now`
 * while the router is still silent): null when the gap is within the jitter tolerance.
 */
export const downtimeBetween = (lastSeen: Date, at: Date, intervalMs: number): TimeInterval | null => {
  const gap = at.getTime() - lastSeen.getTime();
  if (gap <= intervalMs + jitterToleranceMs(intervalMs)) return null;
  return { from: new Date(lastSeen.getTime() + intervalMs), to: at };
};

/** Start of the UTC hour containing `date`. */
export const utcHourStart = (date: Date): Date => new Date(Math.floor(date.getTime() / HOUR_MS) * HOUR_MS);

/** Splits an interval into UTC hours: milliseconds of the interval inside each hour, in order. */
export const splitByUtcHour = (interval: TimeInterval): Array<{ hour: Date; ms: number }> => {
  const parts: Array<{ hour: Date; ms: number }> = [];
  let cursor = interval.from.getTime();
  const end = interval.to.getTime();
  while (cursor < end) {
    const hourStart = Math.floor(cursor / HOUR_MS) * HOUR_MS;
    const next = Math.min(hourStart + HOUR_MS, end);
    parts.push({ hour: new Date(hourStart), ms: next - cursor });
    cursor = next;
  }
  return parts;
};

/** Rounded to 2 decimals, half away from zero, without binary-float surprises (1.005 -> 1.01). */
export const round2 = (value: number): number => Math.round((value + Number.EPSILON) * 100) / 100;

export interface HourlyDowntime {
  /** `2026-11-21T13:00:00+00:00` */
  hour: Date;
  secondsDown: number;
  minutesDown: number;
  percentageDown: number;
}

export interface HourlyMetricsInput {
  now: Date;
  /** When the router was enrolled: hours that ended before it count 0. */
  createdAt: Date;
  /** Stored seconds down, keyed by the hour's start in epoch milliseconds. */
  stored: ReadonlyMap<number, number>;
  /** Downtime still going on (router silent now), not yet stored. */
  ongoing: TimeInterval | null;
  /** How many complete hours; docs/api.md: 24. */
  hours?: number;
}

/**
 * The most recent complete UTC hours, oldest first (docs/api.md "Routers and heartbeats"): stored downtime plus the
 * part of an ongoing outage inside each hour, capped at the whole hour.
 */
export const hourlyMetrics = (input: HourlyMetricsInput): HourlyDowntime[] => {
  const count = input.hours ?? 24;
  const windowEnd = utcHourStart(input.now).getTime();
  const ongoing = new Map<number, number>();
  if (input.ongoing) {
    for (const part of splitByUtcHour(input.ongoing)) ongoing.set(part.hour.getTime(), part.ms);
  }
  const result: HourlyDowntime[] = [];
  for (let i = count; i >= 1; i--) {
    const hourStart = windowEnd - i * HOUR_MS;
    let seconds = 0;
    if (hourStart + HOUR_MS > input.createdAt.getTime()) {
      seconds = (input.stored.get(hourStart) ?? 0) + (ongoing.get(hourStart) ?? 0) / 1000;
      seconds = Math.min(3_600, Math.max(0, seconds));
    }
    // docs/api.md "Routers and heartbeats" derives the percentage from the minutes shown, so the two always agree.
    const minutesDown = round2(seconds / 60);
    result.push({
      hour: new Date(hourStart),
      secondsDown: seconds,
      minutesDown,
      percentageDown: round2((minutesDown / 60) * 100),
    });
  }
  return result;
};

/** Fault vocabulary (docs/api.md "Fault"; docs/api.md "Routers and heartbeats"). */
export const FAULT_CAUSE_UNKNOWN = "Unknown";
export const FAULT_CAUSE_REBOOT = "Router rebooted";
export const FAULT_CAUSE_CONNECTIVITY = "Connectivity lost";

/** "Site Offline: <identity or name>"; the id when the router has neither yet. */
export const siteOfflineMessage = (router: { identity: string; name: string; id: string }): string =>
  `Site Offline: ${router.identity.trim() || router.name.trim() || router.id}`;

/** A fault's `created_at`: the first missed heartbeat (docs/api.md "Routers and heartbeats"). */
export const faultStartsAt = (lastSeen: Date, intervalMs: number): Date => new Date(lastSeen.getTime() + intervalMs);

/** When the fault opens: after `missedHeartbeats` consecutive missed periods. */
export const faultOpensAt = (lastSeen: Date, intervalMs: number, missedHeartbeats: number): Date =>
  new Date(lastSeen.getTime() + missedHeartbeats * intervalMs);

/** Whole seconds from start to resolution, never negative. */
// Timestamps are shown to the second, so the duration is the difference of the shown seconds:
// `resolved_at - created_at` as a client reads them always equals `duration`.
export const faultDurationSeconds = (createdAt: Date, resolvedAt: Date): number =>
  Math.max(0, Math.floor(resolvedAt.getTime() / 1000) - Math.floor(createdAt.getTime() / 1000));

export interface FaultCauseInput {
  /** The last heartbeat before the outage. */
  lastSeen: Date;
  /** The heartbeat that ended it. */
  resumedAt: Date;
  /** Uptime the router reported in that heartbeat, in seconds; undefined when it sent none. */
  uptimeSeconds: number | null | undefined;
}

/**
 * What a completed fault's `cause` says. A router whose uptime is shorter than its silence booted
 * during the silence: it rebooted (power loss, crash, or someone restarted it). A router that kept
 * running through the silence lost its connection. Without an uptime nothing can be inferred.
 */
export const inferFaultCause = (input: FaultCauseInput): string => {
  if (input.uptimeSeconds === null || input.uptimeSeconds === undefined || !Number.isFinite(input.uptimeSeconds)) {
    return FAULT_CAUSE_UNKNOWN;
  }
  const silenceMs = input.resumedAt.getTime() - input.lastSeen.getTime();
  return input.uptimeSeconds * 1000 < silenceMs ? FAULT_CAUSE_REBOOT : FAULT_CAUSE_CONNECTIVITY;
};
