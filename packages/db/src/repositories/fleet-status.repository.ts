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
    const [row] = await this.#db.query<{ connected: unknown; total: unknown }>(
      `select count(*) filter (where l.last_seen_at >= $1)::int as connected, count(*)::int as total
       from routers r left join router_liveness l on l.router_id = r.id`,
      [since],
    );
    return { connected: toNumber(row?.connected ?? 0), total: toNumber(row?.total ?? 0) };
  }

  async openFaults(): Promise<number> {
    const [row] = await this.#db.query<{ n: unknown }>(
      `select count(*)::int as n from router_faults where status = 'ongoing'`,
    );
    return toNumber(row?.n ?? 0);
  }

  /** Connections to this database by application name, other than the asking one (PostgreSQL; none on PGlite). */
  async connectionsByApplication(): Promise<Array<{ application_name: string; n: number }>> {
    if (this.#db.driver !== "postgresql") return [];
    return this.#db.query<{ application_name: string; n: number }>(
      `select coalesce(nullif(application_name, ''), '(unnamed)') as application_name, count(*)::int as n
       from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
       group by 1 order by 1`,
    );
  }
}
