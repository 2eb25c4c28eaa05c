import { AvailabilityRepository, queryOf } from "@fleet/db";
import { makeRouter } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { pruneDowntime } from "./prune-downtime.job.ts";

let h: ApiHarness;
const NOW = Date.UTC(2026, 10, 23, 9, 30, 0);
const clock = new ManualClock(NOW);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

beforeAll(async () => {
  h = await startApiHarness({}, { clock });
});

afterAll(async () => {
  await h?.close();
});

type Login = Awaited<ReturnType<ApiHarness["login"]>>;

const downtime = async (routerId: string, rows: Array<[string, number]>) => {
  for (const [hour, seconds] of rows) {
    await h.db.query("insert into router_downtime_hours (router_id, hour, seconds_down) values ($1, $2, $3)", [
      routerId,
      hour,
      seconds,
    ]);
  }
};

const fault = async (routerId: string, createdAt: string) => {
  await h.db.query(
    `insert into router_faults (id, router_id, type, severity, message, cause, status, created_at, resolved_at, duration_seconds)
     values (gen_random_uuid(), $1, 'site', 'error', 'Site Offline', 'Unknown', 'completed', $2, $2::timestamptz + interval '1 minute', 60)`,
    [routerId, createdAt],
  );
};

const get = async (user: Login, path: string, headers: Record<string, string> = {}) =>
  h.request("GET", path, { token: user.token, headers });

describe("GET /api/routers/{router_id}/availability", () => {
  // The reports' figures (days, months, an ongoing silence, the range's edges) are
  // AvailabilityService's rules: availability.service.test.ts. Here: statuses and bodies.
  it("refuses bad ranges with 422 naming the field, and changes nothing", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const base = `/api/routers/${router.id}/availability`;
    // The edges: 400 days (to included) is fine, 401 is not.
    const to = "2026-11-22";
    const day = (offset: number) => new Date(Date.UTC(2026, 10, 22) - offset * DAY).toISOString().slice(0, 10);
    expect((await get(user, `${base}?from=${day(399)}&to=${to}`)).status).toBe(200);
    expect((await get(user, `${base}?from=${to}&to=${to}`)).body.data).toHaveLength(1);
    const cases: Array<[string, string]> = [
      [`from=${day(400)}&to=${to}`, "to"],
      ["from=2026-11-22&to=2026-11-20", "from"],
      ["from=2026-11-22T10:00:00Z&to=2026-11-22T09:00:00Z", "from"],
      ["from=2026-02-30", "from"],
      ["from=yesterday", "from"],
      ["to=2026-13-01", "to"],
      ["to=2026-11-20T10:00", "to"],
      ["to=20261120", "to"],
      ["from=2026-11-20%00", "from"],
      ["granularity=week", "granularity"],
    ];
    for (const [query, field] of cases) {
      const res = await h.refused("GET", `${base}?${query}`, { token: user.token });
      expect(res.status, query).toBe(422);
      expect(res.body.status, query).toBe("fail");
      expect(Object.keys(res.body.data ?? {}), query).toContain(field);
    }
  });

  it("answers 404 for another team's router and a malformed id; needs routers:read", async () => {
    const a = await h.login();
    const b = await h.login();
    const router = await makeRouter(h.db, a);
    expect((await get(b, `/api/routers/${router.id}/availability`)).status).toBe(404);
    expect((await get(b, "/api/routers/not-a-router/availability")).status).toBe(404);
    const reader = await h.login(undefined, { scope: "account:read" });
    expect((await get(reader, `/api/routers/${router.id}/availability`)).status).toBe(403);
    expect((await h.request("GET", `/api/routers/${router.id}/availability`)).status).toBe(401);
  });
});

