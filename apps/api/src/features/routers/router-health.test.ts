import { type HealthValues, HealthSeriesRepository, HeartbeatsRepository, queryOf } from "@fleet/db";
import { makeRouter } from "@fleet/db/testing";
import { HEALTH_SERIES_LIMITS, hashHeartbeatToken, ManualClock } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

let h: ApiHarness;
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
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
const get = (user: Login, path: string) => h.request("GET", path, { token: user.token });

const values = (cpu: number | null, extra: Partial<Record<string, number | null>> = {}) => ({
  cpuLoad: cpu,
  memoryUsedPercent: 50,
  diskUsedPercent: 25,
  temperature: 40,
  voltage: 24,
  pingLossPercent: 0,
  pingRttMs: 1.5,
  ...extra,
});

/** Routers' latest values, written by the heartbeat flush as the daemon writes them. */
const report = (beats: Array<[{ id: string; heartbeatToken: string }, HealthValues]>) =>
  new HeartbeatsRepository(h.db).applyHeartbeats(
    beats.map(([router, reported]) => ({
      routerId: router.id,
      tokenHash: hashHeartbeatToken(router.heartbeatToken),
      seenAt: new Date(NOW),
      peer: null,
      health: { atMs: NOW, values: reported },
    })),
    60_000,
  );

const seed = async (routerId: string) => {
  const series = new HealthSeriesRepository(h.db);
  const q = queryOf(h.db);
  await series.append(q, {
    resourceSamples: [
      { routerId, atMs: NOW - 10 * 60_000, values: values(10) },
      { routerId, atMs: NOW - 5 * 60_000, values: values(20) },
    ],
    resourceHours: [
      { routerId, atMs: NOW - 2 * HOUR, min: values(5), avg: values(15), max: values(25) },
      { routerId, atMs: NOW - 400 * DAY + HOUR, min: values(1), avg: values(2), max: values(3) },
    ],
    trafficSamples: [
      { routerId, name: "ether1", atMs: NOW - 5 * 60_000, rxBps: 8_000, txBps: 800, rxErrors: 1, txErrors: 0 },
      { routerId, name: "ether1", atMs: NOW - 10 * 60_000, rxBps: null, txBps: null, rxErrors: 0, txErrors: 0 },
    ],
    trafficHours: [{ routerId, name: "ether1", atMs: NOW - HOUR, rxBps: 4_000, txBps: 400, rxErrors: 3, txErrors: 1 }],
  });
  await HealthSeriesRepository.upsertInterfaces(q, [
    {
      routerId,
      name: "ether1",
      reportedAt: new Date(NOW - 30_000),
      running: true,
      rxBytes: 1e9,
      txBytes: 2e9,
      rxErrors: 1,
      txErrors: 0,
      rxBps: 8_000,
      txBps: 800,
    },
  ]);
};

