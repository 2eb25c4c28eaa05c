import type { ForwardRecord } from "@fleet/db";
import { formatIsoUtc, type TForward, type TForwardState, timeToExpire } from "@fleet/shared";

/** pending until applied, active once applied, failed when the agent gave up, closed after expiry or revoke. */
const stateOf = (forward: ForwardRecord, expired: boolean): TForwardState => {
  if (forward.status === "failed") return "failed";
  if (forward.status !== "active" || expired) return "closed";
  return forward.appliedAt ? "active" : "pending";
};

/**
 * Record -> response (docs/api.md "Transient Port Forward"). `expired` is true once the time has come,
 * even before the agent's sweep has closed the row, so answers never depend on the sweep's timing.
 */
export const toForwardResponse = (forward: ForwardRecord, now: Date): TForward => {
  const revoked = forward.status === "revoked";
  const expired = forward.status === "expired" || (forward.status === "active" && forward.expiresAt <= now);
  return {
    id: forward.id,
    port: forward.port,
    revoked_early: revoked,
    allow_only_cidr: forward.allowOnlyCidr,
    authorized_at: null,
    expires_at: formatIsoUtc(forward.expiresAt),
    expired,
    entry_point: forward.entryPoint,
    dst_address: forward.dstAddress,
    dst_port: forward.dstPort,
    time_to_expire: revoked ? "revoked" : timeToExpire(forward.expiresAt, now),
    state: stateOf(forward, expired),
    failure_reason: forward.status === "failed" ? forward.failureReason : null,
  };
};
