import type { Database } from "../database.ts";
import { toNumber } from "./sql-values.ts";

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;

/** One router of the fleet report, before ongoing outages are added. */
export interface FleetAvailabilityRow {
  routerId: string;
  name: string;
  lastSeenAt: Date | null;
  /** Stored seconds down inside the range. */
  secondsDown: number;
  /** Faults opened inside the range. */
  faults: number;
}

// Correlated subqueries per router: its liveness row by primary key, and a range scan of the router's own slice of
// `router_downtime_hours_pkey` (router_id, hour) and `router_faults_router_id_created_at_index`,
// so the report reads only the team's rows inside the range, however large the tables grow. Only
// `site` faults are outages; `resource` faults (docs/api.md "Health thresholds") are not counted.
const FLEET_SQL = `select r.id, r.name, ${ms("(select l.last_seen_at from router_liveness l where l.router_id = r.id)", "last_seen_ms")},
  coalesce((select sum(d.seconds_down) from router_downtime_hours d
    where d.router_id = r.id and d.hour >= to_timestamp($2::float8 / 1000.0) and d.hour < to_timestamp($3::float8 / 1000.0)), 0)::float8 as seconds_down,
  (select count(*) from router_faults f
    where f.router_id = r.id and f.type = 'site' and f.created_at >= to_timestamp($2::float8 / 1000.0) and f.created_at < to_timestamp($3::float8 / 1000.0))::int as faults
  from routers r where r.team_id = $1::uuid`;

const HOURS_SQL = `select ${ms("hour", "hour_ms")}, seconds_down from router_downtime_hours
  where router_id = $1::uuid and hour >= to_timestamp($2::float8 / 1000.0) and hour < to_timestamp($3::float8 / 1000.0)`;

/** Availability history (docs/api.md "Availability"): reads of hourly downtime over long ranges, and its retention. */
export class AvailabilityRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** Stored seconds down per UTC hour in [from, to), keyed by the hour's epoch milliseconds. */
  async downtimeHours(routerId: string, from: Date, to: Date): Promise<Map<number, number>> {
    const rows = await this.#db.query<{ hour_ms: unknown; seconds_down: unknown }>(HOURS_SQL, [
      routerId,
      from.getTime(),
      to.getTime(),
    ]);
    return new Map(rows.map((r) => [toNumber(r.hour_ms), toNumber(r.seconds_down)]));
  }

  /** Every router of the team with its stored downtime and faults in [from, to). */
  async fleet(teamId: string, from: Date, to: Date): Promise<FleetAvailabilityRow[]> {
    const rows = await this.#db.query<Record<string, unknown>>(FLEET_SQL, [teamId, from.getTime(), to.getTime()]);
    return rows.map((row) => ({
      routerId: String(row.id),
      name: String(row.name),
      lastSeenAt:
        row.last_seen_ms === null || row.last_seen_ms === undefined ? null : new Date(toNumber(row.last_seen_ms)),
      secondsDown: toNumber(row.seconds_down),
      faults: toNumber(row.faults),
    }));
  }

  /** The plans of {@link fleet} and {@link downtimeHours} (tests show they use indexes). */
  async explain(teamId: string, routerId: string, from: Date, to: Date): Promise<{ fleet: string; router: string }> {
    const plan = async (text: string, params: unknown[]) =>
      (await this.#db.query<Record<string, unknown>>(`explain ${text}`, params))
        .map((r) => String(r["QUERY PLAN"] ?? Object.values(r)[0]))
        .join("\n");
    return {
      fleet: await plan(FLEET_SQL, [teamId, from.getTime(), to.getTime()]),
      router: await plan(HOURS_SQL, [routerId, from.getTime(), to.getTime()]),
    };
  }

  /** Deletes downtime hours before `before`, at most `batch` per statement; returns how many went. */
  async prune(before: Date, batch = 10_000): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = await this.#db.query<{ n: unknown }>(
        `with doomed as (
           select router_id, hour from router_downtime_hours where hour < to_timestamp($1::float8 / 1000.0) limit $2::int
         ), gone as (
           delete from router_downtime_hours d using doomed
           where d.router_id = doomed.router_id and d.hour = doomed.hour returning 1
         )
         select count(*)::int as n from gone`,
        [before.getTime(), batch],
      );
      const n = toNumber(rows[0]?.n ?? 0);
      total += n;
      if (n < batch) return total;
    }
  }
}
