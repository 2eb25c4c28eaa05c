import { FORWARD_JOB_KINDS } from "@fleet/shared";
import type { Query } from "../database.ts";
import { type AuditOrigin, insertAuditEntry } from "../repositories/audit-log.repository.ts";
import type { ForwardRecord } from "../repositories/forwards.repository.ts";
import type { JobEngine } from "./job-engine.ts";
import { queueRouterJob } from "./router-jobs.ts";

type Row = Record<string, unknown>;

/** Queues a forward's router job in the caller's transaction (it commits or rolls back with it). */
export const queueForwardJob = (
  engine: JobEngine,
  kind: typeof FORWARD_JOB_KINDS.apply | typeof FORWARD_JOB_KINDS.remove,
  forward: Pick<ForwardRecord, "id" | "routerId">,
  query: Query,
) => queueRouterJob(engine, { kind, forward_id: forward.id, router_id: forward.routerId }, query);

/**
 * What follows every close of a forward, in the transaction that closed it, whoever closed it (the
 * API's DELETE and its freeing of stale ports, the agent's expiry sweep): its removal job, so no
 * crash can leave a closed forward whose rule nobody removes, and its audit entry
 * (`forward.expired` or `forward.revoked`, docs/api.md "Audit log and webhooks"). One home for both
 * processes, since apps never import each other.
 */
export const recordForwardsClosed = async (
  query: Query,
  engine: JobEngine,
  closed: readonly ForwardRecord[],
  origin: AuditOrigin,
): Promise<void> => {
  if (closed.length === 0) return;
  for (const forward of closed) await queueForwardJob(engine, FORWARD_JOB_KINDS.remove, forward, query);
  const orgs = await query<Row>(`select id, organization_id from routers where id = any($1::uuid[])`, [
    [...new Set(closed.map((f) => f.routerId))],
  ]);
  const orgOf = new Map(orgs.map((row) => [String(row.id), String(row.organization_id)]));
  for (const forward of closed) {
    const organizationId = orgOf.get(forward.routerId);
    if (!organizationId) continue;
    await insertAuditEntry(query, {
      organizationId,
      occurredAt: forward.closedAt ?? new Date(),
      action: forward.status === "expired" ? "forward.expired" : "forward.revoked",
      actor: origin.actor,
      sourceIp: origin.sourceIp,
      target: { type: "forward", id: forward.id },
      routerId: forward.routerId,
      details: {
        entry_point: forward.entryPoint,
        port: forward.port,
        dst_address: forward.dstAddress,
        dst_port: forward.dstPort,
      },
    });
  }
};
