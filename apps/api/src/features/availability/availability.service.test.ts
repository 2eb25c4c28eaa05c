import { AvailabilityRepository, MaintenanceWindowsRepository, queryOf, RoutersRepository } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { AvailabilityService } from "./availability.service.ts";

// The service tier (docs/contributing.md "Add a test"): availability reports on a real database
// with the real repositories; time is a ManualClock. The HTTP test keeps statuses, CSV and tRPC.

let db: TestDatabase;
const NOW = Date.UTC(2026, 10, 23, 9, 30, 0);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
let service: AvailabilityService;

beforeAll(async () => {
  db = await createTestDatabase();
  service = new AvailabilityService({
    availability: new AvailabilityRepository(queryOf(db)),
    routers: new RoutersRepository(db),
    clock: new ManualClock(NOW),
    maintenanceWindows: (organizationId) => new MaintenanceWindowsRepository(queryOf(db)).listFor([organizationId]),
  });
});
afterAll(async () => {
  await db?.close();
});

/** Downtime as the heartbeat daemon stores it: seconds per UTC hour. */
const downtime = async (routerId: string, rows: Array<[string, number]>) => {
  for (const [hour, seconds] of rows) {
    await db.query("insert into router_downtime_hours (router_id, hour, seconds_down) values ($1, $2, $3)", [
      routerId,
      hour,
      seconds,
    ]);
  }
};

const fault = async (routerId: string, createdAt: string) => {
  await db.query(
    `insert into router_faults (id, router_id, type, severity, message, cause, status, created_at, resolved_at, duration_seconds)
     values (gen_random_uuid(), $1, 'site', 'error', 'Site Offline', 'Unknown', 'completed', $2, $2::timestamptz + interval '1 minute', 60)`,
    [routerId, createdAt],
  );
};

describe("maintenance windows in availability (service tier)", () => {
  it("counts maintenance apart: maintenance_minutes, availability without it and with it", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    const other = await makeRouter(db, owner, { name: "zz untouched" });
    // Down 02:00-04:00 on 20 November; a weekly Friday window 02:00-05:00 UTC covers the first router only.
    await downtime(router.id, [
      ["2026-11-20T02:00:00Z", 3600],
      ["2026-11-20T03:00:00Z", 3600],
      ["2026-11-21T10:00:00Z", 720],
    ]);
    await new MaintenanceWindowsRepository(queryOf(db)).insert({
      organizationId: owner.organizationId,
      teamId: null,
      name: "fridays",
      routers: { router_ids: [router.id] },
      startsAt: null,
      endsAt: null,
      weekly: { timezone: "UTC", days: ["fri"], from: "02:00", duration_minutes: 180 },
      createdAt: new Date(NOW),
    });
    const days = await service.router(owner.teamId, { router_id: router.id, from: "2026-11-20", to: "2026-11-21" });
    expect(days).toEqual([
      {
        period_start: "2026-11-20T00:00:00+00:00",
        minutes_down: 120,
        maintenance_minutes: 180,
        availability_percent: 100,
        availability_percent_including_maintenance: 91.67,
      },
      {
        period_start: "2026-11-21T00:00:00+00:00",
        minutes_down: 12,
        maintenance_minutes: 0,
        availability_percent: 99.17,
        availability_percent_including_maintenance: 99.17,
      },
    ]);
    const fleet = await service.fleet(owner.teamId, { from: "2026-11-20", to: "2026-11-21" });
    const mine = fleet.find((r) => r.router_id === router.id);
    expect(mine).toMatchObject({
      minutes_down: 132,
      maintenance_minutes: 180,
      availability_percent_including_maintenance: 95.42,
      // 12 minutes down out of 2880 - 180.
      availability_percent: 99.56,
    });
    expect(fleet.find((r) => r.router_id === other.id)).toMatchObject({
      maintenance_minutes: 0,
      availability_percent: 100,
    });
  });
});