describe('health reads (docs/api.md "Health")', () => {
  it("answers the resource series at 5m and 1h, the interfaces and an interface's traffic, in JSend", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    await seed(router.id);
    const five = await get(user, `/api/routers/${router.id}/resources?step=5m`);
    expect(five.status).toBe(200);
    expect(five.body).toEqual({
      status: "success",
      data: [
        {
          at: "2026-11-30T11:50:00+00:00",
          cpu_load: 10,
          memory_used_percent: 50,
          disk_used_percent: 25,
          temperature: 40,
          voltage: 24,
          ping_loss_percent: 0,
          ping_rtt_ms: 1.5,
        },
        expect.objectContaining({ at: "2026-11-30T11:55:00+00:00", cpu_load: 20 }),
      ],
    });
    const hourly = await get(user, `/api/routers/${router.id}/resources?step=1h&from=2026-11-30T00:00:00Z`);
    expect(hourly.body.data).toEqual([
      expect.objectContaining({ at: "2026-11-30T10:00:00+00:00", cpu_load: 15, min_cpu_load: 5, max_cpu_load: 25 }),
    ]);
    // 400 days of hours in one answer.
    const long = await get(
      user,
      `/api/routers/${router.id}/resources?step=1h&from=${new Date(NOW - 400 * DAY).toISOString()}&to=${new Date(NOW).toISOString()}`,
    );
    expect(long.status).toBe(200);
    expect(long.body.data).toHaveLength(2);
    expect((await get(user, `/api/routers/${router.id}/interfaces`)).body).toEqual({
      status: "success",
      data: [
        {
          name: "ether1",
          running: true,
          rx_bytes: 1e9,
          tx_bytes: 2e9,
          rx_errors: 1,
          tx_errors: 0,
          rx_bps: 8_000,
          tx_bps: 800,
          reported_at: "2026-11-30T11:59:30+00:00",
        },
      ],
    });
    const traffic = await get(user, `/api/routers/${router.id}/interfaces/ether1/traffic`);
    expect(traffic.body).toEqual({
      status: "success",
      data: [
        { at: "2026-11-30T11:50:00+00:00", rx_bps: null, tx_bps: null, rx_errors: 0, tx_errors: 0 },
        { at: "2026-11-30T11:55:00+00:00", rx_bps: 8_000, tx_bps: 800, rx_errors: 1, tx_errors: 0 },
      ],
    });
    expect((await get(user, `/api/routers/${router.id}/interfaces/ether1/traffic?step=1h`)).body.data).toEqual([
      { at: "2026-11-30T11:00:00+00:00", rx_bps: 4_000, tx_bps: 400, rx_errors: 3, tx_errors: 1 },
    ]);
    expect((await get(user, `/api/routers/${router.id}/interfaces/ether9/traffic`)).body.data).toEqual([]);
    // tRPC mirrors.
    const client = createClient({ url: h.api.url, token: user.token });
    expect((await client.routers.interfaces.query({ router_id: router.id })).data).toHaveLength(1);
    expect((await client.routers.resources.query({ router_id: router.id, step: "5m" })).data).toHaveLength(2);
    expect((await client.routers.traffic.query({ router_id: router.id, name: "ether1" })).data).toHaveLength(2);
  });

  it("refuses bad ranges and steps with 422 naming the field (10,000 steps at most); another team's router is 404", async () => {
    const user = await h.login();
    const other = await h.login();
    const router = await makeRouter(h.db, user);
    const base = `/api/routers/${router.id}/resources`;
    const from = (steps: number, stepMs: number) => new Date(NOW - steps * stepMs).toISOString();
    const max = HEALTH_SERIES_LIMITS.maxPoints;
    const to = new Date(NOW).toISOString();
    expect((await get(user, `${base}?step=1h&from=${from(max, HOUR)}&to=${to}`)).status).toBe(200);
    expect((await get(user, `${base}?step=5m&from=${from(max, 300_000)}&to=${to}`)).status).toBe(200);
    const cases: Array<[string, string]> = [
      [`step=1h&from=${from(max + 1, HOUR)}&to=${to}`, "to"],
      [`step=5m&from=${from(max + 1, 300_000)}&to=${to}`, "to"],
      ["step=1m", "step"],
      ["from=yesterday", "from"],
      ["to=2026-13-01T00:00:00Z", "to"],
      ["from=2026-11-30T12:00:00Z&to=2026-11-30T11:00:00Z", "from"],
      ["from=2026-11-30%00", "from"],
      ["from=2026-11-29&from=2026-11-30", "from"],
      ["step=5m&step=1h", "step"],
      ["from=2026-02-30", "from"],
    ];
    for (const [query, field] of cases) {
      for (const path of [base, `/api/routers/${router.id}/interfaces/ether1/traffic`]) {
        const res = await h.refused("GET", `${path}?${query}`, { token: user.token });
        expect(res.status, query).toBe(422);
        expect(res.body.status, query).toBe("fail");
        expect(Object.keys(res.body.data ?? {}), query).toContain(field);
      }
    }
    for (const path of ["resources", "interfaces", "interfaces/ether1/traffic"]) {
      expect((await get(other, `/api/routers/${router.id}/${path}`)).status, path).toBe(404);
      expect((await get(user, `/api/routers/not-a-router/${path}`)).status, path).toBe(404);
    }
    const reader = await h.login(undefined, { scope: "account:read" });
    expect((await get(reader, `${base}`)).status).toBe(403);
  });

  it("lists routers with their latest cpu, memory and temperature, sorted worst first with a correct cursor", async () => {
    const user = await h.login();
    const a = await makeRouter(h.db, user, { name: "a" });
    const b = await makeRouter(h.db, user, { name: "b" });
    const c = await makeRouter(h.db, user, { name: "c" });
    const d = await makeRouter(h.db, user, { name: "d" });
    const never = await makeRouter(h.db, user, { name: "never" });
    await report([
      [a, values(12.5, { memoryUsedPercent: 66.7, temperature: -5 })],
      [b, values(95, { memoryUsedPercent: 10, temperature: 70 })],
      [c, values(12.5, { memoryUsedPercent: 40, temperature: null })],
      [d, values(null, { memoryUsedPercent: null, temperature: 47.3 })],
    ]);
    const all = await get(user, "/api/routers?sort=cpu");
    expect(all.status).toBe(200);
    const ids = (body: { data: Array<{ id: string }> }) => body.data.map((r) => r.id);
    const ties = [a.id, c.id].sort().reverse(); // equal values: by id, descending
    expect(ids(all.body)).toEqual([b.id, ...ties, ...[d.id, never.id].sort().reverse()]);
    expect(all.body.data[0]).toMatchObject({ cpu_load: 95, memory_used_percent: 10, temperature: 70 });
    // As reported (stored as real: never 66.69999694824219).
    const byId = (id: string) => all.body.data.find((r: { id: string }) => r.id === id);
    expect([byId(a.id).memory_used_percent, byId(d.id).temperature]).toEqual([66.7, 47.3]);
    expect(all.body.data.find((r: { id: string }) => r.id === never.id)).toMatchObject({
      cpu_load: null,
      memory_used_percent: null,
      temperature: null,
    });
    // Page by page, the same order, every router once.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await get(user, `/api/routers?sort=cpu&limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      paged.push(...ids(page.body));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(paged).toEqual(ids(all.body));
    const temps = await get(user, "/api/routers?sort=temperature");
    expect(ids(temps.body).slice(0, 3)).toEqual([b.id, d.id, a.id]);
    expect(ids((await get(user, "/api/routers?sort=memory")).body)[0]).toBe(a.id);
    // A cursor of one sort is refused by another; a bad sort is 422.
    const first = await get(user, "/api/routers?sort=cpu&limit=1");
    expect((await get(user, `/api/routers?sort=memory&limit=1&cursor=${first.body.next_cursor}`)).status).toBe(422);
    expect((await get(user, "/api/routers?sort=load")).status).toBe(422);
    expect((await get(user, `/api/routers/${b.id}`)).body.data).toMatchObject({ cpu_load: 95 });
  });
});

