import { dayOf, HealthSeriesRepository, queryOf } from "@fleet/db";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maintainHealthPartitions } from "./health-partitions.job.ts";

let db: TestDatabase;
const DAY = 86_400_000;
const START = Date.UTC(2026, 10, 30, 12, 0, 0);

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

const values = {
  cpuLoad: 1,
  memoryUsedPercent: 2,
  diskUsedPercent: 3,
  temperature: 4,
  voltage: 5,
  pingLossPercent: 0,
  pingRttMs: 1,
};

describe('health partitions (docs/scale.md "Health samples")', () => {
  it("makes partitions ahead and drops those past RESOURCE_RETENTION_DAYS and METRICS_RETENTION_DAYS, whole", async () => {
    const clock = new ManualClock(START);
    const series = new HealthSeriesRepository(db);
    const user = await makeUser(db);
    const router = await makeRouter(db, user);
    const run = () =>
      maintainHealthPartitions({
        series,
        query: queryOf(db),
        db,
        clock,
        resourceRetentionDays: 30,
        metricsRetentionDays: 400,
        logger: pino({ level: "silent" }),
      });
    expect(await run()).toEqual([]);
    const names = async () => (await series.partitions()).map((p) => p.name);
    const today = dayOf(START);
    expect(await names()).toEqual(
      expect.arrayContaining([
        `router_resource_samples_d${today}`,
        `router_resource_samples_d${today + 2}`,
        "router_resource_hourly_m202611",
        "router_resource_hourly_m202612",
        `router_traffic_samples_d${today + 1}`,
      ]),
    );
    await series.append(queryOf(db), {
      resourceSamples: [{ routerId: router.id, atMs: START, values }],
      resourceHours: [{ routerId: router.id, atMs: START, min: values, avg: values, max: values }],
    });
    // The day is closed (and half an hour more): its staged samples are compacted, its staged partition dropped.
    clock.set(Date.UTC(2026, 11, 1, 0, 29));
    await run();
    expect(await names()).toContain(`router_health_staged_d${today}`);
    clock.set(Date.UTC(2026, 11, 1, 0, 31));
    await run();
    expect(await names()).not.toContain(`router_health_staged_d${today}`);
    expect(await series.resourceSamples(router.id, START - DAY, START + DAY)).toHaveLength(1);
    // Day 30 after: the sample day is exactly at the edge of the retention, still kept.
    clock.set(START + 30 * DAY);
    expect(await run()).toEqual([]);
    expect(await series.resourceSamples(router.id, START - DAY, START + DAY)).toHaveLength(1);
    // Day 31: its partition (and the ones before) go; the hourly month stays.
    clock.set(START + 31 * DAY);
    const dropped = await run();
    expect(dropped).toContain(`router_resource_samples_d${today}`);
    expect(dropped).not.toContain("router_resource_hourly_m202611");
    expect(await series.resourceSamples(router.id, START - DAY, START + DAY)).toEqual([]);
    expect(await series.resourceHours(router.id, START - DAY, START + DAY)).toHaveLength(1);
    // 400 days after the end of November: the month goes.
    clock.set(Date.UTC(2026, 11, 1) + 400 * DAY);
    expect(await run()).toContain("router_resource_hourly_m202611");
    expect(await series.resourceHours(router.id, START - DAY, START + DAY)).toEqual([]);
    // A write for a day whose partition was dropped makes it again (nothing is lost for a late sample).
    await series.append(queryOf(db), { resourceSamples: [{ routerId: router.id, atMs: START, values }] });
    expect(await series.resourceSamples(router.id, START - DAY, START + DAY)).toHaveLength(1);
  });
});
