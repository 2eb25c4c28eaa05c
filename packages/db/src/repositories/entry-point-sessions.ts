import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";

type Row = Record<string, unknown>;

/**
 * What the two kinds of session the entry point serves, forwards and temporary router access, keep
 * apart: their table, its alias in `columns`, and their record. Their rules are one (docs/api.md
 * "Transient Port Forward", "Temporary router access"): a session is active until it is closed or
 * its time passes; a close is a revocation, or an expiry when its time passed before a sweep ran;
 * the sweep closes the due ones in batches, taken `for update skip locked` so that every agent may
 * sweep and each session closes once. `SessionRepository` holds those rules, written once.
 */
export interface SessionTable<R> {
  table: "forwards" | "router_access";
  /** The table's alias in `columns` (`f`, `a`). */
  alias: string;
  /** The record's columns, each prefixed with the alias. */
  columns: string;
  fromRow(row: Row): R;
}

/**
 * The statements of {@link SessionTable} a session repository inherits (`ForwardsRepository`,
 * `AccessRepository`): built on the `query` of the caller's transaction (or `queryOf(db)`).
 */
export abstract class SessionRepository<R> {
  protected readonly query: Query;
  readonly #t: SessionTable<R>;
  constructor(query: Query, table: SessionTable<R>) {
    this.query = query;
    this.#t = table;
  }

  /** Active sessions of a router (not closed, not past expiry), oldest first. */
  async listActive(routerId: string, now: Date): Promise<R[]> {
    if (!isUuid(routerId)) return [];
    const t = this.#t;
    const rows = await this.query<Row>(
      `select ${t.columns} from ${t.table} ${t.alias} where ${t.alias}.router_id = $1 and ${t.alias}.status = 'active'
         and ${t.alias}.expires_at > $2
       order by ${t.alias}.created_at, ${t.alias}.id`,
      [routerId, now],
    );
    return rows.map(t.fromRow);
  }

  /** One session of a router, in any state. */
  async get(routerId: string, id: string): Promise<R | null> {
    if (!isUuid(routerId) || !isUuid(id)) return null;
    const t = this.#t;
    const [row] = await this.query<Row>(
      `select ${t.columns} from ${t.table} ${t.alias} where ${t.alias}.id = $1 and ${t.alias}.router_id = $2`,
      [id, routerId],
    );
    return row ? t.fromRow(row) : null;
  }

  /**
   * Closes an active session: revoked, or expired when its time has passed but no sweep ran yet.
   * Null when it was not active (already closed).
   */
  async closeActive(routerId: string, id: string, now: Date): Promise<R | null> {
    if (!isUuid(routerId) || !isUuid(id)) return null;
    const t = this.#t;
    const [row] = await this.query<Row>(
      `update ${t.table} ${t.alias}
       set status = case when ${t.alias}.expires_at <= $1 then 'expired' else 'revoked' end, closed_at = $1
       where ${t.alias}.id = $2 and ${t.alias}.router_id = $3 and ${t.alias}.status = 'active'
       returning ${t.columns}`,
      [now, id, routerId],
    );
    return row ? t.fromRow(row) : null;
  }

  /** Marks up to 500 active sessions whose time has come expired (of one entry point, if given). */
  async expireDue(now: Date, entryPoint?: string): Promise<R[]> {
    const t = this.#t;
    const rows = await this.query<Row>(
      `with due as (
         select id from ${t.table}
         where status = 'active' and expires_at <= $1 and ($2::text is null or entry_point = $2)
         order by expires_at limit 500
         for update skip locked
       )
       update ${t.table} ${t.alias} set status = 'expired', closed_at = $1 from due where ${t.alias}.id = due.id
       returning ${t.columns}`,
      [now, entryPoint ?? null],
    );
    return rows.map(t.fromRow);
  }
}

/** The organizations of the given routers (their sessions' audit entries' owners); gone routers are absent. */
export const organizationsOfRouters = async (
  query: Query,
  routerIds: readonly string[],
): Promise<Map<string, string>> => {
  if (routerIds.length === 0) return new Map();
  const rows = await query<Row>(`select id, organization_id from routers where id = any($1::uuid[])`, [
    [...new Set(routerIds)],
  ]);
  return new Map(rows.map((row) => [String(row.id), String(row.organization_id)]));
};
