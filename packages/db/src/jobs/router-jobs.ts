import { ROUTER_JOB_KINDS, type TRouterJobKind } from "@fleet/shared";
import type { Database } from "../database.ts";
import type { Query } from "../database.ts";
import { toDate, toNumber } from "../repositories/sql-values.ts";
import type { JobEngine, JobQueueDefinition } from "./job-engine.ts";

/**
 * The tunnel agent's router jobs (apply, remove, reconcile) on the job engine. They share one
 * `key_strict_fifo` queue keyed by router id: a router's jobs run one at a time, in the order they
 * were queued, whichever agent takes them (a unique index in pg-boss guarantees it, on PostgreSQL
 * as on PGlite). A job whose retries are spent moves to the dead-letter queue; the agent then
 * deletes the failed original so the router's later jobs are not held behind it (the periodic
 * reconciliation repairs what the failed job left undone).
 */
export const ROUTER_JOBS_QUEUE = "router.jobs";
export const ROUTER_JOBS_DEAD_LETTER = "router.jobs.dead";

/**
 * `router.offboard`: the removed router's device loses what adoption installed (docs/routeros.md
 * "Offboarding"). Queued by the removal, in its transaction; payload `{ router_id }` of the removed router.
 */
export const ROUTER_OFFBOARD_JOB = ROUTER_JOB_KINDS.offboard;

/** Attempts of a router job before it is dead-lettered (the first one included). */
export const ROUTER_JOB_ATTEMPTS = 10;

/** A router job as its handler sees it. */
export interface JobRecord {
  id: string;
  kind: TRouterJobKind;
  /** What was queued; handlers still validate the ids they need (a row may predate a change of payload). */
  payload: RouterJobData;
  /** 1 on the first attempt. */
  attempts: number;
}

export interface RouterJobData {
  kind: TRouterJobKind;
  router_id: string;
  forward_id?: string;
  /** Temporary router access jobs (`access.apply`, `access.remove`). */
  access_id?: string;
  /** A fleet change's router step (`change.apply`): the `change_routers` row. */
  change_router_id?: string;
}

/**
 * The queue's settings. `expireInSeconds` is the lease: an attempt still active after it is taken
 * to have died with its agent and is retried by another (TUNNEL_JOB_LEASE_MS).
 */
export const routerJobsQueue = (leaseSeconds = 60): JobQueueDefinition => ({
  name: ROUTER_JOBS_QUEUE,
  policy: "key_strict_fifo",
  retryLimit: ROUTER_JOB_ATTEMPTS - 1,
  retryDelaySeconds: 1,
  retryBackoff: true,
  retryDelayMaxSeconds: 300,
  expireInSeconds: Math.max(1, Math.ceil(leaseSeconds)),
  deadLetter: ROUTER_JOBS_DEAD_LETTER,
  // Finished jobs stay a week for inspection (`npm run admin -- jobs`), then pg-boss deletes them.
  deleteAfterSeconds: 7 * 24 * 3600,
  retentionSeconds: 14 * 24 * 3600,
});

/**
 * Someone waits for these (docs/api.md "Tunnel agent and entry point": a forward's or an access
 * session's apply never waits behind bulk work): they are taken before backups, reconciliation and
 * offboarding, and the agent keeps a lane of workers that takes only them (INTERACTIVE_JOB_PRIORITY),
 * so no number of slow bulk jobs can hold them back. One router's jobs still run one at a time, in order.
 */
const INTERACTIVE_KINDS: ReadonlySet<TRouterJobKind> = new Set([
  ROUTER_JOB_KINDS.apply,
  ROUTER_JOB_KINDS.remove,
  ROUTER_JOB_KINDS.accessApply,
  ROUTER_JOB_KINDS.accessRemove,
]);

/** The priority of interactive router jobs (bulk jobs have 0). */
export const INTERACTIVE_JOB_PRIORITY = 10;