describe("AvailabilityService.router (service tier)", () => {
  it("answers one row per UTC day, stored downtime summed, hours outside the range left out", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    await downtime(router.id, [
      ["2026-11-20T10:00:00Z", 1800],
      ["2026-11-20T11:00:00Z", 3600],
      ["2026-11-22T00:00:00Z", 600],
      ["2026-11-19T23:00:00Z", 3600],
      ["2026-11-23T00:00:00Z", 3600],
    ]);
    expect(await service.router(owner.teamId, { router_id: router.id, from: "2026-11-20", to: "2026-11-22" })).toEqual([
      {
        period_start: "2026-11-20T00:00:00+00:00",
        minutes_down: 90,
        maintenance_minutes: 0,
        availability_percent: 93.75,
        availability_percent_including_maintenance: 93.75,
      },
      {
        period_start: "2026-11-21T00:00:00+00:00",
        minutes_down: 0,
        maintenance_minutes: 0,
        availability_percent: 100,
        availability_percent_including_maintenance: 100,
      },
      {
        period_start: "2026-11-22T00:00:00+00:00",
        minutes_down: 10,
        maintenance_minutes: 0,
        availability_percent: 99.31,
        availability_percent_including_maintenance: 99.31,
      },
    ]);
  });

  it("answers UTC months, the current one measured up to now", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    await downtime(router.id, [
      ["2026-10-31T23:00:00Z", 1200],
      ["2026-11-20T10:00:00Z", 3600],
      ["2026-11-22T00:00:00Z", 2400],
    ]);
    const months = await service.router(owner.teamId, {
      router_id: router.id,
      from: "2026-10-01",
      to: "2026-11-30",
      granularity: "month",
    });
    const octoberSeconds = 31 * 86_400;
    const novemberSoFar = (NOW - Date.UTC(2026, 10, 1)) / 1000;
    expect(months).toEqual([
      {
        period_start: "2026-10-01T00:00:00+00:00",
        minutes_down: 20,
        maintenance_minutes: 0,
        availability_percent: Math.round((100 - (1200 / octoberSeconds) * 100) * 100) / 100,
        availability_percent_including_maintenance: Math.round((100 - (1200 / octoberSeconds) * 100) * 100) / 100,
      },
      {
        period_start: "2026-11-01T00:00:00+00:00",
        minutes_down: 100,
        maintenance_minutes: 0,
        availability_percent: Math.round((100 - (6000 / novemberSoFar) * 100) * 100) / 100,
        availability_percent_including_maintenance: Math.round((100 - (6000 / novemberSoFar) * 100) * 100) / 100,
      },
    ]);
  });

  it("counts a silence still going on up to now, in the router's report and the fleet's", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner, { hasPulse: false });
    await db.query("update router_liveness set last_seen_at = $2 where router_id = $1", [
      router.id,
      new Date(NOW - 2 * HOUR),
    ]);
    await db.query(
      `insert into heartbeat_coverage (id, covered_since, alive_at, outage_started_at, interval_ms)
       values (1, $1, $2, null, 30000)
       on conflict (id) do update set covered_since = excluded.covered_since, alive_at = excluded.alive_at,
         outage_started_at = null, interval_ms = 30000`,
      [new Date(NOW - 10 * DAY), new Date(NOW)],
    );
    try {
      // Down from the first missed heartbeat (last seen + 30 s) until now.
      const downMinutes = (2 * HOUR - 30_000) / 60_000;
      expect(
        await service.router(owner.teamId, { router_id: router.id, from: "2026-11-23", to: "2026-11-23" }),
      ).toEqual([
        {
          period_start: "2026-11-23T00:00:00+00:00",
          minutes_down: downMinutes,
          maintenance_minutes: 0,
          availability_percent: Math.round((100 - (downMinutes / (9.5 * 60)) * 100) * 100) / 100,
          availability_percent_including_maintenance: Math.round((100 - (downMinutes / (9.5 * 60)) * 100) * 100) / 100,
        },
      ]);
      const fleet = await service.fleet(owner.teamId, { from: "2026-11-23", to: "2026-11-23" });
      expect(fleet[0]).toMatchObject({ router_id: router.id, minutes_down: downMinutes });
    } finally {
      await db.query("delete from heartbeat_coverage");
    }
  });

  it("takes a range of 400 days (n) and refuses 401 (n+1) naming `to`, before looking the router up, changing nothing", async () => {
    const owner = await makeUser(db);
    const stranger = await makeUser(db);
    const router = await makeRouter(db, owner);
    const to = "2026-11-22";
    const day = (offset: number) => new Date(Date.UTC(2026, 10, 22) - offset * DAY).toISOString().slice(0, 10);
    expect(await service.router(owner.teamId, { router_id: router.id, from: day(399), to })).toHaveLength(400);
    const before = await databaseFingerprint(db);
    for (const teamId of [owner.teamId, stranger.teamId]) {
      const tooLong = await rejection(service.router(teamId, { router_id: router.id, from: day(400), to }));
      expect(tooLong).toMatchObject({ code: "validation_failed", fields: { to: [expect.any(String)] } });
    }
    const backwards = await rejection(service.fleet(owner.teamId, { from: to, to: day(2) }));
    expect(backwards).toMatchObject({ code: "validation_failed", fields: { from: [expect.any(String)] } });
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("answers not_found for another team's router, an unknown and a malformed id", async () => {
    const owner = await makeUser(db);
    const stranger = await makeUser(db);
    const router = await makeRouter(db, owner);
    for (const [teamId, routerId] of [
      [stranger.teamId, router.id],
      [owner.teamId, crypto.randomUUID()],
      [owner.teamId, "not-a-router"],
    ] as const) {
      expect((await rejection(service.router(teamId, { router_id: routerId }))).code).toBe("not_found");
    }
  });
});

