import {
  type Database,
  type ForwardRecord,
  ForwardsRepository,
  insertAuditEntry,
  type JobEngine,
  organizationsOfRouters,
  recordForwardsClosed,
  SYSTEM_ORIGIN,
} from "@fleet/db";
import { SessionLifecycle } from "./session-lifecycle.ts";

/**
 * The agent's side of a forward's life (docs/api.md "Tunnel agent and entry point"): its rule is
 * on the router (applied), the agent gave up (failed), or its time came (expired). Each change
 * commits with what follows from it (audit entry, removal job) in one transaction.
 */
export class ForwardLifecycle extends SessionLifecycle<ForwardRecord> {
  constructor(deps: { db: Database; jobs: JobEngine }) {
    super(deps, { rows: (query) => new ForwardsRepository(query), recordClosed: recordForwardsClosed });
  }

  /**
   * The agent gave up applying an active forward (docs/api.md "Transient Port Forward" `state`):
   * it becomes `failed` with the reason (its port and quota slot are free again) and
   * `forward.failed` is audited (and sent to webhooks) in the same transaction. Answers the
   * forward, or null when it was no longer active (closed meanwhile: nothing changes).
   */
  async markFailed(id: string, reason: string, now: Date): Promise<ForwardRecord | null> {
    return this.db.transaction(async (query) => {
      const failed = await new ForwardsRepository(query).markFailed(id, reason, now);
      if (!failed) return null;
      const organizationId = (await organizationsOfRouters(query, [failed.routerId])).get(failed.routerId);
      if (organizationId) {
        await insertAuditEntry(query, {
          organizationId,
          occurredAt: now,
          action: "forward.failed",
          actor: SYSTEM_ORIGIN.actor,
          sourceIp: null,
          target: { type: "forward", id: failed.id },
          routerId: failed.routerId,
          details: {
            entry_point: failed.entryPoint,
            port: failed.port,
            dst_address: failed.dstAddress,
            dst_port: failed.dstPort,
            failure_reason: failed.failureReason,
          },
        });
      }
      return failed;
    });
  }
}
