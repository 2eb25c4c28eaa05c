import { ROUTER_JOB_KINDS } from "@fleet/shared";
import type { Database } from "../database.ts";
import { queueForwardJob, recordForwardsClosed } from "../jobs/forward-jobs.ts";
import type { JobEngine } from "../jobs/job-engine.ts";
import { SYSTEM_ORIGIN } from "../repositories/audit-log.repository.ts";
import { claimEntryPointPort } from "../repositories/entry-point-ports.ts";
import { type ForwardRecord, ForwardsRepository } from "../repositories/forwards.repository.ts";

export interface ForwardFactoryInput {
  routerId: string;
  entryPoint: string;
  /** The range a free port is claimed from. */
  ports: readonly [number, number];
  dstAddress?: string;
  dstPort?: number;
  allowOnlyCidr?: string;
  expiresAt: Date;
}

/**
 * An active forward with its `forward.apply` job, as the API's create stores them (without its
 * quotas, router check and audit entry: tests of the agent's side need only the row and the job).
 */
export const makeForward = (
  db: Database,
  engine: JobEngine,
  input: ForwardFactoryInput,
  now = new Date(),
): Promise<ForwardRecord> =>
  db.transaction(async (query) => {
    const forwards = new ForwardsRepository(query);
    const forward = await claimEntryPointPort(query, {
      entryPoint: input.entryPoint,
      ports: input.ports,
      attempts: 25,
      insert: (port) =>
        forwards.insertActive({
          id: crypto.randomUUID(),
          routerId: input.routerId,
          entryPoint: input.entryPoint,
          port,
          dstAddress: input.dstAddress ?? "192.168.88.10",
          dstPort: input.dstPort ?? 22,
          allowOnlyCidr: input.allowOnlyCidr ?? "8.8.8.0/24",
          expiresAt: input.expiresAt,
          createdAt: now,
          createdBy: SYSTEM_ORIGIN.actor,
        }),
    });
    if (!forward) throw new Error(`no free port at ${input.entryPoint} ${input.ports.join("-")}`);
    await queueForwardJob(engine, ROUTER_JOB_KINDS.apply, forward, query);
    return forward;
  });

/** Revokes an active forward with its removal job and audit entry, as the API's DELETE does. */
export const revokeForward = (db: Database, engine: JobEngine, forward: ForwardRecord, now = new Date()) =>
  db.transaction(async (query) => {
    const closed = await new ForwardsRepository(query).closeActive(forward.routerId, forward.id, now);
    if (closed) await recordForwardsClosed(query, engine, [closed], SYSTEM_ORIGIN);
    return closed;
  });

/** The expiry sweep of the tunnel agent (its `ForwardLifecycle.expireDue`), for tests of what follows it. */
export const expireForwards = (db: Database, engine: JobEngine, now: Date) =>
  db.transaction(async (query) => {
    const closed = await new ForwardsRepository(query).expireDue(now);
    await recordForwardsClosed(query, engine, closed, SYSTEM_ORIGIN);
    return closed;
  });
