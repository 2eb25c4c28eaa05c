import {
  type Database,
  type ForwardRecord,
  ForwardsRepository,
  insertAuditEntry,
  type JobEngine,
  queryOf,
  recordForwardsClosed,
  SYSTEM_ORIGIN,
} from "@fleet/db";

/**
 * The agent's side of a forward's life (docs/api.md "Tunnel agent and entry point"): its rule is
 * on the router (applied), the agent gave up (failed), or its time came (expired). Each change
 * commits with what follows from it (audit entry, removal job) in one transaction.
 */
export class ForwardLifecycle {
  readonly #db: Database;
  readonly #jobs: JobEngine;
  constructor(deps: { db: Database; jobs: JobEngine }) {
    this.#db = deps.db;
    this.#jobs = deps.jobs;
  }

  async markApplied(id: string, now: Date): Promise<void> {
    await new ForwardsRepository(queryOf(this.#db)).markApplied(id, now);
  }

  /**
   * The agent gave up applying an active forward (docs/api.md "Transient Port Forward" `state`):
   * it becomes `failed` with the reason (its port and quota slot are free again) and
   * `forward.failed` is audited (and sent to webhooks) in the same transaction. Answers the
   * forward, or null when it was no longer active (closed meanwhile: nothing changes).
   */
  async markFailed(id: string, reason: string, now: Date): Promise<ForwardRecord | null> {
    return this.#db.transaction(async (query) => {
      const forwards = new ForwardsRepository(query);
      const failed = await forwards.markFailed(id, reason, now);
      if (!failed) return null;
      const organizationId = await forwards.organizationOfRouter(failed.routerId);
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

  /** The expiry sweep: closes every active forward whose time has come, with its removal job and audit entry. */
  async expireDue(now: Date): Promise<ForwardRecord[]> {
    return this.#db.transaction(async (query) => {
      const closed = await new ForwardsRepository(query).expireDue(now);
      await recordForwardsClosed(query, this.#jobs, closed, SYSTEM_ORIGIN);
      return closed;
    });
  }
}
