import type { Query } from "../database.ts";
import { type AuditOrigin, insertAuditEntry, type NewAuditEntry } from "../repositories/audit-log.repository.ts";
import { organizationsOfRouters } from "../repositories/entry-point-sessions.ts";
import type { JobEngine } from "./job-engine.ts";
import { queueRouterJob, type RouterJobData } from "./router-jobs.ts";

/** What differs when a forward or a temporary access session closes: its removal job and its audit entry. */
export interface ClosedSessionKind<R extends { routerId: string }> {
  removalJob(session: R): RouterJobData;
  /** The entry of one closed session (its organization and router are added). */
  auditEntry(session: R, origin: AuditOrigin): Omit<NewAuditEntry, "organizationId" | "routerId">;
}

/**
 * What follows every close of a session the entry point serves, in the transaction that closed it,
 * whoever closed it (the API's DELETE or revoke, the agent's expiry sweep): its removal job, so no
 * crash can leave a closed session whose rule or user nobody removes, and its audit entry, owned
 * by the router's organization (none for a router already gone). One home for both kinds and both
 * processes, since apps never import each other.
 */
export const recordSessionsClosed = async <R extends { routerId: string }>(
  query: Query,
  engine: JobEngine,
  closed: readonly R[],
  origin: AuditOrigin,
  kind: ClosedSessionKind<R>,
): Promise<void> => {
  if (closed.length === 0) return;
  for (const session of closed) await queueRouterJob(engine, kind.removalJob(session), query);
  const orgOf = await organizationsOfRouters(
    query,
    closed.map((s) => s.routerId),
  );
  for (const session of closed) {
    const organizationId = orgOf.get(session.routerId);
    if (!organizationId) continue;
    await insertAuditEntry(query, { ...kind.auditEntry(session, origin), organizationId, routerId: session.routerId });
  }
};
