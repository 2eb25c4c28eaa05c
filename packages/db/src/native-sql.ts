import type { Database, Query } from "./database.ts";

/** @deprecated Use `Query` from `database.ts`. */
export type NativeQuery = Query;

/** `db.query` and `db.transaction` under their earlier name. */
export interface NativeSql {
  query: Query;
  transaction<T>(work: (query: Query) => Promise<T>): Promise<T>;
}

/**
 * @deprecated The database's own `db.query` and `db.transaction` take `$1..$n` placeholders on the
 * same pool; use them. Kept so code written against this name keeps working while it moves.
 */
export const nativeSql = async (db: Database): Promise<NativeSql> => ({
  query: (sql, params) => db.query(sql, params),
  transaction: (work) => db.transaction(work),
});
