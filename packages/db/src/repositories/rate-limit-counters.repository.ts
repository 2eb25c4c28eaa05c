import { sql } from "kysely";
import type { Database } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** Hits of one bucket in one window, as a process adds them. */
export interface RateLimitHits {
  bucket: string;
  /** Start of the one-minute window, milliseconds since the epoch. */
  windowStartMs: number;
  hits: number;
}

/**
 * Request counters shared by every API process (docs/api.md "Rate limits"): each process adds
 * its local counts in one statement and reads back the totals of all processes.
 */
export class RateLimitCountersRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** Adds the hits (one UNNEST upsert) and answers each bucket's total in its window, keyed `bucket@window`. */
  async add(batch: readonly RateLimitHits[]): Promise<Map<string, number>> {
    if (batch.length === 0) return new Map();
    // Raw: one statement text for any batch, its columns as arrays through unnest.
    const { rows } = await sql<{ bucket: string; window_ms: unknown; hits: unknown }>`
      insert into rate_limit_counters as c (bucket, window_start, hits)
      select v.bucket, to_timestamp(v.window_ms / 1000.0), v.hits
      from unnest(${batch.map((b) => b.bucket)}::text[], ${batch.map((b) => b.windowStartMs)}::float8[],
        ${batch.map((b) => b.hits)}::int[]) as v(bucket, window_ms, hits)
      on conflict (bucket, window_start) do update set hits = c.hits + excluded.hits
      returning c.bucket, (extract(epoch from c.window_start) * 1000)::float8 as window_ms, c.hits`.execute(
      this.#db.query.kysely,
    );
    return new Map(rows.map((row) => [`${row.bucket}@${toNumber(row.window_ms)}`, toNumber(row.hits)]));
  }

  /** Forgets windows that ended before `beforeMs`. */
  async prune(beforeMs: number): Promise<void> {
    await this.#db.query.kysely
      .deleteFrom("rate_limit_counters")
      .where("window_start", "<", new Date(beforeMs))
      .execute();
  }
}
