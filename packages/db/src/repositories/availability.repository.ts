import type { Kysely } from "kysely";
import type { Query, Schema } from "../database.ts";
import { toNumber } from "./sql-values.ts";

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
const fleetQuery = (kysely: Kysely<Schema>, teamId: string, from: Date, to: Date) =>
  kysely
    .selectFrom("routers as r")
    .select((eb) => [
      "r.id",
      "r.name",
      eb
        .selectFrom("router_liveness as l")
        .select("l.last_seen_at")
        .whereRef("l.router_id", "=", "r.id")
        .as("last_seen_at"),
      eb.fn
        .coalesce(
          eb
            .selectFrom("router_downtime_hours as d")
            .select((sub) => sub.fn.sum<number | string>("d.seconds_down").as("s"))
            .whereRef("d.router_id", "=", "r.id")
            .where("d.hour", ">=", from)
            .where("d.hour", "<", to),
          eb.lit(0),
        )
        .as("seconds_down"),
      eb
        .selectFrom("router_faults as f")
        .select((sub) => sub.fn.countAll<number | string>().as("n"))
        .whereRef("f.router_id", "=", "r.id")
        .where("f.type", "=", "site")
        .where("f.created_at", ">=", from)
        .where("f.created_at", "<", to)
        .as("faults"),
    ])
    .where("r.team_id", "=", teamId);

const hoursQuery = (kysely: Kysely<Schema>, routerId: string, from: Date, to: Date) =>
  kysely
    .selectFrom("router_downtime_hours")
    .select(["hour", "seconds_down"])
    .where("router_id", "=", routerId)
    .where("hour", ">=", from)
    .where("hour", "<", to);

/** Availability history (docs/api.md "Availability"): reads of hourly downtime over long ranges, and its retention. */
export class AvailabilityRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /** Stored seconds down per UTC hour in [from, to), keyed by the hour's epoch milliseconds. */
  async downtimeHours(routerId: string, from: Date, to: Date): Promise<Map<number, number>> {
    const rows = await hoursQuery(this.#query.kysely, routerId, from, to).execute();
    return new Map(rows.map((r) => [r.hour.getTime(), r.seconds_down]));
  }

  /** Every router of the team with its stored downtime and faults in [from, to). */
  async fleet(teamId: string, from: Date, to: Date): Promise<FleetAvailabilityRow[]> {
    const rows = await fleetQuery(this.#query.kysely, teamId, from, to).execute();
    return rows.map((row) => ({
      routerId: row.id,
      name: row.name,
      lastSeenAt: row.last_seen_at,
      secondsDown: toNumber(row.seconds_down),
      faults: toNumber(row.faults ?? 0),
    }));
  }

  /** The plans of {@link fleet} and {@link downtimeHours} (tests show they use indexes). */
  async explain(teamId: string, routerId: string, from: Date, to: Date): Promise<{ fleet: string; router: string }> {
    const plan = (rows: Record<string, unknown>[]) =>
      rows.map((r) => String(r["QUERY PLAN"] ?? Object.values(r)[0])).join("\n");
    return {
      fleet: plan(await fleetQuery(this.#query.kysely, teamId, from, to).explain()),
      router: plan(await hoursQuery(this.#query.kysely, routerId, from, to).explain()),
    };
  }

  /** Deletes downtime hours before `before`, at most `batch` per statement; returns how many went. */
  async prune(before: Date, batch = 10_000): Promise<number> {
    let total = 0;
    for (;;) {
      const row = await this.#query.kysely
        .with("doomed", (db) =>
          db.selectFrom("router_downtime_hours").select(["router_id", "hour"]).where("hour", "<", before).limit(batch),
        )
        .with("gone", (db) =>
          db
            .deleteFrom("router_downtime_hours as d")
            .using("doomed")
            .whereRef("d.router_id", "=", "doomed.router_id")
            .whereRef("d.hour", "=", "doomed.hour")
            .returning("d.router_id"),
        )
        .selectFrom("gone")
        .select((eb) => eb.fn.countAll().as("n"))
        .executeTakeFirstOrThrow();
      const n = toNumber(row.n);
      total += n;
      if (n < batch) return total;
    }
  }
}
