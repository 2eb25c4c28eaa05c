import { HealthSeriesRepository, queryOf, RoutersRepository } from "@fleet/db";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { HEALTH_INTERFACE_NAME_MAX, HEALTH_SERIES_LIMITS, ManualClock } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { RouterHealthService } from "./router-health.service.ts";

// The service tier (docs/contributing.md "Add a test"): the health reads' ranges, names and scoping
// on a real database, against hostile query values (issue 38).

let db: TestDatabase;
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const clock = new ManualClock(NOW);
let service: RouterHealthService;

beforeAll(async () => {
  db = await createTestDatabase();
  service = new RouterHealthService({
    series: new HealthSeriesRepository(db),
    routers: new RoutersRepository(db),
    clock,
  });
});
afterAll(async () => {
  await db?.close();
});

const sample = (routerId: string, atMs: number) => ({
  routerId,
  atMs,
  values: {
    cpuLoad: 10,
    memoryUsedPercent: 50,
    diskUsedPercent: 25,
    temperature: 40,
    voltage: 24,
    pingLossPercent: 0,
    pingRttMs: 1,
  },
});

const fieldOf = async (promise: Promise<unknown>) => {
  const error = await rejection(promise);
  return [error.code, Object.keys(error.fields ?? {})];
};

describe("health reads: hostile ranges (service tier)", () => {
  it("refuses garbage, impossible calendar dates and reversed or empty ranges, naming the field", async () => {
    const user = await makeUser(db);
    const router = await makeRouter(db, user);
    const read = (query: Record<string, string>) => service.resources(user.teamId, { router_id: router.id, ...query });
    for (const [query, field] of [
      [{ from: "2026-02-30" }, "from"],
      [{ from: "2026-02-29T00:00:00Z" }, "from"], // 2026 is not a leap year
      [{ to: "2026-04-31T00:00:00Z" }, "to"],
      [{ to: "2026-11-30T24:00:00Z" }, "to"],
      [{ to: "2026-11-30T12:60:00Z" }, "to"],
      [{ to: "2026-11-30T12:00:61Z" }, "to"],
      [{ from: "2026-11-30T12:00:00+24:00" }, "from"],
      [{ from: "2026-11-30T1:2:3Z" }, "from"],
      [{ from: "0x7E9" }, "from"],
      [{ from: "1e12" }, "from"],
      [{ from: "-2026-11-30" }, "from"],
      [{ from: "+275760-09-13T00:00:00Z" }, "from"],
      [{ from: " 2026-11-30" }, "from"],
      [{ from: "" }, "from"],
      [{ from: "2026-11-30T12:00:00Z", to: "2026-11-30T12:00:00Z" }, "from"],
      [{ from: "2026-11-30T12:00:00Z", to: "2026-11-30T11:59:59Z" }, "from"],
    ] as Array<[Record<string, string>, string]>) {
      expect(await fieldOf(read(query)), JSON.stringify(query)).toEqual(["validation_failed", [field]]);
    }
  });

  it("reads a bound without a zone as UTC, whatever the server's zone", async () => {
    const user = await makeUser(db);
    const router = await makeRouter(db, user);
    await new HealthSeriesRepository(db).append(queryOf(db), {
      resourceSamples: [sample(router.id, NOW - 30 * 60_000)],
      resourceHours: [],
      trafficSamples: [],
      trafficHours: [],
    });
    const read = (from: string, to: string) => service.resources(user.teamId, { router_id: router.id, from, to });
    expect(await read("2026-11-30T11:29:00", "2026-11-30T11:31:00")).toHaveLength(1);
    expect(await read("2026-11-30 11:29", "2026-11-30 11:31")).toHaveLength(1);
    expect(await read("2026-11-30T11:31:00", "2026-11-30T12:00:00")).toHaveLength(0);
    expect(await read("2026-11-30T12:29:00+01:00", "2026-11-30T12:31:00+0100")).toHaveLength(1);
  });

  it("caps a span at maxPoints steps: n answers, n + 1 ms more is refused, at both steps", async () => {
    const user = await makeUser(db);
    const router = await makeRouter(db, user);
    for (const step of ["5m", "1h"] as const) {
      const span = HEALTH_SERIES_LIMITS.maxPoints * HEALTH_SERIES_LIMITS.stepMs[step];
      const to = new Date(NOW).toISOString();
      const at = (ms: number) => new Date(NOW - ms).toISOString();
      expect(await service.resources(user.teamId, { router_id: router.id, step, from: at(span), to })).toEqual([]);
      expect(await service.traffic(user.teamId, { router_id: router.id, name: "e", step, from: at(span), to })).toEqual(
        [],
      );
      const over = { router_id: router.id, step, from: at(span + 1), to };
      expect(await fieldOf(service.resources(user.teamId, over))).toEqual(["validation_failed", ["to"]]);
      expect(await fieldOf(service.traffic(user.teamId, { ...over, name: "e" }))).toEqual([
        "validation_failed",
        ["to"],
      ]);
      // The widest calendar span is refused the same way, not computed.
      const huge = { router_id: router.id, step, from: "0001-01-01T00:00:00Z", to: "9999-12-31T23:59:59Z" };
      expect(await fieldOf(service.resources(user.teamId, huge))).toEqual(["validation_failed", ["to"]]);
    }
  });

  it("another organization's router, or a garbage id, is 404 on every read; names reach only their own series", async () => {
    const user = await makeUser(db);
    const stranger = await makeUser(db);
    const router = await makeRouter(db, user);
    for (const routerId of [router.id, "not-a-uuid", "00000000-0000-0000-0000-000000000000", "' or 1=1 --"]) {
      const teamId = routerId === router.id ? stranger.teamId : user.teamId;
      expect((await rejection(service.resources(teamId, { router_id: routerId }))).code).toBe("not_found");
      expect((await rejection(service.interfaces(teamId, routerId))).code).toBe("not_found");
      expect((await rejection(service.traffic(teamId, { router_id: routerId, name: "ether1" }))).code).toBe(
        "not_found",
      );
    }
    const names = ["ether1", "ether1%", "ether_", "x".repeat(HEALTH_INTERFACE_NAME_MAX)];
    await new HealthSeriesRepository(db).append(queryOf(db), {
      resourceSamples: [],
      resourceHours: [],
      trafficSamples: names.map((name, i) => ({
        routerId: router.id,
        name,
        atMs: NOW - (i + 1) * 60_000,
        rxBps: i,
        txBps: i,
        rxErrors: 0,
        txErrors: 0,
      })),
      trafficHours: [],
    });
    for (const [i, name] of names.entries()) {
      const points = await service.traffic(user.teamId, { router_id: router.id, name });
      expect(
        points.map((p) => p.rx_bps),
        name,
      ).toEqual([i]);
    }
    expect(await service.traffic(user.teamId, { router_id: router.id, name: "ether" })).toEqual([]);
    for (const name of ["x".repeat(HEALTH_INTERFACE_NAME_MAX + 1), "", "ether\u0000", "ether\u007f", "\ud800"]) {
      expect(await fieldOf(service.traffic(user.teamId, { router_id: router.id, name })), name).toEqual([
        "validation_failed",
        ["name"],
      ]);
    }
  });
});
