import { sql } from "kysely";
import type { Database } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** What operators read at a glance (`npm run admin -- status`, docs/operations.md "Commands"). */
export class FleetStatusRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** Routers with a heartbeat since `since`, and all routers. */
  async routerCounts(since: Date): Promise<{ connected: number; total: number }> {
    const row = await this.#db.query.kysely
      .selectFrom("routers as r")
      .leftJoin("router_liveness as l", "l.router_id", "r.id")
      .select((eb) => [
        eb.fn.countAll().filterWhere("l.last_seen_at", ">=", since).as("connected"),
        eb.fn.countAll().as("total"),
      ])
      .executeTakeFirstOrThrow();
    return { connected: toNumber(row.connected), total: toNumber(row.total) };
  }

  async openFaults(): Promise<number> {
    const row = await this.#db.query.kysely
      .selectFrom("router_faults")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("status", "=", "ongoing")
      .executeTakeFirstOrThrow();
    return toNumber(row.n);
  }

  /** Connections to this database by application name, other than the asking one (PostgreSQL; none on PGlite). */
  async connectionsByApplication(): Promise<Array<{ application_name: string; n: number }>> {
    if (this.#db.driver !== "postgresql") return [];
    // Raw: pg_stat_activity is a system view, not one of our entities.
    const { rows } = await sql<{ application_name: string; n: number }>`
      select coalesce(nullif(application_name, ''), '(unnamed)') as application_name, count(*)::int as n
      from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
      group by 1 order by 1`.execute(this.#db.query.kysely);
    return rows;
  }
}
