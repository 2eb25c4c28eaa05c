/**
 * docs/api.md "Transient Port Forward" `time_to_expire`: the remaining time in words, rounded down to the
 * largest whole unit ("59 minutes from now", "1 hour from now"), or "expired" once it has passed.
 */
const UNITS: ReadonlyArray<[string, number]> = [
  ["day", 86_400],
  ["hour", 3_600],
  ["minute", 60],
  ["second", 1],
];

export const timeToExpire = (expiresAt: Date, now: Date): string => {
  const ms = expiresAt.getTime() - now.getTime();
  if (ms <= 0) return "expired";
  // Under a second left still reads as time left, not "0 seconds".
  const seconds = Math.max(1, Math.floor(ms / 1000));
  for (const [unit, size] of UNITS) {
    const count = Math.floor(seconds / size);
    if (count >= 1) return `${count} ${unit}${count === 1 ? "" : "s"} from now`;
  }
  return "1 second from now";
};