/**
 * The priority of a fleet change's router steps (`change.apply`): mostly waiting on the router
 * (its commands, its heartbeat), so the agent runs many at once in a lane of their own
 * (TUNNEL_CHANGE_CONCURRENCY) that bulk work cannot occupy; below interactive jobs.
 */
export const CHANGE_JOB_PRIORITY = 5;

/** The queue priority of a router job of this kind. */
export const routerJobPriority = (kind: TRouterJobKind): number =>
  INTERACTIVE_KINDS.has(kind)
    ? INTERACTIVE_JOB_PRIORITY
    : kind === ROUTER_JOB_KINDS.changeApply
      ? CHANGE_JOB_PRIORITY
      : 0;

/** Queues a router job; with `executor` it commits or rolls back with the caller's transaction. */
export const queueRouterJob = (
  engine: JobEngine,
  data: RouterJobData,
  executor?: Query,
  options: { retryLimit?: number; startAfter?: Date } = {},
) =>
  engine.send(ROUTER_JOBS_QUEUE, data, {
    singletonKey: data.router_id,
    priority: routerJobPriority(data.kind),
    ...(executor ? { executor } : {}),
    ...(options.startAfter === undefined ? {} : { startAfter: options.startAfter }),
    ...(options.retryLimit === undefined ? {} : { retryLimit: options.retryLimit }),
  });

/** Queues router jobs in one statement, in the caller's transaction (a change's wave). */
export const queueRouterJobs = (engine: JobEngine, jobs: readonly RouterJobData[], executor: Query) =>
  engine.sendMany(
    ROUTER_JOBS_QUEUE,
    jobs.map((data) => ({ data, singletonKey: data.router_id, priority: routerJobPriority(data.kind) })),
    { executor },
  );

/** Attempts of a configuration backup job (the first included): an unreachable router is reported sooner than a forward retries. */
export const BACKUP_JOB_ATTEMPTS = 3;

/**
 * Queues a backup of one router (docs/api.md "Configuration backups") behind its other router jobs;
 * a backup of the router still waiting in the queue is the one answered instead: it runs after
 * every change queued before now, so a burst of changes or requests costs one read of the router.
 * The look and the send are one transaction under a lock per router, so concurrent callers (any
 * process) cannot both find nothing and both queue.
 */
export const queueBackupJob = (
  engine: JobEngine,
  db: Pick<Database, "transaction">,
  routerId: string,
): Promise<string | null> =>
  db.transaction(async (query) => {
    // Raw SQL on purpose: a transaction-scoped advisory lock keyed by the router, and pg-boss's own table.
    await query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [`router.backup:${routerId}`]);
    const [waiting] = await query<{ id: string }>(
      `select id from pgboss.job where name = $1 and singleton_key = $2 and state in ('created', 'retry')
         and data->>'kind' = $3 order by created_on limit 1`,
      [ROUTER_JOBS_QUEUE, routerId, ROUTER_JOB_KINDS.backup],
    );
    if (waiting) return String(waiting.id);
    return queueRouterJob(engine, { kind: ROUTER_JOB_KINDS.backup, router_id: routerId }, query, {
      retryLimit: BACKUP_JOB_ATTEMPTS - 1,
    });
  });

/** pg-boss's job states, as the admin CLI and tests read them. */
export type TRouterJobState = "created" | "retry" | "active" | "completed" | "cancelled" | "failed";

export interface RouterJobRow {
  id: string;
  kind: TRouterJobKind;
  routerId: string;
  forwardId: string | null;
  state: TRouterJobState;
  attempts: number;
  startAfter: Date;
  /** The error text of the last failed attempt, if any. */
  lastError: string | null;
  createdOn: Date;
}

/**
 * Router jobs straight from pg-boss's table (oldest first), for tests and operators; works
 * without a running engine. `deadLettered`: the dead-letter copies of jobs that failed for good
 * (their original is deleted once the agent has logged it, to free the router's queue).
 */