describe("AvailabilityService.fleet (service tier)", () => {
  it("lists every router of the team worst first (then by name), with the faults in the range, and no other team's", async () => {
    const owner = await makeUser(db);
    const other = await makeUser(db);
    const worst = await makeRouter(db, owner, { name: "worst" });
    const fine = await makeRouter(db, owner, { name: "fine" });
    const alsoFine = await makeRouter(db, owner, { name: "also fine" });
    const some = await makeRouter(db, owner, { name: "some" });
    const foreign = await makeRouter(db, other, { name: "foreign" });
    await downtime(worst.id, [
      ["2026-11-20T10:00:00Z", 1800],
      ["2026-11-20T11:00:00Z", 3600],
    ]);
    await downtime(some.id, [["2026-11-22T00:00:00Z", 600]]);
    await downtime(foreign.id, [["2026-11-21T00:00:00Z", 3600]]);
    await fault(some.id, "2026-11-21T05:00:00Z");
    await fault(some.id, "2026-11-22T00:00:00Z");
    await fault(some.id, "2026-11-19T05:00:00Z");
    expect(await service.fleet(owner.teamId, { from: "2026-11-20", to: "2026-11-22" })).toEqual([
      {
        router_id: worst.id,
        name: "worst",
        minutes_down: 90,
        maintenance_minutes: 0,
        availability_percent: 97.92,
        availability_percent_including_maintenance: 97.92,
        faults: 0,
      },
      {
        router_id: some.id,
        name: "some",
        minutes_down: 10,
        maintenance_minutes: 0,
        availability_percent: 99.77,
        availability_percent_including_maintenance: 99.77,
        faults: 2,
      },
      {
        router_id: alsoFine.id,
        name: "also fine",
        minutes_down: 0,
        maintenance_minutes: 0,
        availability_percent: 100,
        availability_percent_including_maintenance: 100,
        faults: 0,
      },
      {
        router_id: fine.id,
        name: "fine",
        minutes_down: 0,
        maintenance_minutes: 0,
        availability_percent: 100,
        availability_percent_including_maintenance: 100,
        faults: 0,
      },
    ]);
    expect(await service.fleet((await makeUser(db)).teamId, {})).toEqual([]);
  });
});
