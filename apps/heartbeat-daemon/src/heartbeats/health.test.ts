import { databaseFingerprint, createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { HealthSeriesRepository, RouterHealthRepository } from "@fleet/db";
import { ManualClock } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DaemonHarness, startDaemonHarness } from "../testing/daemon-harness.ts";
import { HealthTracker } from "./health-tracker.ts";

// docs/api.md "Health": heartbeats with resources, interfaces and a ping become the latest values,
// one sample per RESOURCE_SAMPLE_SECONDS (here 60 s), hourly min/avg/max and interface rates.

let db: TestDatabase;
let h: DaemonHarness;
let owner: { organizationId: string; teamId: string };
let series: HealthSeriesRepository;
let latest: RouterHealthRepository;
const NEVER_MS = 3_600_000;
const HOUR_MS = 3_600_000;
/** An hour start: each test moves the clock to a fresh hour of its own. */
let hourStart = Date.UTC(2026, 10, 30, 0, 0, 0);

const post = async (token: string, fields: Record<string, unknown>) => {
  const response = await fetch(new URL("/v1/heartbeat", h.daemon.url), {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ type: "heartbeat", ...fields }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

/** Beats `fields` at `offsetMs` into the test's hour; the ack must be 200. */
const beatAt = async (token: string, offsetMs: number, fields: Record<string, unknown>) => {
  h.clock.set(hourStart + offsetMs);
  expect((await post(token, fields)).status).toBe(200);
};

const nextHour = () => {
  hourStart += 2 * HOUR_MS;
  return hourStart;
};

beforeAll(async () => {
  db = await createTestDatabase();
  owner = await makeUser(db);
  series = new HealthSeriesRepository(db);
  latest = new RouterHealthRepository(db);
  h = await startDaemonHarness(db, {
    clock: new ManualClock(hourStart),
    resourceSampleSeconds: 60,
    healthPingTarget: "192.0.2.1",
    tuning: { flushIntervalMs: NEVER_MS, steadyFlushMs: NEVER_MS, floodBurst: 10_000, floodPerSecond: 10_000 },
  });
});
afterAll(async () => {
  await h?.close();
  await db?.close();
});

describe('health samples (docs/api.md "Health")', () => {
  it("keeps the last values of each sample period, and the latest values at once", async () => {
    const router = await makeRouter(db, owner);
    const t0 = nextHour();
    const resources = (cpu: number) => ({
      cpu_load: `${cpu}.000000`,
      memory_total: 1000,
      memory_free: "250",
      disk_total: 100,
      disk_free: 50,
      temperature: 40,
      voltage: "24",
    });
    await beatAt(router.heartbeatToken, 10_000, { resources: resources(10) });
    await beatAt(router.heartbeatToken, 50_000, {
      resources: resources(20),
      ping: { sent: 5, received: 4, rtt_avg_ms: 2.5 },
    });
    await h.daemon.flush();
    // The period is still open: no sample yet, but the latest values are there.
    expect(await series.resourceSamples(router.id, t0, t0 + HOUR_MS)).toEqual([]);
    expect(await latest.latest(router.id)).toMatchObject({
      reportedAt: new Date(t0 + 50_000),
      cpuLoad: 20,
      memoryUsedPercent: 75,
      diskUsedPercent: 50,
      temperature: 40,
      voltage: 24,
      pingLossPercent: 20,
      pingRttMs: 2.5,
    });
    await beatAt(router.heartbeatToken, 70_000, { resources: resources(30) });
    await beatAt(router.heartbeatToken, 130_000, { resources: resources(40) });
    await h.daemon.flush();
    const samples = await series.resourceSamples(router.id, t0, t0 + HOUR_MS);
    expect(samples.map((s) => [s.atMs - t0, s.values.cpuLoad])).toEqual([
      [0, 20],
      [60_000, 30],
    ]);
    expect(samples[0]?.values).toEqual({
      cpuLoad: 20,
      memoryUsedPercent: 75,
      diskUsedPercent: 50,
      temperature: 40,
      voltage: 24,
      pingLossPercent: 20,
      pingRttMs: 2.5,
    });
    // A router that goes silent: its period closes at the flush after it ends.
    h.clock.set(t0 + 200_000);
    await h.daemon.flush();
    expect((await series.resourceSamples(router.id, t0, t0 + HOUR_MS)).map((s) => s.values.cpuLoad)).toEqual([
      20, 30, 40,
    ]);
  });

  it("rolls each hour up into min, avg and max over every heartbeat of it", async () => {
    const router = await makeRouter(db, owner);
    const t0 = nextHour();
    for (const [offset, cpu] of [
      [0, 10],
      [600_000, 20],
      [1_200_000, 60],
    ] as const)
      await beatAt(router.heartbeatToken, offset, { resources: { cpu_load: cpu, temperature: cpu / 2 } });
    await h.daemon.flush();
    expect(await series.resourceHours(router.id, t0, t0 + 2 * HOUR_MS)).toEqual([]);
    await beatAt(router.heartbeatToken, HOUR_MS + 1_000, { resources: { cpu_load: 90 } });
    await h.daemon.flush();
    const [hour, ...rest] = await series.resourceHours(router.id, t0, t0 + 2 * HOUR_MS);
    expect(rest).toEqual([]);
    expect(hour?.atMs).toBe(t0);
    expect(hour?.min.cpuLoad).toBe(10);
    expect(hour?.avg.cpuLoad).toBe(30);
    expect(hour?.max.cpuLoad).toBe(60);
    expect(hour?.max.temperature).toBe(30);
    expect(hour?.min.pingRttMs).toBeNull();
  });

  it("turns counters into bits per second, and a counter reset into no rate rather than a spike", async () => {
    const router = await makeRouter(db, owner);
    const t0 = nextHour();
    const iface = (rx: number, tx: number, running = true) => [
      { name: "ether1", rx_bytes: rx, tx_bytes: String(tx), rx_errors: 0, tx_errors: 0, running },
    ];
    await beatAt(router.heartbeatToken, 0, { interfaces: iface(1_000_000, 0) });
    await beatAt(router.heartbeatToken, 10_000, { interfaces: iface(1_001_000, 500) }); // 800 bps, 400 bps
    await beatAt(router.heartbeatToken, 20_000, { interfaces: iface(100, 50) }); // reboot: counters reset
    await beatAt(router.heartbeatToken, 30_000, { interfaces: iface(1_100, 550) }); // 800 bps, 400 bps again
    await h.daemon.flush();
    const [state] = await series.interfaces(router.id);
    expect(state).toMatchObject({ name: "ether1", running: true, rxBytes: 1_100, rxBps: 800, txBps: 400 });
    // The period closes: its rate is the bytes of the intervals without a reset over their seconds.
    await beatAt(router.heartbeatToken, 60_000, { interfaces: iface(50, 10) }); // another reset
    await beatAt(router.heartbeatToken, 70_000, { interfaces: iface(1_050, 510) });
    await beatAt(router.heartbeatToken, 80_000, { interfaces: iface(0, 0) }); // and another
    h.clock.set(t0 + 130_000);
    await h.daemon.flush();
    const traffic = await series.traffic(router.id, "ether1", "samples", t0, t0 + HOUR_MS);
    expect(traffic.map((t) => [t.atMs - t0, t.rxBps, t.txBps])).toEqual([
      [0, 800, 400],
      [60_000, 800, 400],
    ]);
    const after = await series.interfaces(router.id);
    expect(after[0]).toMatchObject({ rxBytes: 0, rxBps: null, txBps: null });
  });

  it("refuses bad values with 422 and writes nothing; one router's bad data never touches another's series", async () => {
    const bad = await makeRouter(db, owner);
    const good = await makeRouter(db, owner);
    const t0 = nextHour();
    // Earlier tests' routers went silent: what they left closes now, before the fingerprint.
    h.clock.set(t0 + 1_000);
    await h.daemon.flush();
    const before = await databaseFingerprint(db);
    for (const fields of [
      { resources: { cpu_load: "NaN" } },
      { resources: { memory_total: -1 } },
      { resources: { disk_total: 1e30 } },
      { interfaces: [{ name: "ether\u0001", rx_bytes: 1 }] },
      { interfaces: Array.from({ length: 65 }, (_, i) => ({ name: `e${i}` })) },
      { ping: { sent: 5, received: "inf" } },
      // A ping to anything but HEALTH_PING_TARGET: not what the adoption script does.
      { ping: { target: "198.51.100.7", sent: 5, received: 5 } },
      { ping: { target: "192.0.2.1 ", sent: 5, received: 5 } },
    ]) {
      h.clock.set(t0 + 1_000);
      const answer = await post(bad.heartbeatToken, fields);
      expect(answer.status, JSON.stringify(fields)).toBe(422);
      expect(answer.body).toMatchObject({ type: "error", errors: expect.any(Object) });
    }
    await h.daemon.flush();
    expect(await databaseFingerprint(db)).toBe(before);
    // Both report in the same flushes; the bad one's counters go backwards and wrap.
    await beatAt(good.heartbeatToken, 1_000, {
      resources: { cpu_load: 5 },
      ping: { target: "192.0.2.1", sent: 5, received: 5 },
      interfaces: [{ name: "ether1", rx_bytes: 0, tx_bytes: 0 }],
    });
    await beatAt(bad.heartbeatToken, 1_000, {
      resources: { cpu_load: 99 },
      interfaces: [{ name: "ether1", rx_bytes: 2 ** 63, tx_bytes: 0 }],
    });
    await beatAt(good.heartbeatToken, 31_000, {
      resources: { cpu_load: 6 },
      interfaces: [{ name: "ether1", rx_bytes: 3_000, tx_bytes: 30 }],
    });
    await beatAt(bad.heartbeatToken, 31_000, {
      resources: { cpu_load: 98 },
      interfaces: [{ name: "ether1", rx_bytes: 0, tx_bytes: 0 }],
    });
    h.clock.set(t0 + 61_000);
    await h.daemon.flush();
    const goodTraffic = await series.traffic(good.id, "ether1", "samples", t0, t0 + HOUR_MS);
    expect(goodTraffic.map((t) => [t.rxBps, t.txBps])).toEqual([[800, 8]]);
    expect((await series.resourceSamples(good.id, t0, t0 + HOUR_MS)).map((s) => s.values.cpuLoad)).toEqual([6]);
    expect((await series.traffic(bad.id, "ether1", "samples", t0, t0 + HOUR_MS)).map((t) => t.rxBps)).toEqual([null]);
  });
});

describe("the latest values: the writer's, for the heartbeat's own liveness update", () => {
  it("returns each measure's last report, and nothing for a report out of order or without values", () => {
    const clock = new ManualClock(hourStart);
    const tracker = new HealthTracker({ sampleSeconds: 60, clock });
    const at = (offsetMs: number, report: Parameters<HealthTracker["observe"]>[2]) => {
      clock.set(hourStart + offsetMs);
      const values = tracker.observe("r1", hourStart + offsetMs, report);
      return values && { cpu: values.cpuLoad, temperature: values.temperature, loss: values.pingLossPercent };
    };
    // Never reported: NaN in the tracker's own object (the liveness write stores null).
    expect(at(1_000, { resources: { cpu_load: 10, temperature: 40 } })).toEqual({
      cpu: 10,
      temperature: 40,
      loss: Number.NaN,
    });
    // Not reported this time: kept. A ping alone is a value too.
    expect(at(20_000, { resources: { cpu_load: 11 } })).toEqual({ cpu: 11, temperature: 40, loss: Number.NaN });
    expect(at(30_000, { ping: { sent: 5, received: 5 } })).toEqual({ cpu: 11, temperature: 40, loss: 0 });
    expect(at(10_000, { resources: { cpu_load: 99 } })).toBeNull(); // out of order: changes nothing
    expect(at(40_000, { interfaces: [{ name: "ether1", rx_bytes: 1, tx_bytes: 1 }] })).toBeNull();
    expect(at(50_000, { resources: { temperature: 41 } })).toEqual({ cpu: 11, temperature: 41, loss: 0 });
  });
});
