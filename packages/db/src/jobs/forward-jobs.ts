import { ROUTER_JOB_KINDS } from "@fleet/shared";
import type { Query } from "../database.ts";
import type { AuditOrigin } from "../repositories/audit-log.repository.ts";
import type { ForwardRecord } from "../repositories/forwards.repository.ts";
import type { JobEngine } from "./job-engine.ts";
import { queueRouterJob } from "./router-jobs.ts";
import { type ClosedSessionKind, recordSessionsClosed } from "./session-jobs.ts";

/** Queues a forward's router job in the caller's transaction (it commits or rolls back with it). */
export const queueForwardJob = (
  engine: JobEngine,
  kind: typeof ROUTER_JOB_KINDS.apply | typeof ROUTER_JOB_KINDS.remove,
  forward: Pick<ForwardRecord, "id" | "routerId">,
  query: Query,
) => queueRouterJob(engine, { kind, forward_id: forward.id, router_id: forward.routerId }, query);

/** A forward's removal job and its `forward.expired` or `forward.revoked` entry, by `origin` either way. */
const CLOSED_FORWARD: ClosedSessionKind<ForwardRecord> = {
  removalJob: (forward) => ({ kind: ROUTER_JOB_KINDS.remove, forward_id: forward.id, router_id: forward.routerId }),
  auditEntry: (forward, origin) => ({
    occurredAt: forward.closedAt ?? new Date(),
    action: forward.status === "expired" ? "forward.expired" : "forward.revoked",
    actor: origin.actor,
    sourceIp: origin.sourceIp,
    target: { type: "forward", id: forward.id },
    details: {
      entry_point: forward.entryPoint,
      port: forward.port,
      dst_address: forward.dstAddress,
      dst_port: forward.dstPort,
    },
  }),
};

/**
 * What follows every close of a forward (the API's DELETE and its freeing of stale ports, the
 * agent's expiry sweep), in the transaction that closed it: see `recordSessionsClosed`
 * (docs/api.md "Audit log and webhooks").
 */
export const recordForwardsClosed = (
  query: Query,
  engine: JobEngine,
  closed: readonly ForwardRecord[],
  origin: AuditOrigin,
): Promise<void> => recordSessionsClosed(query, engine, closed, origin, CLOSED_FORWARD);
