import { ROUTER_JOB_KINDS } from "@fleet/shared";
import type { Query } from "../database.ts";
import type { AccessRecord } from "../repositories/access.repository.ts";
import { type AuditOrigin, SYSTEM_ORIGIN } from "../repositories/audit-log.repository.ts";
import type { JobEngine } from "./job-engine.ts";
import { queueRouterJob } from "./router-jobs.ts";
import { type ClosedSessionKind, recordSessionsClosed } from "./session-jobs.ts";

/** Queues a session's router job in the caller's transaction (it commits or rolls back with it). */
export const queueAccessJob = (
  engine: JobEngine,
  kind: typeof ROUTER_JOB_KINDS.accessApply | typeof ROUTER_JOB_KINDS.accessRemove,
  access: Pick<AccessRecord, "id" | "routerId">,
  query: Query,
) => queueRouterJob(engine, { kind, access_id: access.id, router_id: access.routerId }, query);

/**
 * A session's `access.remove` job and its entry: `router.access.revoked` by `origin`, or
 * `router.access.expired` by the system whoever closed it (docs/api.md "Audit log and webhooks").
 */
const CLOSED_ACCESS: ClosedSessionKind<AccessRecord> = {
  removalJob: (access) => ({ kind: ROUTER_JOB_KINDS.accessRemove, access_id: access.id, router_id: access.routerId }),
  auditEntry: (access, origin) => {
    const expired = access.status === "expired";
    return {
      occurredAt: access.closedAt ?? access.expiresAt,
      action: expired ? "router.access.expired" : "router.access.revoked",
      actor: expired ? SYSTEM_ORIGIN.actor : origin.actor,
      sourceIp: expired ? null : origin.sourceIp,
      target: { type: "router_access", id: access.id },
      details: { service: access.service, level: access.level, username: access.username },
    };
  },
};

/**
 * What follows every close of a temporary access session (the API's revoke, the agent's expiry
 * sweep), in the transaction that closed it: see `recordSessionsClosed`.
 */
export const recordAccessClosed = (
  query: Query,
  engine: JobEngine,
  closed: readonly AccessRecord[],
  origin: AuditOrigin,
): Promise<void> => recordSessionsClosed(query, engine, closed, origin, CLOSED_ACCESS);
