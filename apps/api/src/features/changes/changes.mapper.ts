import type { ChangeRecord, ChangeRouterRecord } from "@fleet/db";
import { formatIsoUtc, type TChange, type TChangeRouter } from "@fleet/shared";

const iso = (date: Date | null): string | null => (date ? formatIsoUtc(date) : null);

/** docs/api.md "Changes". */
export const toChangeResponse = (change: ChangeRecord, counts: Record<string, number>): TChange => ({
  id: change.id,
  name: change.name,
  kind: change.kind,
  state: change.state,
  script: change.script,
  firmware: change.firmwareChannel ? { channel: change.firmwareChannel, version: change.firmwareVersion } : null,
  routers_selector: change.selector,
  strategy: {
    canary: change.canary,
    wave_size: change.waveSize,
    wave_interval_seconds: change.waveIntervalSeconds,
    max_failures: change.maxFailures,
  },
  guard_seconds: change.guardSeconds,
  requires_approval: change.requiresApproval,
  start_at: iso(change.startAt),
  created_by: change.createdBy.id,
  approved_by: change.approvedBy,
  created_at: formatIsoUtc(change.createdAt),
  started_at: iso(change.startedAt),
  finished_at: iso(change.finishedAt),
  counts,
});

export const toChangeRouterResponse = (step: ChangeRouterRecord): TChangeRouter => ({
  id: step.id,
  router_id: step.routerId,
  wave: step.wave,
  position: step.position,
  state: step.state,
  phase: step.phase,
  output: step.output,
  started_at: iso(step.startedAt),
  finished_at: iso(step.finishedAt),
});

/** The position after a change: opaque to clients, exact to the millisecond the rows are stored at. */
export const encodeChangeCursor = (change: ChangeRecord): string =>
  Buffer.from(`${change.createdAt.getTime()}:${change.id}`).toString("base64url");

const CURSOR = /^(\d{1,15}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export const decodeChangeCursor = (cursor: string): { createdAt: Date; id: string } | null => {
  const match = CURSOR.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match?.[1] || !match[2]) return null;
  return { createdAt: new Date(Number(match[1])), id: match[2] };
};
