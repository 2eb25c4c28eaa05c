import { type AccessRecord, AccessRepository, type Database, type JobEngine, recordAccessClosed } from "@fleet/db";
import { SessionLifecycle } from "./session-lifecycle.ts";

/**
 * The agent's side of a temporary access session's life (docs/api.md "Temporary router access"):
 * its user is on the router (applied), or its time came (expired, with the `access.remove` job and
 * the `router.access.expired` entry).
 */
export class AccessLifecycle extends SessionLifecycle<AccessRecord> {
  constructor(deps: { db: Database; jobs: JobEngine }) {
    super(deps, { rows: (query) => new AccessRepository(query), recordClosed: recordAccessClosed });
  }
}
