import {
  type AccessRecord,
  AccessRepository,
  type Database,
  type JobEngine,
  queryOf,
  recordAccessClosed,
  SYSTEM_ORIGIN,
} from "@fleet/db";

/**
 * The agent's side of a temporary access session's life (docs/api.md "Temporary router access"):
 * its user is on the router (applied), or its time came (expired). The expiry commits with what
 * follows from it (the `access.remove` job, the `router.access.expired` entry) in one transaction.
 */
export class AccessLifecycle {
  readonly #db: Database;
  readonly #jobs: JobEngine;
  constructor(deps: { db: Database; jobs: JobEngine }) {
    this.#db = deps.db;
    this.#jobs = deps.jobs;
  }

  async markApplied(id: string, now: Date): Promise<void> {
    await new AccessRepository(queryOf(this.#db)).markApplied(id, now);
  }

  /** The expiry sweep: closes every active session whose time has come, with its removal job and audit entry. */
  async expireDue(now: Date): Promise<AccessRecord[]> {
    return this.#db.transaction(async (query) => {
      const closed = await new AccessRepository(query).expireDue(now);
      await recordAccessClosed(query, this.#jobs, closed, SYSTEM_ORIGIN);
      return closed;
    });
  }
}
