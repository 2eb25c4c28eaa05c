import type { Database } from "./database.ts";

/** A parameterized statement with `$1..$n` placeholders, run by the driver itself. */
export type NativeQuery = <T = Record<string, unknown>>(sql: string, params?: readonly unknown[]) => Promise<T[]>;

/**
 * The driver under MikroORM, for hot paths. `db.query` formats values into the SQL text on the
 * client (and expands arrays into lists), which rules out `unnest($1::uuid[])` batches and costs
 * time on big ones; the driver sends typed parameters instead.
 */
export interface NativeSql {
  query: NativeQuery;
  /** Runs `work` in one transaction on one connection; rolls back if it throws. */
  transaction<T>(work: (query: NativeQuery) => Promise<T>): Promise<T>;
}

interface PgPoolLike {
  query(sql: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
  connect(): Promise<{
    query(sql: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
    release(error?: Error): void;
  }>;
}

interface PgliteLike {
  query(sql: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
  transaction<T>(
    work: (tx: { query(sql: string, params?: unknown[]): Promise<{ rows: unknown[] }> }) => Promise<T>,
  ): Promise<T>;
}

const cache = new WeakMap<Database, Promise<NativeSql>>();

export const nativeSql = (db: Database): Promise<NativeSql> => {
  let found = cache.get(db);
  if (!found) {
    found = build(db);
    cache.set(db, found);
  }
  return found;
};

const build = async (db: Database): Promise<NativeSql> => {
  const connection = db.orm.em.getConnection() as unknown as { getNativeClient(): Promise<unknown> };
  const client = await connection.getNativeClient();
  if (db.driver === "postgresql") {
    const pool = client as PgPoolLike;
    return {
      query: async <T>(sql: string, params: readonly unknown[] = []) =>
        (await pool.query(sql, [...params])).rows as T[],
      transaction: async (work) => {
        const conn = await pool.connect();
        const query: NativeQuery = async <T>(sql: string, params: readonly unknown[] = []) =>
          (await conn.query(sql, [...params])).rows as T[];
        try {
          await conn.query("begin");
          const result = await work(query);
          await conn.query("commit");
          conn.release();
          return result;
        } catch (error) {
          try {
            await conn.query("rollback");
            conn.release();
          } catch (rollbackError) {
            conn.release(rollbackError as Error);
          }
          throw error;
        }
      },
    };
  }
  // PGlite serializes everything on its one connection; its transaction() holds that lock.
  const pglite = client as PgliteLike;
  return {
    query: async <T>(sql: string, params: readonly unknown[] = []) =>
      (await pglite.query(sql, [...params])).rows as T[],
    transaction: (work) =>
      pglite.transaction((tx) =>
        work(async <T>(sql: string, params: readonly unknown[] = []) => (await tx.query(sql, [...params])).rows as T[]),
      ),
  };
};
