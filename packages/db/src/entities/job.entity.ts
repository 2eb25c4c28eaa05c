import { defineEntity, type InferEntity, p } from "@mikro-orm/core";

/**
 * A durable job (the tunnel agent's queue): claimed with `FOR UPDATE SKIP LOCKED`, held under a
 * lease (`lockedBy`/`lockedUntil`) so a crashed agent's job is claimed again, retried with backoff.
 * Jobs of one `groupKey` (a router) never run at the same time.
 */
export const Job = defineEntity({
  name: "Job",
  tableName: "jobs",
  uniques: [
    // At most one queued or running job per dedupe key (periodic reconciliation enqueues freely).
    { name: "jobs_dedupe_key_unique", properties: ["dedupeKey"], where: "status in ('pending', 'running')" },
  ],
  indexes: [
    { name: "jobs_status_run_at_index", properties: ["status", "runAt"] },
    { name: "jobs_group_key_status_index", properties: ["groupKey", "status"] },
  ],
  properties: {
    id: p.uuid().primary(),
    kind: p.string().length(64),
    groupKey: p.string().length(100),
    dedupeKey: p.string().length(200).nullable(),
    payload: p.json<Record<string, unknown>>(),
    status: p.enum(["pending", "running", "done", "failed"] as const).default("pending"),
    attempts: p.integer().default(0),
    maxAttempts: p.integer().default(10),
    runAt: p.datetime(),
    lockedBy: p.string().length(100).nullable(),
    lockedUntil: p.datetime().nullable(),
    lastError: p.text().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    finishedAt: p.datetime().nullable(),
  },
});
export type TJob = InferEntity<typeof Job>;
