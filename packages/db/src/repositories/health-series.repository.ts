import type { Database, Query } from "../database.ts";
import { HEALTH_SERIES_TABLES } from "../migrations/20261130-131-health-series.migration.ts";
import { HEALTH_STAGING_TABLE } from "../migrations/20261201-160-health-staging.migration.ts";
import {
  COMPACT_PART,
  compactResourceSamples,
  compactTraffic,
  DAY_MS,
  dayOf,
  expandResourceSamples,
  expandTraffic,
  packResourceHour,
  packStaged,
  packTraffic,
  type ResourceHour,
  type ResourceSample,
  type TrafficRecord,
  unpackResourceHours,
  unpackResourceSamples,
  unpackStaged,
  unpackTraffic,
} from "./health-packing.ts";
import { binaryArray, plainArray, textArray } from "./pg-arrays.ts";
import { HEALTH_ASYNC_COMMIT } from "./router-health.repository.ts";

export * from "./health-packing.ts";

type SeriesTable = (typeof HEALTH_SERIES_TABLES)[keyof typeof HEALTH_SERIES_TABLES] | typeof HEALTH_STAGING_TABLE;

const SERIES_TABLES: readonly SeriesTable[] = [...Object.values(HEALTH_SERIES_TABLES), HEALTH_STAGING_TABLE];

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

const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
const bytesOf = (value: unknown): Buffer =>
  Buffer.isBuffer(value)
    ? value
    : value instanceof Uint8Array
      ? Buffer.from(value.buffer, value.byteOffset, value.byteLength)
      : Buffer.from(String(value).replace(/^\\x/, ""), "hex");

