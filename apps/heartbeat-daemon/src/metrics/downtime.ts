import type { DowntimeWrite } from "@fleet/db";
import { downtimeBetween, effectiveLastSeen, type HeartbeatCoverageState, splitByUtcHour } from "@fleet/shared";

/**
 * Downtime a heartbeat closes (docs/api.md "Routers and heartbeats": down from the first missed heartbeat until the
 * next heartbeat), per UTC hour, for the compact hourly table. Nothing when the gap was within the
 * jitter tolerance or the router had never been seen; daemon outages are excused by the restart rule.
 */
export const downtimeClosedBy = (input: {
  routerId: string;
  previousSeenAt: Date | null;
  seenAt: Date;
  coverage: Pick<HeartbeatCoverageState, "coveredSince" | "outageStartedAt"> | null;
  intervalMs: number;
}): DowntimeWrite[] => {
  if (!input.previousSeenAt) return [];
  const from = effectiveLastSeen(input.previousSeenAt, input.coverage, input.intervalMs);
  const down = downtimeBetween(from, input.seenAt, input.intervalMs);
  if (!down) return [];
  return splitByUtcHour(down).map((part) => ({ routerId: input.routerId, hour: part.hour, seconds: part.ms / 1000 }));
};
