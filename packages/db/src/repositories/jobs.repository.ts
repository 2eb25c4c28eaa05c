import type { SqlEntityManager } from "@mikro-orm/sql";
import type { Database } from "../database.ts";
import { toDate, toNumber } from "./sql-values.ts";

export type TJobStatus = "pending" | "running" | "done" | "failed";

export interface JobRecord {
  id: string;
  kind: string;
  /** Jobs of one group (a router) never run at the same time, whichever agent claims them. */
  groupKey: string;
  dedupeKey: string | null;
  payload: Record<string, unknown>;
  status: TJobStatus;
  /** Times the job was started (claimed); the claim that starts it counts. */
  attempts: number;
  maxAttempts: number;
  runAt: Date;
  lockedBy: string | null;
  lockedUntil: Date | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

export interface NewJob {
  kind: string;
  groupKey: string;
  payload: Record<string, unknown>;
  /** At most one pending or running job per key; a duplicate enqueue is a no-op. */
  dedupeKey?: string;
  runAt?: Date;
  maxAttempts?: number;
}

/** What became of a failed attempt. `lost`: the lease had already passed to someone else. */
export type TJobFailOutcome = "retry" | "failed" | "lost";

/** Default cap on attempts; a job that keeps failing stays visible as `failed` with its error. */
export const JOB_DEFAULT_MAX_ATTEMPTS = 10;

const COLUMNS = `id, kind, group_key, dedupe_key, payload, status, attempts, max_attempts, run_at, locked_by,
  locked_until, last_error, created_at, updated_at, finished_at`;

type Row = Record<string, unknown>;

const nullableDate = (value: unknown): Date | null => (value === null || value === undefined ? null : toDate(value));

const jobFromRow = (row: Row): JobRecord => ({
  id: String(row.id),
  kind: String(row.kind),
  groupKey: String(row.group_key),
  dedupeKey: row.dedupe_key === null || row.dedupe_key === undefined ? null : String(row.dedupe_key),
  payload: (typeof row.payload === "string" ? JSON.parse(row.payload) : row.payload) as Record<string, unknown>,
  status: String(row.status) as TJobStatus,
  attempts: toNumber(row.attempts),
  maxAttempts: toNumber(row.max_attempts),
  runAt: toDate(row.run_at),
  lockedBy: row.locked_by === null || row.locked_by === undefined ? null : String(row.locked_by),
  lockedUntil: nullableDate(row.locked_until),
  lastError: row.last_error === null || row.last_error === undefined ? null : String(row.last_error),
  createdAt: toDate(row.created_at),
  updatedAt: toDate(row.updated_at),
  finishedAt: nullableDate(row.finished_at),
});

// How many runnable rows one claim looks at before giving up: enough to skip past busy groups.
const CLAIM_WINDOW = 20;
// Errors are for people; keep rows small.
const MAX_ERROR_LENGTH = 2000;

/**
 * A small durable queue on a table, for PostgreSQL and PGlite alike (pg-boss needs the `pg` driver
 * and its own connection pool, so it cannot run on PGlite inside the all-in-one process).
 *
 * Claiming is one transaction: lock up to {@link CLAIM_WINDOW} runnable rows with
 * `FOR UPDATE SKIP LOCKED` (agents never wait on each other), then take the first whose group is
 * free. Group exclusivity is decided under a transaction-scoped advisory lock on the group, with the
 * "is a job of this group running?" check in a later statement, so it sees every committed claim.
 * At-least-once: a claim is a lease; when it expires (the agent died) the job is claimed again.
 */
export class JobsRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** Queues a job. Returns null when a pending or running job with the same dedupe key exists. */
  async enqueue(job: NewJob, now: Date): Promise<JobRecord | null> {
    const rows = await this.#db.query<Row>(
      `insert into jobs (id, kind, group_key, dedupe_key, payload, status, attempts, max_attempts, run_at, created_at, updated_at)
       values (?, ?, ?, ?, ?::jsonb, 'pending', 0, ?, ?, ?, ?)
       on conflict (dedupe_key) where status in ('pending', 'running') do nothing
       returning ${COLUMNS}`,
      [
        crypto.randomUUID(),
        job.kind,
        job.groupKey,
        job.dedupeKey ?? null,
        JSON.stringify(job.payload),
        job.maxAttempts ?? JOB_DEFAULT_MAX_ATTEMPTS,
        job.runAt ?? now,
        now,
        now,
      ],
    );
    return rows[0] ? jobFromRow(rows[0]) : null;
  }

  /**
   * Takes the next runnable job for `worker` under a lease until `now + leaseMs`, or null.
   * Runnable: pending and due, or running under a lease that expired (its agent is gone).
   */
  async claim(worker: string, now: Date, leaseMs: number, kinds?: readonly string[]): Promise<JobRecord | null> {
    const until = new Date(now.getTime() + leaseMs);
    const kindFilter = kinds && kinds.length > 0 ? `and kind in (${kinds.map(() => "?").join(", ")})` : "";
    // Idle agents poll often: a plain read first keeps an empty queue from costing a transaction.
    const due = await this.#db.query(
      `select 1 from jobs where ((status = 'pending' and run_at <= ?) or (status = 'running' and locked_until <= ?)) ${kindFilter} limit 1`,
      [now, now, ...(kinds ?? [])],
    );
    if (due.length === 0) return null;
    return this.#db.em().transactional(async (tx: SqlEntityManager) => {
      const candidates = await tx.execute<Row[]>(
        `select id, group_key, status, attempts, max_attempts from jobs
         where ((status = 'pending' and run_at <= ?) or (status = 'running' and locked_until <= ?)) ${kindFilter}
         order by run_at, created_at
         limit ${CLAIM_WINDOW}
         for update skip locked`,
        [now, now, ...(kinds ?? [])],
      );
      const seen = new Set<string>();
      for (const candidate of candidates) {
        const id = String(candidate.id);
        const group = String(candidate.group_key);
        if (seen.has(group)) continue;
        seen.add(group);
        const [lock] = await tx.execute<Row[]>(`select pg_try_advisory_xact_lock(hashtextextended(?, 0)) as ok`, [
          `fleet-job-group:${group}`,
        ]);
        if (lock?.ok !== true) continue;
        const busy = await tx.execute<Row[]>(
          `select 1 from jobs where group_key = ? and status = 'running' and locked_until > ? and id <> ? limit 1`,
          [group, now, id],
        );
        if (busy.length > 0) continue;
        if (candidate.status === "running" && toNumber(candidate.attempts) >= toNumber(candidate.max_attempts)) {
          // Its agents kept dying mid-job: stop feeding it to new ones.
          await tx.execute(
            `update jobs set status = 'failed', locked_by = null, locked_until = null, finished_at = ?, updated_at = ?,
               last_error = coalesce(last_error || ' | ', '') || 'gave up: the lease expired on the last attempt (agent stopped before finishing)'
             where id = ?`,
            [now, now, id],
          );
          continue;
        }
        const [claimed] = await tx.execute<Row[]>(
          `update jobs set status = 'running', locked_by = ?, locked_until = ?, attempts = attempts + 1, updated_at = ?
           where id = ? returning ${COLUMNS}`,
          [worker, until, now, id],
        );
        if (claimed) return jobFromRow(claimed);
      }
      return null;
    });
  }

  /** Keeps a lease alive while a long job runs. False: the lease is no longer ours. */
  async extendLease(id: string, worker: string, now: Date, leaseMs: number): Promise<boolean> {
    const rows = await this.#db.query(
      `update jobs set locked_until = ?, updated_at = ? where id = ? and locked_by = ? and status = 'running' returning id`,
      [new Date(now.getTime() + leaseMs), now, id, worker],
    );
    return rows.length > 0;
  }

  /** Marks the job done. False when the lease had passed to another agent (it will redo the job). */
  async complete(id: string, worker: string, now: Date): Promise<boolean> {
    const rows = await this.#db.query(
      `update jobs set status = 'done', locked_by = null, locked_until = null, finished_at = ?, updated_at = ?
       where id = ? and locked_by = ? and status = 'running' returning id`,
      [now, now, id, worker],
    );
    return rows.length > 0;
  }

  /**
   * Records a failed attempt: back to pending after `retryInMs`, or `failed` for good when
   * `permanent` or out of attempts. The error text stays on the row either way.
   */
  async fail(
    id: string,
    worker: string,
    now: Date,
    error: string,
    options: { retryInMs: number; permanent?: boolean },
  ): Promise<TJobFailOutcome> {
    const message = error.length > MAX_ERROR_LENGTH ? `${error.slice(0, MAX_ERROR_LENGTH)}...` : error;
    const rows = await this.#db.query<Row>(
      `update jobs set
         status = case when ?::boolean or attempts >= max_attempts then 'failed' else 'pending' end,
         run_at = case when ?::boolean or attempts >= max_attempts then run_at else ?::timestamptz end,
         finished_at = case when ?::boolean or attempts >= max_attempts then ?::timestamptz else null end,
         locked_by = null, locked_until = null, last_error = ?, updated_at = ?
       where id = ? and locked_by = ? and status = 'running'
       returning status`,
      [
        options.permanent === true,
        options.permanent === true,
        new Date(now.getTime() + options.retryInMs),
        options.permanent === true,
        now,
        message,
        now,
        id,
        worker,
      ],
    );
    const row = rows[0];
    if (!row) return "lost";
    return row.status === "failed" ? "failed" : "retry";
  }

  /** Puts a claimed job back without counting the attempt (e.g. the agent is shutting down). */
  async release(id: string, worker: string, now: Date): Promise<void> {
    await this.#db.query(
      `update jobs set status = 'pending', attempts = greatest(attempts - 1, 0), locked_by = null, locked_until = null, updated_at = ?
       where id = ? and locked_by = ? and status = 'running'`,
      [now, id, worker],
    );
  }

  async get(id: string): Promise<JobRecord | null> {
    const rows = await this.#db.query<Row>(`select ${COLUMNS} from jobs where id = ?`, [id]);
    return rows[0] ? jobFromRow(rows[0]) : null;
  }

  /** Jobs for inspection (tests, operators), oldest first. */
  async list(
    filter: { kind?: string; groupKey?: string; status?: TJobStatus; forwardId?: string } = {},
  ): Promise<JobRecord[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.kind) {
      where.push("kind = ?");
      params.push(filter.kind);
    }
    if (filter.groupKey) {
      where.push("group_key = ?");
      params.push(filter.groupKey);
    }
    if (filter.status) {
      where.push("status = ?");
      params.push(filter.status);
    }
    if (filter.forwardId) {
      where.push("payload->>'forward_id' = ?");
      params.push(filter.forwardId);
    }
    const rows = await this.#db.query<Row>(
      `select ${COLUMNS} from jobs ${where.length ? `where ${where.join(" and ")}` : ""} order by created_at, id`,
      params,
    );
    return rows.map(jobFromRow);
  }

  /** When the earliest pending job becomes due (to sleep until then), or null. */
  async nextRunAt(): Promise<Date | null> {
    const rows = await this.#db.query<Row>(`select min(run_at) as t from jobs where status = 'pending'`);
    return nullableDate(rows[0]?.t);
  }
}