describe("GET /api/availability (the fleet report)", () => {
  it("lists every router of the team worst first, with faults in the range, as JSON and CSV", async () => {
    const user = await h.login();
    const other = await h.login();
    const worst = await makeRouter(h.db, user, { name: "worst" });
    const fine = await makeRouter(h.db, user, { name: "fine" });
    const some = await makeRouter(h.db, user, { name: '=cmd,"x"' });
    const foreign = await makeRouter(h.db, other, { name: "foreign" });
    await downtime(worst.id, [
      ["2026-11-20T10:00:00Z", 1800],
      ["2026-11-20T11:00:00Z", 3600],
    ]);
    await downtime(some.id, [["2026-11-22T00:00:00Z", 600]]);
    await downtime(foreign.id, [["2026-11-21T00:00:00Z", 3600]]);
    await fault(some.id, "2026-11-21T05:00:00Z");
    await fault(some.id, "2026-11-22T00:00:00Z");
    await fault(some.id, "2026-11-19T05:00:00Z");
    const res = await get(user, "/api/availability?from=2026-11-20&to=2026-11-22");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      status: "success",
      data: [
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
          name: '=cmd,"x"',
          minutes_down: 10,
          maintenance_minutes: 0,
          availability_percent: 99.77,
          availability_percent_including_maintenance: 99.77,
          faults: 2,
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
      ],
    });

    const expectedCsv =
      "router_id,name,minutes_down,maintenance_minutes,availability_percent,availability_percent_including_maintenance,faults\r\n" +
      `${worst.id},worst,90,0,97.92,97.92,0\r\n` +
      `${some.id},"'=cmd,""x""",10,0,99.77,99.77,2\r\n` +
      `${fine.id},fine,0,0,100,100,0\r\n`;
    const byAccept = await get(user, "/api/availability?from=2026-11-20&to=2026-11-22", { accept: "text/csv" });
    expect(byAccept.status).toBe(200);
    expect(byAccept.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(byAccept.body).toBe(expectedCsv);
    const byQuery = await get(user, "/api/availability?from=2026-11-20&to=2026-11-22&format=csv");
    expect(byQuery.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(byQuery.body).toBe(expectedCsv);
    // Errors stay JSON whatever was asked for.
    const bad = await get(user, "/api/availability?from=2026-11-22&to=2026-11-20", { accept: "text/csv" });
    expect(bad.status).toBe(422);
    expect(bad.body.data).toHaveProperty("from");
  });

  it("an empty team answers a header line only; bad ranges and formats are 422", async () => {
    const user = await h.login();
    expect((await get(user, "/api/availability")).body).toEqual({ status: "success", data: [] });
    expect((await get(user, "/api/availability?format=csv")).body).toBe(
      "router_id,name,minutes_down,maintenance_minutes,availability_percent,availability_percent_including_maintenance,faults\r\n",
    );
    for (const [query, field] of [
      ["format=xml", "format"],
      ["from=2025-01-01&to=2026-11-22", "to"],
      ["from=2026-11-30&to=2026-11-01", "from"],
      ["from=2026-11-20T25:00:00Z", "from"],
    ] as const) {
      const res = await h.refused("GET", `/api/availability?${query}`, { token: user.token });
      expect(res.status, query).toBe(422);
      expect(res.body.data, query).toHaveProperty(field);
    }
  });
});

describe("tRPC availability.router and availability.fleet", () => {
  it("answer the REST bodies", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user, { name: "t" });
    await downtime(router.id, [["2026-11-21T03:00:00Z", 60]]);
    const client = createClient({ url: h.api.url, token: user.token });
    const rows = await client.availability.router.query({ router_id: router.id, from: "2026-11-21", to: "2026-11-21" });
    expect(rows.data).toEqual([
      {
        period_start: "2026-11-21T00:00:00+00:00",
        minutes_down: 1,
        maintenance_minutes: 0,
        availability_percent: 99.93,
        availability_percent_including_maintenance: 99.93,
      },
    ]);
    const fleet = await client.availability.fleet.query({ from: "2026-11-21", to: "2026-11-21" });
    expect(fleet.data).toEqual([
      {
        router_id: router.id,
        name: "t",
        minutes_down: 1,
        maintenance_minutes: 0,
        availability_percent: 99.93,
        availability_percent_including_maintenance: 99.93,
        faults: 0,
      },
    ]);
    await expect(client.availability.fleet.query({ from: "2026-11-22", to: "2026-11-21" })).rejects.toMatchObject({
      data: { httpStatus: 422 },
    });
  });
});

