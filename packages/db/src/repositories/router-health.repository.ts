import type { Database, Query } from "../database.ts";
import { plainArray } from "./pg-arrays.ts";
import { toDate } from "./sql-values.ts";

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

/** One router's latest health, as `router_health_latest` holds it. */
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

const LATEST_COLUMNS = `router_id, reported_at, cpu_load, memory_used_percent, disk_used_percent, temperature, voltage,
  ping_loss_percent, ping_rtt_ms`;

const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export const latestHealthFromRow = (row: Record<string, unknown>): LatestHealthRecord => ({
  routerId: String(row.router_id),
  reportedAt: toDate(row.reported_at),
  cpuLoad: num(row.cpu_load),
  memoryUsedPercent: num(row.memory_used_percent),
  diskUsedPercent: num(row.disk_used_percent),
  temperature: num(row.temperature),
  voltage: num(row.voltage),
  pingLossPercent: num(row.ping_loss_percent),
  pingRttMs: num(row.ping_rtt_ms),
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

// Raw SQL: the daemon's flush writes a whole batch in one statement (arrays through unnest). A
// measure not reported this time keeps its previous value: a heartbeat without `ping` does not
// erase the last ping.
const UPSERT_LATEST_SQL = `with ${HEALTH_ASYNC_COMMIT}
  insert into router_health_latest as h (${LATEST_COLUMNS})
  select u.router_id, to_timestamp(u.at_ms / 1000.0), u.cpu, u.mem, u.disk, u.temp, u.volt, u.loss, u.rtt
  from health_async cross join unnest($1::uuid[], $2::float8[], $3::real[], $4::real[], $5::real[], $6::real[], $7::real[], $8::real[], $9::real[])
    as u(router_id, at_ms, cpu, mem, disk, temp, volt, loss, rtt)
  where exists (select 1 from routers r where r.id = u.router_id)
  on conflict (router_id) do update set reported_at = excluded.reported_at,
    cpu_load = coalesce(excluded.cpu_load, h.cpu_load),
    memory_used_percent = coalesce(excluded.memory_used_percent, h.memory_used_percent),
    disk_used_percent = coalesce(excluded.disk_used_percent, h.disk_used_percent),
    temperature = coalesce(excluded.temperature, h.temperature),
    voltage = coalesce(excluded.voltage, h.voltage),
    ping_loss_percent = coalesce(excluded.ping_loss_percent, h.ping_loss_percent),
    ping_rtt_ms = coalesce(excluded.ping_rtt_ms, h.ping_rtt_ms)
  where excluded.reported_at >= h.reported_at`;

/** Latest health per router (docs/api.md "Health"): written by the daemon, read by lists and thresholds. */
export class RouterHealthRepository {
  readonly #db: Pick<Database, "query">;
  constructor(db: Pick<Database, "query">) {
    this.#db = db;
  }

  /** Upserts the latest values of routers (one entry per router); routers that no longer exist are skipped. */
  static async upsertLatest(query: Query, records: readonly LatestHealthRecord[]): Promise<void> {
    if (records.length === 0) return;
    const column = (measure: keyof HealthValues) => plainArray(records.map((r) => r[measure]));
    await query(UPSERT_LATEST_SQL, [
      plainArray(records.map((r) => r.routerId)),
      plainArray(records.map((r) => r.reportedAt.getTime())),
      column("cpuLoad"),
      column("memoryUsedPercent"),
      column("diskUsedPercent"),
      column("temperature"),
      column("voltage"),
      column("pingLossPercent"),
      column("pingRttMs"),
    ]);
  }

  async latest(routerId: string): Promise<LatestHealthRecord | null> {
    const rows = await this.#db.query<Record<string, unknown>>(
      `select ${LATEST_COLUMNS} from router_health_latest where router_id = $1::uuid`,
      [routerId],
    );
    return rows[0] ? latestHealthFromRow(rows[0]) : null;
  }

  /** The latest values of many routers, keyed by router id (routers that never reported are absent). */
  async latestOf(routerIds: readonly string[]): Promise<Map<string, LatestHealthRecord>> {
    if (routerIds.length === 0) return new Map();
    const rows = await this.#db.query<Record<string, unknown>>(
      `select ${LATEST_COLUMNS} from router_health_latest where router_id = any($1::uuid[])`,
      [plainArray(routerIds)],
    );
    return new Map(rows.map((row) => [String(row.router_id), latestHealthFromRow(row)]));
  }
}
