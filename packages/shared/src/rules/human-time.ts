/**
 * Human-readable durations of docs/api.md "Router": `uptime` ("3 days, 14 hours, 5 minutes") and
 * `last_seen` ("2 minutes ago"). English only, like the rest of the API's text.
 */

const plural = (n: number, unit: string): string => `${n} ${unit}${n === 1 ? "" : "s"}`;

/**
 * Days, hours and minutes, zero units left out: 310_000 s -> "3 days, 14 hours, 6 minutes",
 * 86_460 s -> "1 day, 1 minute". Under a minute the seconds are shown ("45 seconds"), so a router
 * that just booted does not read "0 minutes".
 */
export const formatDuration = (totalSeconds: number): string => {
  const seconds = Math.max(0, Math.floor(Number.isFinite(totalSeconds) ? totalSeconds : 0));
  if (seconds < 60) return plural(seconds, "second");
  const days = Math.floor(seconds / 86_400);
  const hours = Math.floor((seconds % 86_400) / 3_600);
  const minutes = Math.floor((seconds % 3_600) / 60);
  const parts: string[] = [];
  if (days > 0) parts.push(plural(days, "day"));
  if (hours > 0) parts.push(plural(hours, "hour"));
  if (minutes > 0) parts.push(plural(minutes, "minute"));
  return parts.join(", ");
};

/** Upper bounds (exclusive, in seconds) and unit sizes, checked in order. */
const AGO_STEPS: ReadonlyArray<readonly [limit: number, size: number, unit: string]> = [
  [60, 1, "second"],
  [3_600, 60, "minute"],
  [86_400, 3_600, "hour"],
  [7 * 86_400, 86_400, "day"],
  [30 * 86_400, 7 * 86_400, "week"],
  [365 * 86_400, 30 * 86_400, "month"],
  [Number.POSITIVE_INFINITY, 365 * 86_400, "year"],
];

/**
 * The largest whole unit that fits, floored: 150 s -> "2 minutes ago", 3 s -> "3 seconds ago".
 * Under one second (or a clock slightly behind the reader's) reads "just now"; `null` reads "never".
 */
export const formatTimeAgo = (then: Date | null, now: Date): string => {
  if (then === null) return "never";
  const seconds = Math.floor((now.getTime() - then.getTime()) / 1000);
  if (seconds < 1) return "just now";
  for (const [limit, size, unit] of AGO_STEPS) {
    if (seconds < limit) return `${plural(Math.floor(seconds / size), unit)} ago`;
  }
  return "never";
};
