import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryOf } from "../database.ts";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "../testing/index.ts";
import {
  DAY_MS,
  dayOf,
  HealthSeriesRepository,
  packResourceSample,
  type ResourceSample,
  type TrafficRecord,
} from "./health-series.repository.ts";

let db: TestDatabase;
let series: HealthSeriesRepository;
let routerIds: string[];
const DAY0 = Date.UTC(2026, 10, 30);

beforeAll(async () => {
  db = await createTestDatabase();
  series = new HealthSeriesRepository(db);
  const user = await makeUser(db);
  routerIds = [(await makeRouter(db, user)).id, (await makeRouter(db, user)).id];
});
afterAll(async () => {
  await db?.close();
});

const values = (p: number) => ({
  cpuLoad: p % 37,
  memoryUsedPercent: 50 + (p % 4) / 2,
  diskUsedPercent: 40,
  temperature: p % 3 === 0 ? null : 41,
  voltage: 24.25,
  pingLossPercent: 0,
  pingRttMs: 1.5 + (p % 5) / 10,
});
const sample = (routerId: string, atMs: number, p: number): ResourceSample => ({ routerId, atMs, values: values(p) });
const traffic = (routerId: string, name: string, atMs: number, p: number): TrafficRecord => ({
  routerId,
  name,
  atMs,
  rxBps: 1000 * p,
  txBps: p % 2 ? null : 500,
  rxErrors: p % 3,
  txErrors: 0,
});
const stagedPartitions = async () =>
  (await series.partitions()).filter((p) => p.table === "router_health_staged").map((p) => p.name);

describe('HealthSeriesRepository: staged and compacted 5-minute samples (docs/scale.md "Health samples")', () => {
  it("reads the same series before and after a day is compacted, and drops the day's staged partition", async () => {
    const [a, b] = routerIds as [string, string];
    const day = dayOf(DAY0);
    const periods = Array.from({ length: 288 }, (_, p) => DAY0 + p * 300_000);
    for (const [p, atMs] of periods.entries())
      await series.append(queryOf(db), {
        resourceSamples: [sample(a, atMs, p), sample(b, atMs, p + 1)],
        trafficSamples: [traffic(a, "ether1", atMs, p), traffic(a, "wg0 \u00e9", atMs, p + 2)],
      });
    const read = async () => ({
      a: await series.resourceSamples(a, DAY0, DAY0 + DAY_MS),
      b: await series.resourceSamples(b, DAY0 + 3_600_000, DAY0 + 7_200_000),
      ether1: await series.traffic(a, "ether1", "samples", DAY0, DAY0 + DAY_MS),
      wg0: await series.traffic(a, "wg0 \u00e9", "samples", DAY0, DAY0 + DAY_MS),
    });
    const before = await read();
    expect(before.a).toHaveLength(288);
    expect(before.a[5]).toEqual(sample(a, DAY0 + 5 * 300_000, 5));
    expect(before.b).toHaveLength(12);
    expect(before.ether1[7]).toEqual(traffic(a, "ether1", DAY0 + 7 * 300_000, 7));
    expect(before.wg0).toHaveLength(288);
    expect(await stagedPartitions()).toContain(`router_health_staged_d${day}`);

    expect(await db.transaction((query) => series.compactDay(query, day))).toBe(2);
    expect(await stagedPartitions()).not.toContain(`router_health_staged_d${day}`);
    expect(await read()).toEqual(before);
    const rows = await db.query<{ part: unknown; size: unknown }>(
      "select part, octet_length(data) as size from router_resource_samples where router_id = $1::uuid and day = $2::int",
      [a, day],
    );
    expect(rows.map((r) => Number(r.part))).toEqual([4]);
    // 288 samples of 11 bytes were 3,168 bytes packed; the compacted day is a fraction of that.
    expect(Number(rows[0]?.size)).toBeLessThan(1000);

    // A late sample for the compacted day is staged again and merged by the next run; a run with
    // nothing staged for the day does nothing.
    const late = sample(a, DAY0 + 5 * 300_000, 30);
    await series.append(queryOf(db), { resourceSamples: [late] });
    expect((await series.resourceSamples(a, DAY0, DAY0 + DAY_MS))[5]).toEqual(late);
    expect(await db.transaction((query) => series.compactDay(query, day))).toBe(1);
    expect(await db.transaction((query) => series.compactDay(query, day))).toBe(0);
    const after = await series.resourceSamples(a, DAY0, DAY0 + DAY_MS);
    expect(after).toHaveLength(288);
    expect(after[5]).toEqual(late);
    expect(after[6]).toEqual(before.a[6]);
    expect(await series.traffic(a, "ether1", "samples", DAY0, DAY0 + DAY_MS)).toEqual(before.ether1);
  });

  it("a late write finds the staged partition another process dropped, and makes it again", async () => {
    const [a] = routerIds as [string];
    const other = new HealthSeriesRepository(db);
    const atMs = DAY0 + 2 * DAY_MS;
    await series.append(queryOf(db), { resourceSamples: [sample(a, atMs, 1)] });
    await db.transaction((query) => other.compactDay(query, dayOf(atMs)));
    // `series` still knows the partition it made; the database no longer has it: the write fails
    // once (the daemon puts its flush back) and the retry makes the partition again.
    const late = { resourceSamples: [sample(a, atMs + 300_000, 2)] };
    await expect(series.append(queryOf(db), late)).rejects.toMatchObject({ code: "23514" });
    await series.append(queryOf(db), late);
    expect(await series.resourceSamples(a, atMs, atMs + DAY_MS)).toEqual([
      sample(a, atMs, 1),
      sample(a, atMs + 300_000, 2),
    ]);
  });

  it("folds a day's quarter-day rows (written before staging) into its compacted row", async () => {
    const [, b] = routerIds as [string, string];
    const atMs = DAY0 + 5 * DAY_MS;
    const day = dayOf(atMs);
    await series.ensurePartition(queryOf(db), "router_resource_samples", day);
    const old = [sample(b, atMs, 1), sample(b, atMs + 300_000, 2)];
    await db.query(
      "insert into router_resource_samples (router_id, day, part, data) values ($1::uuid, $2::int, 0, decode($3, 'hex'))",
      [b, day, Buffer.concat(old.map(packResourceSample)).toString("hex")],
    );
    await series.append(queryOf(db), { resourceSamples: [sample(b, atMs + 600_000, 3)] });
    expect(await series.resourceSamples(b, atMs, atMs + DAY_MS)).toHaveLength(3);
    await db.transaction((query) => series.compactDay(query, day));
    expect(await series.resourceSamples(b, atMs, atMs + DAY_MS)).toEqual([...old, sample(b, atMs + 600_000, 3)]);
    const parts = await db.query<{ part: unknown }>(
      "select part from router_resource_samples where router_id = $1::uuid and day = $2::int",
      [b, day],
    );
    expect(parts.map((r) => Number(r.part))).toEqual([4]);
  });
});

