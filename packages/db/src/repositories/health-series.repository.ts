import type { Database, Query } from "../database.ts";
import { HEALTH_SERIES_TABLES } from "../migrations/20261130-131-health-series.migration.ts";
import {
  DAY_MS,
  dayOf,
  packResourceHour,
  packResourceSample,
  packTraffic,
  type ResourceHour,
  type ResourceSample,
  type TrafficRecord,
  unpackResourceHours,
  unpackResourceSamples,
  unpackTraffic,
} from "./health-packing.ts";
import { plainArray, textArray } from "./pg-arrays.ts";
import { toDate } from "./sql-values.ts";

export * from "./health-packing.ts";

type SeriesTable = (typeof HEALTH_SERIES_TABLES)[keyof typeof HEALTH_SERIES_TABLES];

/** Daily partitions for the 5-minute tier, monthly for the hourly one (docs/scale.md "Health samples"). */
const MONTHLY: ReadonlySet<SeriesTable> = new Set([
  HEALTH_SERIES_TABLES.resourceHourly,
  HEALTH_SERIES_TABLES.trafficHourly,
]);

/** The partition of `table` holding `day`: its name and range of days [from, to). */
export const partitionOf = (table: SeriesTable, day: number): { name: string; from: number; to: number } => {
  if (!MONTHLY.has(table)) return { name: `${table}_d${day}`, from: day, to: day + 1 };
  const date = new Date(day * DAY_MS);
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth();
  return {
    name: `${table}_m${y}${String(m + 1).padStart(2, "0")}`,
    from: dayOf(Date.UTC(y, m, 1)),
    to: dayOf(Date.UTC(y, m + 1, 1)),
  };
};

/** The last day (exclusive) a partition named by {@link partitionOf} holds; undefined for any other name. */
export const partitionEnd = (table: SeriesTable, name: string): number | undefined => {
  const daily = new RegExp(`^${table}_d(\\d{1,6})$`).exec(name);
  if (daily?.[1] && !MONTHLY.has(table)) return Number(daily[1]) + 1;
  const monthly = new RegExp(`^${table}_m(\\d{4})(\\d{2})$`).exec(name);
  if (monthly?.[1] && monthly[2] && MONTHLY.has(table))
    return dayOf(Date.UTC(Number(monthly[1]), Number(monthly[2]), 1));
  return undefined;
};

const hex = (buffer: Buffer) => `\\x${buffer.toString("hex")}`;

/** The 5-minute and hourly records of one flush. */
export interface HealthSeriesWrite {
  resourceSamples?: readonly ResourceSample[];
  resourceHours?: readonly ResourceHour[];
  trafficSamples?: readonly TrafficRecord[];
  trafficHours?: readonly TrafficRecord[];
}

/** The latest state of one interface (docs/api.md "Health"). */
export interface InterfaceLatestRecord {
  routerId: string;
  name: string;
  reportedAt: Date;
  running: boolean | null;
  rxBytes: number | null;
  txBytes: number | null;
  rxErrors: number | null;
  txErrors: number | null;
  rxBps: number | null;
  txBps: number | null;
}

const INTERFACE_COLUMNS =
  "router_id, name, reported_at, running, rx_bytes, tx_bytes, rx_errors, tx_errors, rx_bps, tx_bps";
const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
const bytesOf = (value: unknown): Buffer =>
  Buffer.isBuffer(value)
    ? value
    : value instanceof Uint8Array
      ? Buffer.from(value.buffer, value.byteOffset, value.byteLength)
      : Buffer.from(String(value).replace(/^\\x/, ""), "hex");

/**
 * The health series (docs/api.md "Health", docs/scale.md "Health samples"): packed records appended
 * to one row per router (and interface) per day, in range partitions made on first use and by the
 * health-partitions job, dropped by it when expired. Raw SQL: batched unnest writes and DDL.
 */
export class HealthSeriesRepository {
  readonly #db: Pick<Database, "query">;
  /** Partitions this process knows exist (names); a dropped one is made again on its next write. */
  readonly #known = new Set<string>();
  constructor(db: Pick<Database, "query">) {
    this.#db = db;
  }