export const listRouterJobs = async (
  db: Database,
  filter: { forwardId?: string; kind?: string; routerId?: string; deadLettered?: boolean } = {},
): Promise<RouterJobRow[]> => {
  const rows = await db.query<Record<string, unknown>>(
    `select id, data, state, retry_count, start_after, output, created_on from pgboss.job
     where name = $1 and ($2::text is null or data->>'forward_id' = $3)
       and ($4::text is null or data->>'kind' = $5) and ($6::text is null or data->>'router_id' = $7)
     order by created_on, id`,
    [
      filter.deadLettered ? ROUTER_JOBS_DEAD_LETTER : ROUTER_JOBS_QUEUE,
      filter.forwardId ?? null,
      filter.forwardId ?? null,
      filter.kind ?? null,
      filter.kind ?? null,
      filter.routerId ?? null,
      filter.routerId ?? null,
    ],
  );
  return rows.map((row) => {
    const data = (typeof row.data === "string" ? JSON.parse(row.data) : row.data) as RouterJobData;
    const output = (typeof row.output === "string" ? JSON.parse(row.output) : row.output) as {
      message?: unknown;
    } | null;
    const state = String(row.state) as TRouterJobState;
    return {
      id: String(row.id),
      kind: data.kind,
      routerId: data.router_id,
      forwardId: data.forward_id ?? null,
      state,
      // retry_count counts claims after the first; a job never claimed has made no attempt.
      attempts: state === "created" ? 0 : toNumber(row.retry_count) + 1,
      startAfter: toDate(row.start_after),
      lastError: output && typeof output.message === "string" ? output.message : null,
      createdOn: toDate(row.created_on),
    };
  });
};

/** Router jobs not finished yet (waiting, retrying or running). */
export const countOpenRouterJobs = async (db: Database): Promise<number> => {
  const [row] = await db.query<{ n: number | string }>(
    `select count(*)::int as n from pgboss.job where name in ($1, $2) and state in ('created', 'retry', 'active')`,
    [ROUTER_JOBS_QUEUE, ROUTER_JOBS_DEAD_LETTER],
  );
  return toNumber(row?.n ?? 0);
};

/** A job of any queue as `jobs failed` and `jobs retry` read it from pg-boss's table. */
export interface StoredJob {
  id: string;
  queue: string;
  state: string;
  data: unknown;
  /** The error text of the last failed attempt, if any. */
  error: string | null;
}

const storedJob = (row: Record<string, unknown>): StoredJob => {
  const output = (typeof row.output === "string" ? JSON.parse(row.output) : row.output) as {
    message?: unknown;
  } | null;
  return {
    id: String(row.id),
    queue: String(row.name),
    state: String(row.state),
    data: typeof row.data === "string" ? JSON.parse(row.data) : row.data,
    error: typeof output?.message === "string" ? output.message : null,
  };
};

/**
 * Jobs that failed for good (state `failed`) and the contents of dead-letter queues (`*.dead`),
 * newest first (at most 100); of one queue and its dead-letter queue when given.
 */
export const listFailedJobs = async (db: Database, queue?: string): Promise<StoredJob[]> => {
  const rows = await db.query<Record<string, unknown>>(
    `select id, name, data, output, state from pgboss.job
     where (state = 'failed' or name like '%.dead') and ($1::text is null or name = $2 or name = $3 || '.dead')
     order by created_on desc limit 100`,
    [queue ?? null, queue ?? null, queue ?? null],
  );
  return rows.map(storedJob);
};

/** One job of any queue by id, or null. */
export const findJob = async (db: Database, id: string): Promise<StoredJob | null> => {
  const [row] = await db.query<Record<string, unknown>>(
    `select id, name, data, output, state from pgboss.job where id = $1`,
    [id],
  );
  return row ? storedJob(row) : null;
};
