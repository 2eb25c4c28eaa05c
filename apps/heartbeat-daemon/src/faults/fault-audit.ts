import { type NewAuditEntry, type OwnedFault, SYSTEM_ORIGIN } from "@fleet/db";

/**
 * The audit entries of the daemon's fault changes (docs/api.md "Audit log and webhooks"): the
 * sweeper's and the resumption's decision, written by them in the transaction of the change, so an
 * entry (and the webhook delivery fed from it) exists exactly when the change committed.
 */
const faultEntry = (fault: OwnedFault, action: string, occurredAt: Date, details: Record<string, unknown>) => ({
  organizationId: fault.organizationId,
  occurredAt,
  action,
  actor: SYSTEM_ORIGIN.actor,
  target: { type: "router", id: fault.routerId },
  routerId: fault.routerId,
  sourceIp: null,
  details,
});

/** `router.offline`: the sweeper opened the router's fault; dated when the fault began. */
export const faultOpenedEntry = (fault: OwnedFault): NewAuditEntry =>
  faultEntry(fault, "router.offline", fault.createdAt, { fault_id: fault.id, message: fault.message });

/** `router.online`: a heartbeat completed the router's fault; dated when it was resolved. */
export const faultCompletedEntry = (fault: OwnedFault): NewAuditEntry =>
  faultEntry(fault, "router.online", fault.resolvedAt ?? fault.createdAt, {
    fault_id: fault.id,
    cause: fault.cause,
    duration_s: fault.durationSeconds,
  });