  /** Makes the partition of `table` holding `day` unless this process already knows it. */
  async ensurePartition(query: Query, table: SeriesTable, day: number): Promise<string> {
    const partition = partitionOf(table, day);
    if (this.#known.has(partition.name)) return partition.name;
    const ddl = `create table if not exists "${partition.name}" partition of "${table}" for values from (${partition.from}) to (${partition.to})`;
    try {
      await query(ddl);
    } catch (error) {
      // Another process made it between our check and create: it exists, which is all we need.
      const exists = await query<{ n: unknown }>("select 1 as n from pg_class where relname = $1", [partition.name]);
      if (exists.length === 0) throw error;
    }
    this.#known.add(partition.name);
    return partition.name;
  }

  /** Appends the records of one flush, one statement per table; routers that no longer exist are skipped. */
  async append(query: Query, write: HealthSeriesWrite): Promise<void> {
    const { resourceSamples: rs, resourceHourly: rh, trafficSamples: ts, trafficHourly: th } = HEALTH_SERIES_TABLES;
    if (write.resourceSamples?.length) await this.#appendRows(query, rs, write.resourceSamples, packResourceSample);
    if (write.resourceHours?.length) await this.#appendRows(query, rh, write.resourceHours, packResourceHour);
    if (write.trafficSamples?.length) await this.#appendRows(query, ts, write.trafficSamples, packTraffic);
    if (write.trafficHours?.length) await this.#appendRows(query, th, write.trafficHours, packTraffic);
  }

  async #appendRows<T extends { routerId: string; atMs: number; name?: string }>(
    query: Query,
    table: SeriesTable,
    records: readonly T[],
    pack: (record: T) => Buffer,
  ): Promise<void> {
    // One row per (router, interface, day): the records of a day are concatenated in order.
    const rows = new Map<string, { routerId: string; name: string | undefined; day: number; parts: Buffer[] }>();
    for (const record of records) {
      const day = dayOf(record.atMs);
      const key = `${record.routerId}\u0000${record.name ?? ""}\u0000${day}`;
      let row = rows.get(key);
      if (!row) {
        row = { routerId: record.routerId, name: record.name, day, parts: [] };
        rows.set(key, row);
      }
      row.parts.push(pack(record));
    }
    const list = [...rows.values()];
    for (const day of new Set(list.map((row) => row.day))) await this.ensurePartition(query, table, day);
    const ids = plainArray(list.map((row) => row.routerId));
    const days = plainArray(list.map((row) => row.day));
    const data = textArray(list.map((row) => hex(Buffer.concat(row.parts))));
    if (table === HEALTH_SERIES_TABLES.trafficSamples || table === HEALTH_SERIES_TABLES.trafficHourly) {
      await query(
        `insert into "${table}" as t (router_id, name, day, data)
         select u.router_id, u.name, u.day, u.data from unnest($1::uuid[], $2::text[], $3::int[], $4::bytea[]) as u(router_id, name, day, data)
         where exists (select 1 from routers r where r.id = u.router_id)
         on conflict (router_id, name, day) do update set data = t.data || excluded.data`,
        [ids, textArray(list.map((row) => row.name ?? "")), days, data],
      );
    } else {
      await query(
        `insert into "${table}" as t (router_id, day, data)
         select u.router_id, u.day, u.data from unnest($1::uuid[], $2::int[], $3::bytea[]) as u(router_id, day, data)
         where exists (select 1 from routers r where r.id = u.router_id)
         on conflict (router_id, day) do update set data = t.data || excluded.data`,
        [ids, days, data],
      );
    }
  }

  /** Upserts the latest state of interfaces (one entry per router and name). */
  static async upsertInterfaces(query: Query, records: readonly InterfaceLatestRecord[]): Promise<void> {
    if (records.length === 0) return;
    const col = (pick: (r: InterfaceLatestRecord) => number | boolean | null) => plainArray(records.map(pick));
    await query(
      `insert into router_interfaces_latest as i (${INTERFACE_COLUMNS})
       select u.router_id, u.name, to_timestamp(u.at_ms / 1000.0), u.running, u.rx_bytes, u.tx_bytes, u.rx_errors, u.tx_errors, u.rx_bps, u.tx_bps
       from unnest($1::uuid[], $2::text[], $3::float8[], $4::boolean[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[], $10::float8[])
         as u(router_id, name, at_ms, running, rx_bytes, tx_bytes, rx_errors, tx_errors, rx_bps, tx_bps)
       where exists (select 1 from routers r where r.id = u.router_id)
       on conflict (router_id, name) do update set reported_at = excluded.reported_at, running = excluded.running,
         rx_bytes = excluded.rx_bytes, tx_bytes = excluded.tx_bytes, rx_errors = excluded.rx_errors,
         tx_errors = excluded.tx_errors, rx_bps = excluded.rx_bps, tx_bps = excluded.tx_bps
       where excluded.reported_at >= i.reported_at`,
      [
        col((r) => r.routerId as unknown as number),
        textArray(records.map((r) => r.name)),
        col((r) => r.reportedAt.getTime()),
        col((r) => r.running),
        col((r) => r.rxBytes),
        col((r) => r.txBytes),
        col((r) => r.rxErrors),
        col((r) => r.txErrors),
        col((r) => r.rxBps),
        col((r) => r.txBps),
      ],
    );
  }

