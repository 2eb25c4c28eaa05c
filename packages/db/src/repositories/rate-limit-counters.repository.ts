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
    const rows = await this.#db.query<{ bucket: string; window_ms: unknown; hits: unknown }>(
      `insert into rate_limit_counters as c (bucket, window_start, hits)
       select v.bucket, to_timestamp(v.window_ms / 1000.0), v.hits
       from unnest($1::text[], $2::float8[], $3::int[]) as v(bucket, window_ms, hits)
       on conflict (bucket, window_start) do update set hits = c.hits + excluded.hits
       returning c.bucket, (extract(epoch from c.window_start) * 1000)::float8 as window_ms, c.hits`,
      [batch.map((b) => b.bucket), batch.map((b) => b.windowStartMs), batch.map((b) => b.hits)],
    );
    return new Map(rows.map((row) => [`${row.bucket}@${toNumber(row.window_ms)}`, toNumber(row.hits)]));
  }

  /** Forgets windows that ended before `beforeMs`. */
  async prune(beforeMs: number): Promise<void> {
    await this.#db.query("delete from rate_limit_counters where window_start < to_timestamp($1::float8 / 1000.0)", [
      beforeMs,
    ]);
  }
}