describe("HealthSeriesRepository: the latest interface states, one row per router", () => {
  it("merges entries by name and never lets an older entry replace a newer one", async () => {
    const [a] = routerIds as [string];
    const state = (name: string, atMs: number, rxBytes: number) => ({
      routerId: a,
      name,
      reportedAt: new Date(atMs),
      running: true,
      rxBytes,
      txBytes: 1,
      rxErrors: 0,
      txErrors: null,
      rxBps: 8.5,
      txBps: null,
    });
    await HealthSeriesRepository.upsertInterfaces(queryOf(db), [state("ether2", DAY0, 10), state("ether1", DAY0, 20)]);
    await HealthSeriesRepository.upsertInterfaces(queryOf(db), [
      state("ether1", DAY0 + 30_000, 21),
      state("ether2", DAY0 - 30_000, 9),
      state("wg0", DAY0 + 30_000, 5),
    ]);
    expect(await series.interfaces(a)).toEqual([
      state("ether1", DAY0 + 30_000, 21),
      state("ether2", DAY0, 10),
      state("wg0", DAY0 + 30_000, 5),
    ]);
    // Every entry newer than anything held (the steady case, written without the merge by name):
    // written entries win, a held name the write does not carry keeps its state.
    await HealthSeriesRepository.upsertInterfaces(queryOf(db), [
      state("ether1", DAY0 + 60_000, 22),
      state("wg0", DAY0 + 90_000, 6),
    ]);
    expect(await series.interfaces(a)).toEqual([
      state("ether1", DAY0 + 60_000, 22),
      state("ether2", DAY0, 10),
      state("wg0", DAY0 + 90_000, 6),
    ]);
    // One entry as old as the newest held and one older: the older never replaces a newer one.
    await HealthSeriesRepository.upsertInterfaces(queryOf(db), [
      state("wg0", DAY0 + 90_000, 7),
      state("ether1", DAY0 + 30_000, 1),
    ]);
    expect(await series.interfaces(a)).toEqual([
      state("ether1", DAY0 + 60_000, 22),
      state("ether2", DAY0, 10),
      state("wg0", DAY0 + 90_000, 7),
    ]);
  });
});