  /** Resource samples of a router in [from, to), by time. */
  async resourceSamples(routerId: string, fromMs: number, toMs: number): Promise<ResourceSample[]> {
    const rows = await this.#days(HEALTH_SERIES_TABLES.resourceSamples, routerId, undefined, fromMs, toMs);
    return rows
      .flatMap((row) => unpackResourceSamples(routerId, row.day, row.data))
      .filter((s) => s.atMs >= fromMs && s.atMs < toMs);
  }

  /** Hourly min/avg/max of a router in [from, to), by time. */
  async resourceHours(routerId: string, fromMs: number, toMs: number): Promise<ResourceHour[]> {
    const rows = await this.#days(HEALTH_SERIES_TABLES.resourceHourly, routerId, undefined, fromMs, toMs);
    return rows
      .flatMap((row) => unpackResourceHours(routerId, row.day, row.data))
      .filter((s) => s.atMs >= fromMs && s.atMs < toMs);
  }

  /** One interface's rates in [from, to) at the 5-minute (`samples`) or hourly tier. */
  async traffic(
    routerId: string,
    name: string,
    tier: "samples" | "hourly",
    fromMs: number,
    toMs: number,
  ): Promise<TrafficRecord[]> {
    const table = tier === "samples" ? HEALTH_SERIES_TABLES.trafficSamples : HEALTH_SERIES_TABLES.trafficHourly;
    const rows = await this.#days(table, routerId, name, fromMs, toMs);
    return rows
      .flatMap((row) => unpackTraffic(routerId, name, row.day, row.data))
      .filter((s) => s.atMs >= fromMs && s.atMs < toMs);
  }

  async #days(
    table: SeriesTable,
    routerId: string,
    name: string | undefined,
    fromMs: number,
    toMs: number,
  ): Promise<Array<{ day: number; data: Buffer }>> {
    // A range scan of the primary key in the partitions the days fall in (partition pruning on `day`).
    const rows =
      name === undefined
        ? await this.#db.query<{ day: unknown; data: unknown }>(
            `select day, data from "${table}" where router_id = $1::uuid and day >= $2::int and day <= $3::int order by day`,
            [routerId, dayOf(fromMs), dayOf(toMs - 1)],
          )
        : await this.#db.query<{ day: unknown; data: unknown }>(
            `select day, data from "${table}" where router_id = $1::uuid and name = $2 and day >= $3::int and day <= $4::int order by day`,
            [routerId, name, dayOf(fromMs), dayOf(toMs - 1)],
          );
    return rows.map((row) => ({ day: Number(row.day), data: bytesOf(row.data) }));
  }

  /** The latest state of a router's interfaces, by name. */
  async interfaces(routerId: string): Promise<InterfaceLatestRecord[]> {
    const rows = await this.#db.query<Record<string, unknown>>(
      `select ${INTERFACE_COLUMNS} from router_interfaces_latest where router_id = $1::uuid order by name`,
      [routerId],
    );
    return rows.map((row) => ({
      routerId: String(row.router_id),
      name: String(row.name),
      reportedAt: toDate(row.reported_at),
      running: row.running === null || row.running === undefined ? null : Boolean(row.running),
      rxBytes: num(row.rx_bytes),
      txBytes: num(row.tx_bytes),
      rxErrors: num(row.rx_errors),
      txErrors: num(row.tx_errors),
      rxBps: num(row.rx_bps),
      txBps: num(row.tx_bps),
    }));
  }

  /** Partitions of every series table: name and the day (exclusive) it ends. */
  async partitions(): Promise<Array<{ table: SeriesTable; name: string; end: number }>> {
    const out: Array<{ table: SeriesTable; name: string; end: number }> = [];
    for (const table of Object.values(HEALTH_SERIES_TABLES)) {
      const rows = await this.#db.query<{ relname: string }>(
        `select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
         where p.relname = $1 order by c.relname`,
        [table],
      );
      for (const row of rows) {
        const end = partitionEnd(table, row.relname);
        if (end !== undefined) out.push({ table, name: row.relname, end });
      }
    }
    return out;
  }

  /** Drops a partition (retention): a catalog change, no row is deleted one by one. */
  async dropPartition(name: string): Promise<void> {
    if (!/^router_(resource|traffic)_(samples|hourly)_[dm]\d+$/.test(name))
      throw new RangeError("not a health partition");
    await this.#db.query(`drop table if exists "${name}"`);
    this.#known.delete(name);
  }
}
