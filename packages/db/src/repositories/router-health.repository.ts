import { sql } from "kysely";
import type { Database, Row } from "../database.ts";
import { plainArray } from "./pg-arrays.ts";

/** The measures kept per router (docs/api.md "Health"); null: not reported. */
export interface HealthValues {
  cpuLoad: number | null;
  memoryUsedPercent: number | null;
  diskUsedPercent: number | null;
  temperature: number | null;
  voltage: number | null;
  pingLossPercent: number | null;
  pingRttMs: number | null;
}

/** One router's latest health, as its `router_liveness` row holds it (migration 170). */
export interface LatestHealthRecord extends HealthValues {
  routerId: string;
  reportedAt: Date;
}

export const HEALTH_MEASURES = [
  "cpuLoad",
  "memoryUsedPercent",
  "diskUsedPercent",
  "temperature",
  "voltage",
  "pingLossPercent",
  "pingRttMs",
] as const satisfies ReadonlyArray<keyof HealthValues>;

const LATEST_COLUMNS = [
  "router_id",
  "health_reported_at",
  "cpu_load",
  "memory_used_percent",
  "disk_used_percent",
  "temperature",
  "voltage",
  "ping_loss_percent",
  "ping_rtt_ms",
] as const;

export const latestHealthFromRow = (
  row: Pick<Row<"router_liveness">, (typeof LATEST_COLUMNS)[number]> & { health_reported_at: Date },
): LatestHealthRecord => ({
  routerId: row.router_id,
  reportedAt: row.health_reported_at,
  cpuLoad: row.cpu_load,
  memoryUsedPercent: row.memory_used_percent,
  diskUsedPercent: row.disk_used_percent,
  temperature: row.temperature,
  voltage: row.voltage,
  pingLossPercent: row.ping_loss_percent,
  pingRttMs: row.ping_rtt_ms,
});

/**
 * A CTE that lets its statement commit without waiting for the disk, as the heartbeat flush does
 * (heartbeats.repository.ts, `COMMIT_ASYNC`), for the daemon's health writes: a crash of PostgreSQL
 * can lose the last moment of health, which its next flush writes again. A commit that waited
 * cost more than the rows; a transaction around them, its own statements. Read it (`cross join
 * health_async`) so it runs.
 */
export const HEALTH_ASYNC_COMMIT =
  "health_async as materialized (select set_config('synchronous_commit', 'off', true))";

/** Latest health per router (docs/api.md "Health"), in `router_liveness`: written by the daemon, read by lists and thresholds. */
export class RouterHealthRepository {
  readonly #db: Pick<Database, "query">;
  constructor(db: Pick<Database, "query">) {
    this.#db = db;
  }

  async latest(routerId: string): Promise<LatestHealthRecord | null> {
    const row = await this.#db.query.kysely
      .selectFrom("router_liveness")
      .select(LATEST_COLUMNS)
      .where("router_id", "=", routerId)
      .executeTakeFirst();
    return row?.health_reported_at ? latestHealthFromRow({ ...row, health_reported_at: row.health_reported_at }) : null;
  }

  /** The latest values of many routers, keyed by router id (routers that never reported are absent). */
  async latestOf(routerIds: readonly string[]): Promise<Map<string, LatestHealthRecord>> {
    if (routerIds.length === 0) return new Map();
    const rows = await this.#db.query.kysely
      .selectFrom("router_liveness")
      .select(LATEST_COLUMNS)
      .where((eb) => eb("router_id", "=", eb.fn.any(sql<string[]>`${plainArray(routerIds)}::uuid[]`)))
      .where("health_reported_at", "is not", null)
      .execute();
    const out = new Map<string, LatestHealthRecord>();
    for (const row of rows)
      if (row.health_reported_at)
        out.set(row.router_id, latestHealthFromRow({ ...row, health_reported_at: row.health_reported_at }));
    return out;
  }
}