describe("retention (METRICS_RETENTION_DAYS)", () => {
  it("the prune job deletes hours older than the retention, in batches, and keeps the rest", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const at = (days: number, hours = 0) => new Date(NOW - days * DAY - hours * HOUR).toISOString();
    await downtime(router.id, [
      [at(401), 60],
      [at(401, 1), 60],
      [at(401, 2), 60],
      [at(400, 1), 60],
      [at(399), 60],
    ]);
    const repo = new AvailabilityRepository(queryOf(h.db));
    const removed = await pruneDowntime({
      downtime: { prune: (before) => repo.prune(before, 2) },
      clock,
      retentionDays: 400,
      logger: pino({ level: "silent" }),
    });
    expect(removed).toBe(4);
    const left = await h.db.query<{ n: number }>(
      "select count(*)::int as n from router_downtime_hours where router_id = $1",
      [router.id],
    );
    expect(left[0]?.n).toBe(1);
  });

  it("is configurable and checked at start-up", async () => {
    const { loadApiConfig } = await import("../../config.ts");
    expect(loadApiConfig({}).events.metricsRetentionDays).toBe(400);
    expect(loadApiConfig({ METRICS_RETENTION_DAYS: "30" }).events.metricsRetentionDays).toBe(30);
    expect(() => loadApiConfig({ METRICS_RETENTION_DAYS: "0" })).toThrow(/METRICS_RETENTION_DAYS/);
  });
});

describe("the report SQL is index-backed", () => {
  it("reads the team's routers and each router's own slice of downtime and faults, never a whole table", async () => {
    const user = await h.login();
    const others = await Promise.all([1, 2].map(() => h.login()));
    const seedTeam = async (owner: Login, routers: number, hours: number) => {
      await h.db.query(
        `with r as (
           insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
           select gen_random_uuid(), $1, $2, 'bulk-' || i, md5(random()::text || i), now() from generate_series(1, $3) as i
           returning id
         ), d as (
           insert into router_downtime_hours (router_id, hour, seconds_down)
           select r.id, to_timestamp($5::float8 / 1000.0) - make_interval(hours => h), 60
           from r, generate_series(1, $4) as h returning 1
         )
         insert into router_faults (id, router_id, type, severity, message, cause, status, created_at, resolved_at, duration_seconds)
         select gen_random_uuid(), r.id, 'site', 'error', 'Site Offline', 'Unknown', 'completed',
           to_timestamp($5::float8 / 1000.0) - interval '1 day', to_timestamp($5::float8 / 1000.0), 60 from r`,
        [owner.organizationId, owner.teamId, routers, hours, NOW],
      );
    };
    await seedTeam(user, 40, 100);
    for (const other of others) await seedTeam(other, 500, 100);
    await h.db.query("analyze routers");
    await h.db.query("vacuum analyze router_downtime_hours");
    await h.db.query("analyze router_faults");
    const repo = new AvailabilityRepository(queryOf(h.db));
    const router = await makeRouter(h.db, user);
    const plans = await repo.explain(user.teamId, router.id, new Date(NOW - 400 * DAY), new Date(NOW));
    const indexScan = (index: string) =>
      new RegExp(`(Index Scan using|Index Only Scan using|Bitmap Index Scan on) ${index}`);
    expect(plans.fleet).toMatch(indexScan("router_downtime_hours_(pkey|router_hour_covering)"));
    expect(plans.fleet).toMatch(indexScan("router_faults_router_id_created_at_index"));
    // The team's routers through the index that leads with team_id (migration 070).
    expect(plans.fleet).toMatch(/routers_team_name_id_index/);
    expect(plans.fleet).not.toMatch(/Seq Scan|Sort/);
    expect(plans.router).toMatch(indexScan("router_downtime_hours_(pkey|router_hour_covering)"));
    expect(plans.router).not.toMatch(/Seq Scan|Sort/);
    // The whole-year report of the team answers from the same query.
    const report = await get(user, `/api/availability?from=${new Date(NOW - 399 * DAY).toISOString().slice(0, 10)}`);
    expect(report.status).toBe(200);
    expect(report.body.data).toHaveLength(41);
    expect(report.body.data[0]).toMatchObject({ minutes_down: 100, faults: 1 });
  });
});
