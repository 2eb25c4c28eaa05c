import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";

/**
 * What the two kinds of session the entry point serves, forwards and temporary router access, keep
 * apart: their table and their record. Their rules are one (docs/api.md "Transient Port Forward",
 * "Temporary router access"): a session is active until it is closed or its time passes; a close
 * is a revocation, or an expiry when its time passed before a sweep ran; the sweep closes the due
 * ones in batches, taken `for update skip locked` so that every agent may sweep and each session
 * closes once. `SessionRepository` holds those rules, written once.
 */
export interface SessionTable<R, S> {
  table: "forwards" | "router_access";
  /** A row of `table` (`Row<"forwards">`, `Row<"router_access">`) to its record. */
  fromRow(row: S): R;
}

/**
 * The statements of {@link SessionTable} a session repository inherits (`ForwardsRepository`,
 * `AccessRepository`): built on the `query` of the caller's transaction (or `queryOf(db)`). Written
 * against either table, Kysely sees the columns of both: `$castTo` names the row `table` gives back.
 */
export abstract class SessionRepository<R, S> {
  protected readonly query: Query;
  readonly #t: SessionTable<R, S>;
  constructor(query: Query, table: SessionTable<R, S>) {
    this.query = query;
    this.#t = table;
  }

  /** Active sessions of a router (not closed, not past expiry), oldest first. */
  async listActive(routerId: string, now: Date): Promise<R[]> {
    if (!isUuid(routerId)) return [];
    const rows = await this.query.kysely
      .selectFrom(this.#t.table)
      .selectAll()
      .where("router_id", "=", routerId)
      .where("status", "=", "active")
      .where("expires_at", ">", now)
      .orderBy("created_at")
      .orderBy("id")
      .$castTo<S>()
      .execute();
    return rows.map((row) => this.#t.fromRow(row));
  }

  /** One session of a router, in any state. */
  async get(routerId: string, id: string): Promise<R | null> {
    if (!isUuid(routerId) || !isUuid(id)) return null;
    const row = await this.query.kysely
      .selectFrom(this.#t.table)
      .selectAll()
      .where("id", "=", id)
      .where("router_id", "=", routerId)
      .$castTo<S>()
      .executeTakeFirst();
    return row ? this.#t.fromRow(row) : null;
  }

  /**
   * Closes an active session: revoked, or expired when its time has passed but no sweep ran yet.
   * Null when it was not active (already closed).
   */
  async closeActive(routerId: string, id: string, now: Date): Promise<R | null> {
    if (!isUuid(routerId) || !isUuid(id)) return null;
    const row = await this.query.kysely
      .updateTable(this.#t.table)
      .set((eb) => ({
        status: eb
          .case()
          .when("expires_at", "<=", now)
          .then("expired" as const)
          .else("revoked" as const)
          .end(),
        closed_at: now,
      }))
      .where("id", "=", id)
      .where("router_id", "=", routerId)
      .where("status", "=", "active")
      .returningAll()
      .$castTo<S>()
      .executeTakeFirst();
    return row ? this.#t.fromRow(row) : null;
  }

  /** Marks up to 500 active sessions whose time has come expired (of one entry point, if given). */
  async expireDue(now: Date, entryPoint?: string): Promise<R[]> {
    const table = this.#t.table;
    const rows = await this.query.kysely
      .with("due", (db) =>
        db
          .selectFrom(table)
          .select("id")
          .where("status", "=", "active")
          .where("expires_at", "<=", now)
          .$if(entryPoint !== undefined, (qb) => qb.where("entry_point", "=", entryPoint ?? ""))
          .orderBy("expires_at")
          .limit(500)
          .forUpdate()
          .skipLocked(),
      )
      .updateTable(table)
      .set({ status: "expired", closed_at: now })
      .where("id", "in", (eb) => eb.selectFrom("due").select("due.id"))
      .returningAll()
      .$castTo<S>()
      .execute();
    return rows.map((row) => this.#t.fromRow(row));
  }
}

/** The organizations of the given routers (their sessions' audit entries' owners); gone routers are absent. */
export const organizationsOfRouters = async (
  query: Query,
  routerIds: readonly string[],
): Promise<Map<string, string>> => {
  if (routerIds.length === 0) return new Map();
  const rows = await query.kysely
    .selectFrom("routers")
    .select(["id", "organization_id"])
    .where("id", "=", (eb) => eb.fn.any(eb.val([...new Set(routerIds)])))
    .execute();
  return new Map(rows.map((row) => [row.id, row.organization_id]));
};
