import type { AuditRecord } from "@fleet/db";
import { formatIsoUtc, type TAuditEntry } from "@fleet/shared";

/** docs/api.md "Audit log and webhooks": `router_id` and `source_ip` only when known. */
export const toAuditEntry = (entry: AuditRecord): TAuditEntry => ({
  id: entry.id,
  occurred_at: formatIsoUtc(entry.occurredAt),
  action: entry.action,
  actor: { type: entry.actor.type, id: entry.actor.id },
  target: entry.target,
  ...(entry.routerId ? { router_id: entry.routerId } : {}),
  ...(entry.sourceIp ? { source_ip: entry.sourceIp } : {}),
  details: entry.details,
});

/** The position after an entry: opaque to clients, exact to the millisecond the rows are stored at. */
export const encodeCursor = (entry: AuditRecord): string =>
  Buffer.from(`${entry.occurredAt.getTime()}:${entry.id}`).toString("base64url");

const CURSOR = /^(\d{1,15}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export const decodeCursor = (cursor: string): { occurredAt: Date; id: string } | null => {
  const match = CURSOR.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match?.[1] || !match[2]) return null;
  return { occurredAt: new Date(Number(match[1])), id: match[2] };
};