describe("health reads under attack (issue 38)", () => {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

  it("refuses crafted or foreign cursors on the health sorts with 422, never 500 or another team's rows", async () => {
    const user = await h.login();
    const other = await h.login();
    const mine = await makeRouter(h.db, user, { name: "mine" });
    const theirs = await makeRouter(h.db, other, { name: "theirs" });
    await report([
      [mine, values(50)],
      [theirs, values(40)],
    ]);
    const byName = await get(user, "/api/routers?sort=name&limit=1");
    const byLastSeen = await get(user, "/api/routers?sort=last_seen&limit=1");
    const crafted = [
      byName.body.next_cursor ?? b64(["name", "mine", mine.id]),
      byLastSeen.body.next_cursor ?? b64(["last_seen", null, mine.id]),
      b64(["cpu", "1e-400", mine.id]),
      b64(["cpu", "-1e-400", mine.id]),
      b64(["cpu", "1e309", mine.id]),
      b64(["cpu", "1.7976931348623159e308", mine.id]),
      b64(["cpu", "NaN", mine.id]),
      b64(["cpu", "Infinity", mine.id]),
      b64(["cpu", "0x10", mine.id]),
      b64(["cpu", " 5", mine.id]),
      b64(["cpu", "", mine.id]),
      b64(["cpu", 50, mine.id]),
      b64(["cpu", "50", "not-a-uuid"]),
      b64(["cpu", "50", mine.id, "extra"]),
      b64({ sort: "cpu", value: "50", id: mine.id }),
      b64(["cpu", "5'; drop table routers; --", mine.id]),
      "%%%",
      "a".repeat(5000),
    ];
    for (const cursor of crafted) {
      const res = await h.refused("GET", `/api/routers?sort=cpu&limit=1&cursor=${encodeURIComponent(cursor)}`, {
        token: user.token,
      });
      expect(res.status, cursor.slice(0, 60)).toBe(422);
      expect(Object.keys(res.body.data ?? {}), cursor.slice(0, 60)).toEqual(["cursor"]);
    }
    // A well-formed cursor naming another team's router answers only this team's rows.
    for (const value of ["100", "1e-300", "-0", null]) {
      const res = await get(user, `/api/routers?sort=cpu&limit=5&cursor=${b64(["cpu", value, theirs.id])}`);
      expect(res.status, String(value)).toBe(200);
      for (const router of res.body.data) expect(router.id).not.toBe(theirs.id);
    }
  });

  it("interface names in the path: slashes, dot-dot, percent-encoding, control characters, 101 characters", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const series = new HealthSeriesRepository(h.db);
    const odd = ["vlan/10", "..", "%41", "x".repeat(100)];
    await series.append(queryOf(h.db), {
      resourceSamples: [],
      resourceHours: [],
      trafficSamples: odd.map((name) => ({
        routerId: router.id,
        name,
        atMs: NOW - 5 * 60_000,
        rxBps: 1_000,
        txBps: 100,
        rxErrors: 0,
        txErrors: 0,
      })),
      trafficHours: [],
    });
    const traffic = (encoded: string) => get(user, `/api/routers/${router.id}/interfaces/${encoded}/traffic`);
    // Each name, percent-encoded, reaches its own series and no other.
    for (const name of odd.filter((n) => n !== "..")) {
      const res = await traffic(encodeURIComponent(name));
      expect(res.status, name).toBe(200);
      expect(res.body.data, name).toHaveLength(1);
    }
    expect((await traffic("A")).body.data).toEqual([]); // "%41" is not "A"
    // ".." and "%2E%2E" are dot segments every URL parser resolves: no route, never another router's.
    for (const dots of ["..", "%2E%2E", "..%2F..%2F.."]) {
      const res = await traffic(dots);
      if (res.status === 200) expect(res.body.data, dots).toEqual([]);
      else expect(res.status, dots).toBe(404);
    }
    const client = createClient({ url: h.api.url, token: user.token });
    expect((await client.routers.traffic.query({ router_id: router.id, name: ".." })).data).toHaveLength(1);
    expect((await client.routers.traffic.query({ router_id: router.id, name: "%41" })).data).toHaveLength(1);
    expect((await traffic("vlan%252F10")).body.data).toEqual([]);
    for (const encoded of ["%00", "ether%01", "ether%7F", "ether%0A", "x".repeat(101), "%ED%A0%80"]) {
      const res = await h.refused("GET", `/api/routers/${router.id}/interfaces/${encoded}/traffic`, {
        token: user.token,
      });
      expect(res.status, encoded).toBe(422);
      expect(Object.keys(res.body.data ?? {}), encoded).toEqual(["name"]);
    }
    // Malformed percent-encoding and a 200-character name are refused, never a 500.
    for (const encoded of ["%E0%A4%A", "%", "%zz", "y".repeat(200)]) {
      const res = await h.refused("GET", `/api/routers/${router.id}/interfaces/${encoded}/traffic`, {
        token: user.token,
      });
      expect([400, 404, 422], encoded).toContain(res.status);
      expect(res.body.status, encoded).toBe("fail");
    }
    // Another organization's router: 404 whatever the name.
    const other = await h.login();
    expect(
      (await get(other, `/api/routers/${router.id}/interfaces/${encodeURIComponent("vlan/10")}/traffic`)).status,
    ).toBe(404);
  });
});