/**
 * The health series (docs/api.md "Health", docs/scale.md "Health samples"): 5-minute records staged
 * one row per router per period and compacted per day, hourly records appended to one row per
 * router (and interface) per day, in range partitions made on first use and by the
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

  /**
   * Writes the records of one flush; routers that no longer exist are skipped. The 5-minute records
   * are staged (one inserted row per router per period, resources and interfaces together); the
   * hourly ones are appended to one row per router (and interface) per day.
   */
  async append(query: Query, write: HealthSeriesWrite): Promise<void> {
    const { resourceHourly: rh, trafficHourly: th } = HEALTH_SERIES_TABLES;
    if (write.resourceSamples?.length || write.trafficSamples?.length)
      await this.#forgettingDroppedPartition(HEALTH_STAGING_TABLE, () =>
        this.#stage(query, write.resourceSamples ?? [], write.trafficSamples ?? []),
      );
    if (write.resourceHours?.length)
      await this.#forgettingDroppedPartition(rh, () =>
        this.#appendRows(query, rh, write.resourceHours ?? [], packResourceHour),
      );
    if (write.trafficHours?.length)
      await this.#forgettingDroppedPartition(th, () =>
        this.#appendRows(query, th, write.trafficHours ?? [], packTraffic),
      );
  }

  /**
   * Another process dropped a partition this one knew (compaction drops a staged day; retention
   * drops expired ones): PostgreSQL finds no partition for the row (23514). This process forgets
   * what it knew of the table and the write fails; the caller's retry makes the partition again
   * (the daemon puts the flush back: in a transaction, nothing more may run after the error).
   */
  async #forgettingDroppedPartition(table: SeriesTable, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code === "23514")
        for (const name of this.#known) if (name.startsWith(`${table}_`)) this.#known.delete(name);
      throw error;
    }
  }

  /** One row per router and period: inserted, never updated (a period written twice keeps the later). */
  async #stage(query: Query, samples: readonly ResourceSample[], traffic: readonly TrafficRecord[]): Promise<void> {
    const rows = new Map<
      string,
      {
        routerId: string;
        atMs: number;
        values: ResourceSample["values"] | null;
        traffic: Array<{ name: string; record: TrafficRecord }>;
      }
    >();
    const rowOf = (routerId: string, atMs: number) => {
      const key = `${routerId}\u0000${atMs}`;
      let row = rows.get(key);
      if (!row) {
        row = { routerId, atMs, values: null, traffic: [] };
        rows.set(key, row);
      }
      return row;
    };
    for (const sample of samples) rowOf(sample.routerId, sample.atMs).values = sample.values;
    for (const record of traffic) rowOf(record.routerId, record.atMs).traffic.push({ name: record.name, record });
    const list = [...rows.values()];
    for (const day of new Set(list.map((row) => dayOf(row.atMs))))
      await this.ensurePartition(query, HEALTH_STAGING_TABLE, day);
    await query(
      `with ${HEALTH_ASYNC_COMMIT} insert into "${HEALTH_STAGING_TABLE}" as t (router_id, day, second, data)
       select u.router_id, u.day, u.second, u.data
       from health_async cross join unnest($1::uuid[], $2::int[], $3::int[], $4::bytea[]) as u(router_id, day, second, data)
       where exists (select 1 from routers r where r.id = u.router_id)
       on conflict (router_id, day, second) do update set data = excluded.data`,
      [
        plainArray(list.map((row) => row.routerId)),
        plainArray(list.map((row) => dayOf(row.atMs))),
        plainArray(list.map((row) => Math.floor((row.atMs - dayOf(row.atMs) * DAY_MS) / 1000))),
        textArray(list.map((row) => hex(packStaged(row.values, row.traffic)))),
      ],
    );
  }

  async #appendRows<T extends { routerId: string; atMs: number; name?: string }>(
    query: Query,
    table: SeriesTable,
    records: readonly T[],
    pack: (record: T) => Buffer,
  ): Promise<void> {
    // One row per (router, interface, day): the records of a day are concatenated in order.
    const rows = new Map<
      string,
      { routerId: string; name: string | undefined; day: number; part: number; parts: Buffer[] }
    >();
    for (const record of records) {
      const day = dayOf(record.atMs);
      // The hourly tier: one row a day (5-minute records are staged, see `#stage`).
      const part = 0;
      const key = `${record.routerId}\u0000${record.name ?? ""}\u0000${day}\u0000${part}`;
      let row = rows.get(key);
      if (!row) {
        row = { routerId: record.routerId, name: record.name, day, part, parts: [] };
        rows.set(key, row);
      }
      row.parts.push(pack(record));
    }
    const list = [...rows.values()];
    for (const day of new Set(list.map((row) => row.day))) await this.ensurePartition(query, table, day);
    const ids = plainArray(list.map((row) => row.routerId));
    const days = plainArray(list.map((row) => row.day));
    const parts = plainArray(list.map((row) => row.part));
    const data = textArray(list.map((row) => hex(Buffer.concat(row.parts))));
    if (table === HEALTH_SERIES_TABLES.trafficSamples || table === HEALTH_SERIES_TABLES.trafficHourly) {
      await query(
        `with ${HEALTH_ASYNC_COMMIT} insert into "${table}" as t (router_id, name, day, part, data)
         select u.router_id, u.name, u.day, u.part, u.data
         from health_async cross join unnest($1::uuid[], $2::text[], $3::int[], $4::smallint[], $5::bytea[]) as u(router_id, name, day, part, data)
         where exists (select 1 from routers r where r.id = u.router_id)
         on conflict (router_id, name, day, part) do update set data = t.data || excluded.data`,
        [ids, textArray(list.map((row) => row.name ?? "")), days, parts, data],
      );
    } else {
      await query(
        `with ${HEALTH_ASYNC_COMMIT} insert into "${table}" as t (router_id, day, part, data)
         select u.router_id, u.day, u.part, u.data
         from health_async cross join unnest($1::uuid[], $2::int[], $3::smallint[], $4::bytea[]) as u(router_id, day, part, data)
         where exists (select 1 from routers r where r.id = u.router_id)
         on conflict (router_id, day, part) do update set data = t.data || excluded.data`,
        [ids, days, parts, data],
      );
    }
  }

  /**
   * Writes the latest state of interfaces: one row per router, its entries merged by name (a name
   * not in this write keeps its last state); an entry older than the one held is not written.
   */
  static async upsertInterfaces(query: Query, records: readonly InterfaceLatestRecord[]): Promise<void> {
    if (records.length === 0) return;
    const byRouter = new Map<string, { atMs: number; fromMs: number; entries: Record<string, unknown[]> }>();
    for (const r of records) {
      let row = byRouter.get(r.routerId);
      if (!row) {
        row = { atMs: 0, fromMs: Number.POSITIVE_INFINITY, entries: {} };
        byRouter.set(r.routerId, row);
      }
      const atMs = r.reportedAt.getTime();
      row.atMs = Math.max(row.atMs, atMs);
      row.fromMs = Math.min(row.fromMs, atMs);
      row.entries[r.name] = [atMs, r.running, r.rxBytes, r.txBytes, r.rxErrors, r.txErrors, r.rxBps, r.txBps];
    }
    const rows = [...byRouter];
    // The merge keeps, per name, the newer of the held and the written entry (element 0: its time).
    // When the write's oldest entry is no older than the newest held (`reported_at`), every written
    // entry wins: a plain concatenation, the steady case (migration 190). The documents travel as a
    // binary text[] and become jsonb row by row: a jsonb[] literal of every router's document was
    // parsed whole while binding (array_in), outside the statement, at a quarter of the backend's CPU.
    await query(
      `with ${HEALTH_ASYNC_COMMIT} insert into router_interfaces_state as s (router_id, reported_at, written_from, interfaces)
       select u.router_id, to_timestamp(u.at_ms / 1000.0), to_timestamp(u.from_ms / 1000.0), u.interfaces::jsonb
       from health_async cross join unnest($1::uuid[], $2::float8[], $3::float8[], $4::text[]) as u(router_id, at_ms, from_ms, interfaces)
       where exists (select 1 from routers r where r.id = u.router_id)
       on conflict (router_id) do update set reported_at = greatest(s.reported_at, excluded.reported_at),
         written_from = excluded.written_from,
         interfaces = s.interfaces || case when excluded.written_from >= s.reported_at then excluded.interfaces
           else coalesce((select jsonb_object_agg(e.key, e.value) from jsonb_each(excluded.interfaces) e
             where not (s.interfaces ? e.key) or (e.value ->> 0)::float8 >= (s.interfaces -> e.key ->> 0)::float8), '{}'::jsonb) end`,
      [
        plainArray(rows.map(([routerId]) => routerId)),
        plainArray(rows.map(([, row]) => row.atMs)),
        plainArray(rows.map(([, row]) => row.fromMs)),
        binaryArray(
          "text",
          rows.map(([, row]) => JSON.stringify(row.entries)),
        ),
      ],
    );
  }

  /** Resource samples of a router in [from, to), by time: compacted days and staged periods merged. */
  async resourceSamples(routerId: string, fromMs: number, toMs: number): Promise<ResourceSample[]> {
    const rows = await this.#days(HEALTH_SERIES_TABLES.resourceSamples, routerId, undefined, fromMs, toMs);
    const staged = await this.#staged(routerId, fromMs, toMs);
    return byTime(
      [
        ...rows.flatMap((row) =>
          row.part === COMPACT_PART
            ? expandResourceSamples(routerId, row.day, row.data)
            : unpackResourceSamples(routerId, row.day, row.data),
        ),
        ...staged.flatMap((row) => {
          const { sample } = unpackStaged(routerId, row.atMs, row.data);
          return sample ? [sample] : [];
        }),
      ],
      fromMs,
      toMs,
    );
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
    if (tier === "hourly") {
      const rows = await this.#days(HEALTH_SERIES_TABLES.trafficHourly, routerId, name, fromMs, toMs);
      return rows
        .flatMap((row) => unpackTraffic(routerId, name, row.day, row.data))
        .filter((s) => s.atMs >= fromMs && s.atMs < toMs);
    }
    const rows = await this.#days(HEALTH_SERIES_TABLES.trafficSamples, routerId, name, fromMs, toMs);
    const staged = await this.#staged(routerId, fromMs, toMs);
    return byTime(
      [
        ...rows.flatMap((row) =>
          row.part === COMPACT_PART
            ? expandTraffic(routerId, name, row.day, row.data)
            : unpackTraffic(routerId, name, row.day, row.data),
        ),
        ...staged.flatMap((row) => unpackStaged(routerId, row.atMs, row.data).traffic.filter((t) => t.name === name)),
      ],
      fromMs,
      toMs,
    );
  }

  async #days(
    table: SeriesTable,
    routerId: string,
    name: string | undefined,
    fromMs: number,
    toMs: number,
  ): Promise<Array<{ day: number; part: number; data: Buffer }>> {
    // A range scan of the primary key in the partitions the days fall in (partition pruning on `day`).
    const rows =
      name === undefined
        ? await this.#db.query<{ day: unknown; part: unknown; data: unknown }>(
            `select day, part, data from "${table}" where router_id = $1::uuid and day >= $2::int and day <= $3::int order by day, part`,
            [routerId, dayOf(fromMs), dayOf(toMs - 1)],
          )
        : await this.#db.query<{ day: unknown; part: unknown; data: unknown }>(
            `select day, part, data from "${table}" where router_id = $1::uuid and name = $2 and day >= $3::int and day <= $4::int order by day, part`,
            [routerId, name, dayOf(fromMs), dayOf(toMs - 1)],
          );
    return rows.map((row) => ({ day: Number(row.day), part: Number(row.part), data: bytesOf(row.data) }));
  }

  /** The staged periods of a router in [from, to) (days not compacted yet). */
  async #staged(routerId: string, fromMs: number, toMs: number): Promise<Array<{ atMs: number; data: Buffer }>> {
    const rows = await this.#db.query<{ day: unknown; second: unknown; data: unknown }>(
      `select day, second, data from "${HEALTH_STAGING_TABLE}" where router_id = $1::uuid and day >= $2::int and day <= $3::int order by day, second`,
      [routerId, dayOf(fromMs), dayOf(toMs - 1)],
    );
    return rows.map((row) => ({
      atMs: Number(row.day) * DAY_MS + Number(row.second) * 1000,
      data: bytesOf(row.data),
    }));
  }

  /** Days with a staged partition (compaction candidates), oldest first. */
  async stagedDays(): Promise<number[]> {
    return (await this.partitions())
      .filter((p) => p.table === HEALTH_STAGING_TABLE)
      .map((p) => p.end - 1)
      .sort((a, b) => a - b);
  }

  /**
   * Compacts a closed day (docs/scale.md "Health samples"): each router's staged periods of `day`,
   * with what the day's compacted or quarter-day rows already hold, become one row per router (and
   * interface) at `part` 4, and the day's staged partition is dropped. Run in one transaction
   * (`query`): a crash leaves the day staged for the next run. The advisory lock makes a second
   * runner skip; the table lock makes a late write for the day wait and then land in a new staged
   * partition, merged by the next run. Returns the routers compacted, or null when skipped.
   */
  async compactDay(query: Query, day: number, batch = 500): Promise<number | null> {
    const lock = await query<{ ok: boolean }>("select pg_try_advisory_xact_lock(160, $1::int) as ok", [day]);
    if (lock[0]?.ok !== true) return null;
    const staged = partitionOf(HEALTH_STAGING_TABLE, day).name;
    const exists = await query<{ oid: unknown }>("select to_regclass($1) as oid", [staged]);
    if (exists[0]?.oid === null || exists[0]?.oid === undefined) return 0;
    await query(`lock table "${staged}" in access exclusive mode`);
    const { resourceSamples: rs, trafficSamples: ts } = HEALTH_SERIES_TABLES;
    await this.ensurePartition(query, rs, day);
    await this.ensurePartition(query, ts, day);
    let after = "00000000-0000-0000-0000-000000000000";
    let routers = 0;
    for (;;) {
      const ids = (
        await query<{ router_id: string }>(
          `select distinct router_id from "${staged}" where router_id > $1::uuid order by router_id limit ${Math.max(1, Math.floor(batch))}`,
          [after],
        )
      ).map((row) => String(row.router_id));
      const last = ids.at(-1);
      if (last === undefined) break;
      after = last;
      routers += ids.length;
      await this.#compactRouters(query, staged, day, ids);
    }
    await query(`drop table "${staged}"`);
    this.#known.delete(staged);
    return routers;
  }

  async #compactRouters(query: Query, staged: string, day: number, ids: readonly string[]): Promise<void> {
    const { resourceSamples: rs, trafficSamples: ts } = HEALTH_SERIES_TABLES;
    const idArray = plainArray(ids);
    const resources = new Map<string, ResourceSample[]>();
    const traffic = new Map<string, { routerId: string; name: string; records: TrafficRecord[] }>();
    const trafficOf = (routerId: string, name: string) => {
      const key = `${routerId}\u0000${name}`;
      let entry = traffic.get(key);
      if (!entry) {
        entry = { routerId, name, records: [] };
        traffic.set(key, entry);
      }
      return entry.records;
    };
    const resourcesOf = (routerId: string) => {
      let list = resources.get(routerId);
      if (!list) {
        list = [];
        resources.set(routerId, list);
      }
      return list;
    };
    // What the day already holds first (quarter-day rows, an earlier compaction): staged periods win.
    let legacy = false;
    for (const row of await query<{ router_id: string; part: unknown; data: unknown }>(
      `select router_id, part, data from "${rs}" where router_id = any($1::uuid[]) and day = $2::int order by router_id, part`,
      [idArray, day],
    )) {
      const id = String(row.router_id);
      const data = bytesOf(row.data);
      const compact = Number(row.part) === COMPACT_PART;
      if (!compact) legacy = true;
      resourcesOf(id).push(...(compact ? expandResourceSamples(id, day, data) : unpackResourceSamples(id, day, data)));
    }
    for (const row of await query<{ router_id: string; name: string; part: unknown; data: unknown }>(
      `select router_id, name, part, data from "${ts}" where router_id = any($1::uuid[]) and day = $2::int order by router_id, name, part`,
      [idArray, day],
    )) {
      const id = String(row.router_id);
      const name = String(row.name);
      const data = bytesOf(row.data);
      const compact = Number(row.part) === COMPACT_PART;
      if (!compact) legacy = true;
      trafficOf(id, name).push(...(compact ? expandTraffic(id, name, day, data) : unpackTraffic(id, name, day, data)));
    }
    for (const row of await query<{ router_id: string; second: unknown; data: unknown }>(
      `select router_id, second, data from "${staged}" where router_id = any($1::uuid[]) order by router_id, second`,
      [idArray],
    )) {
      const id = String(row.router_id);
      const { sample, traffic: records } = unpackStaged(
        id,
        day * DAY_MS + Number(row.second) * 1000,
        bytesOf(row.data),
      );
      if (sample) resourcesOf(id).push(sample);
      for (const record of records) trafficOf(id, record.name).push(record);
    }
    const resourceRows = [...resources].map(([routerId, samples]) => ({
      routerId,
      data: compactResourceSamples(byTime(samples, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY)),
    }));
    const trafficRows = [...traffic.values()].map((entry) => ({
      ...entry,
      data: compactTraffic(byTime(entry.records, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY)),
    }));
    if (resourceRows.length > 0)
      await query(
        `insert into "${rs}" (router_id, day, part, data)
         select u.router_id, $2::int, ${COMPACT_PART}, u.data from unnest($1::uuid[], $3::bytea[]) as u(router_id, data)
         on conflict (router_id, day, part) do update set data = excluded.data`,
        [plainArray(resourceRows.map((r) => r.routerId)), day, textArray(resourceRows.map((r) => hex(r.data)))],
      );
    if (trafficRows.length > 0)
      await query(
        `insert into "${ts}" (router_id, name, day, part, data)
         select u.router_id, u.name, $2::int, ${COMPACT_PART}, u.data from unnest($1::uuid[], $3::text[], $4::bytea[]) as u(router_id, name, data)
         on conflict (router_id, name, day, part) do update set data = excluded.data`,
        [
          plainArray(trafficRows.map((r) => r.routerId)),
          day,
          textArray(trafficRows.map((r) => r.name)),
          textArray(trafficRows.map((r) => hex(r.data))),
        ],
      );
    if (legacy) {
      await query(
        `delete from "${rs}" where router_id = any($1::uuid[]) and day = $2::int and part <> ${COMPACT_PART}`,
        [idArray, day],
      );
      await query(
        `delete from "${ts}" where router_id = any($1::uuid[]) and day = $2::int and part <> ${COMPACT_PART}`,
        [idArray, day],
      );
    }
  }

  /** The latest state of a router's interfaces, by name. */
  async interfaces(routerId: string): Promise<InterfaceLatestRecord[]> {
    const rows = await this.#db.query<{ interfaces: unknown }>(
      "select interfaces from router_interfaces_state where router_id = $1::uuid",
      [routerId],
    );
    const value = rows[0]?.interfaces;
    if (value === undefined || value === null) return [];
    const entries = (typeof value === "string" ? JSON.parse(value) : value) as Record<string, unknown[]>;
    return Object.keys(entries)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((name) => {
        const e = entries[name] ?? [];
        return {
          routerId,
          name,
          reportedAt: new Date(Number(e[0])),
          running: e[1] === null || e[1] === undefined ? null : Boolean(e[1]),
          rxBytes: num(e[2]),
          txBytes: num(e[3]),
          rxErrors: num(e[4]),
          txErrors: num(e[5]),
          rxBps: num(e[6]),
          txBps: num(e[7]),
        };
      });
  }

  /** Partitions of every series table: name and the day (exclusive) it ends. */
  async partitions(): Promise<Array<{ table: SeriesTable; name: string; end: number }>> {
    const out: Array<{ table: SeriesTable; name: string; end: number }> = [];
    for (const table of SERIES_TABLES) {
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
    if (!/^router_((resource|traffic)_(samples|hourly)|health_staged)_[dm]\d+$/.test(name))
      throw new RangeError("not a health partition");
    await this.#db.query(`drop table if exists "${name}"`);
    this.#known.delete(name);
  }
}

/** Records of one series in [from, to), by time; a time given twice keeps the later entry (a staged period over a compacted one). */
const byTime = <T extends { atMs: number }>(records: readonly T[], fromMs: number, toMs: number): T[] => {
  const map = new Map<number, T>();
  for (const record of records) if (record.atMs >= fromMs && record.atMs < toMs) map.set(record.atMs, record);
  return [...map.values()].sort((a, b) => a.atMs - b.atMs);
};
