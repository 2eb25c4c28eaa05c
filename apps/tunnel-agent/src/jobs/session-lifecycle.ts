import { type AuditOrigin, type Database, type JobEngine, type Query, queryOf, SYSTEM_ORIGIN } from "@fleet/db";

/** What a session's lifecycle writes through its repository, on the caller's query. */
export interface SessionRows<R> {
  markApplied(id: string, now: Date): Promise<void>;
  expireDue(now: Date): Promise<R[]>;
}

/** What differs between forwards and temporary access: their repository and what follows a close. */
export interface SessionKind<R> {
  rows(query: Query): SessionRows<R>;
  recordClosed(query: Query, jobs: JobEngine, closed: readonly R[], origin: AuditOrigin): Promise<void>;
}

/**
 * The agent's side of the life of a session the entry point serves (a forward, temporary router
 * access): it is on the router (applied), or its time came (expired). The expiry commits with what
 * follows from it (the removal job, the audit entry) in one transaction.
 */
export class SessionLifecycle<R> {
  protected readonly db: Database;
  protected readonly jobs: JobEngine;
  readonly #kind: SessionKind<R>;
  constructor(deps: { db: Database; jobs: JobEngine }, kind: SessionKind<R>) {
    this.db = deps.db;
    this.jobs = deps.jobs;
    this.#kind = kind;
  }

  async markApplied(id: string, now: Date): Promise<void> {
    await this.#kind.rows(queryOf(this.db)).markApplied(id, now);
  }

  /** The expiry sweep: closes every active session whose time has come, with its removal job and audit entry. */
  async expireDue(now: Date): Promise<R[]> {
    return this.db.transaction(async (query) => {
      const closed = await this.#kind.rows(query).expireDue(now);
      await this.#kind.recordClosed(query, this.jobs, closed, SYSTEM_ORIGIN);
      return closed;
    });
  }
}
