import { FORWARD_JOB_KINDS } from "@fleet/shared";
import type { Query } from "../database.ts";
import { type AccessRecord, AccessRepository } from "../repositories/access.repository.ts";
import { type AuditOrigin, insertAuditEntry, SYSTEM_ORIGIN } from "../repositories/audit-log.repository.ts";
import type { JobEngine } from "./job-engine.ts";
import { queueRouterJob } from "./router-jobs.ts";

/** Queues a session's router job in the caller's transaction (it commits or rolls back with it). */
export const queueAccessJob = (
  engine: JobEngine,
  kind: typeof FORWARD_JOB_KINDS.accessApply | typeof FORWARD_JOB_KINDS.accessRemove,
  access: Pick<AccessRecord, "id" | "routerId">,
  query: Query,
) => queueRouterJob(engine, { kind, access_id: access.id, router_id: access.routerId }, query);

/**
 * What follows every close of a temporary access session, in the transaction that closed it,
 * whoever closed it (the API's revoke, the agent's expiry sweep): its `access.remove` job, so no
 * crash can leave a closed session whose user nobody removes, and its audit entry
 * (`router.access.revoked` by `origin`, or `router.access.expired` by the system, docs/api.md
 * "Audit log and webhooks"). One home for both processes, since apps never import each other.
 */
export const recordAccessClosed = async (
  query: Query,
  engine: JobEngine,
  closed: readonly AccessRecord[],
  origin: AuditOrigin,
): Promise<void> => {
  if (closed.length === 0) return;
  const orgOf = await new AccessRepository(query).organizationsOfRouters(closed.map((a) => a.routerId));
  for (const access of closed) {
    await queueAccessJob(engine, FORWARD_JOB_KINDS.accessRemove, access, query);
    const organizationId = orgOf.get(access.routerId);
    if (!organizationId) continue;
    const expired = access.status === "expired";
    await insertAuditEntry(query, {
      organizationId,
      occurredAt: access.closedAt ?? access.expiresAt,
      action: expired ? "router.access.expired" : "router.access.revoked",
      actor: expired ? SYSTEM_ORIGIN.actor : origin.actor,
      sourceIp: expired ? null : origin.sourceIp,
      target: { type: "router_access", id: access.id },
      routerId: access.routerId,
      details: { service: access.service, level: access.level, username: access.username },
    });
  }
};
