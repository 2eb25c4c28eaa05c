import { createHash } from "node:crypto";
import { acquireStatusFeed, type StatusFeedHandle } from "@fleet/db";
import { databaseFingerprint, makeAccount, makeRouter } from "@fleet/db/testing";
import {
  ManualClock,
  pulseEvent,
  ROUTER_LIMITS,
  type TRouterStatusEvent,
  ZApiError,
  ZOemInfoResponse,
} from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventSource } from "eventsource";
import { createClient } from "../../client.ts";
import { type ApiHarness, adminApiKey, startApiHarness } from "../../testing/api-harness.ts";
import { SSE_PING_INTERVAL_MS } from "../../trpc/init.ts";
import { STREAM_RECHECK_MS } from "../auth/credential-watch.ts";

let h: ApiHarness;
let feed: StatusFeedHandle;
// Domain time (metrics, "2 minutes ago"); access tokens keep the real clock.
const clock = new ManualClock(Date.UTC(2026, 10, 21, 13, 20, 0));

type Login = Awaited<ReturnType<ApiHarness["login"]>>;

/** A user whose organization has a billing account: it may enroll routers. */
const billedUser = async (): Promise<Login> => {
  const user = await h.login();
  await makeAccount(h.db, user.organizationId);
  return user;
};

const enroll = async (user: Login, body: object = {}) => {
  const res = await h.request("POST", "/api/routers", { token: user.token, body });
  expect(res.status).toBe(201);
  return res.body.data as { router: { id: string }; heartbeat_token: string };
};

const DATETIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/;

beforeAll(async () => {
  h = await startApiHarness({}, { clock });
  feed = await acquireStatusFeed(h.db);
});

afterAll(async () => {
  await feed?.release();
  await h?.close();
});

describe("POST /api/routers", () => {
  it("answers 402 without a billing account at the billing root, and writes nothing", async () => {
    const user = await h.login();
    const before = await databaseFingerprint(h.db);
    const res = await h.request("POST", "/api/routers", { token: user.token, body: { name: "Office" } });
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ status: "fail", message: expect.stringMatching(/billing account/) });
    expect(await databaseFingerprint(h.db)).toBe(before);
  });

  it("enrolls into the token's team: 201, the router, and a heartbeat token stored only as its hash", async () => {
    const user = await billedUser();
    const res = await h.request("POST", "/api/routers", { token: user.token, body: { name: "Office" } });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe("success");
    const { router, heartbeat_token: token } = res.body.data;
    expect(router).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      name: "Office",
      identity: "",
      serial_number: "",
      software_version: "",
      software_id: "",
      has_pulse: false,
      uptime: null,
      last_seen: "never",
      last_seen_from: null,
      hardwareboard: false,
      model: "",
      board_name: "",
      last_seen_at: null,
      created_at: "2026-11-21 13:20:00",
      tags: [],
      cpu_load: null,
      memory_used_percent: null,
      temperature: null,
    });
    expect(token).toMatch(/^hb_[A-Za-z0-9_-]{43}$/);
    // A tunnel address assigned from the default TUNNEL_NETWORK 100.64.0.0/10, never claimed by the router.
    const tunnelIp = res.body.data.tunnel_ip as string;
    expect(tunnelIp).toMatch(/^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.\d{1,3}\.\d{1,3}$/);
    const rows = await h.db.query<{ team_id: string; name: string; heartbeat_token_hash: string; tunnel_ip: string }>(
      "select team_id, name, heartbeat_token_hash, tunnel_ip from routers where id = $1",
      [router.id],
    );
    expect(rows).toEqual([
      {
        team_id: user.teamId,
        name: "Office",
        heartbeat_token_hash: createHash("sha256").update(token).digest("hex"),
        tunnel_ip: tunnelIp,
      },
    ]);
    const dump = await h.db.query<{ d: string }>("select string_agg(t::text, '|') as d from routers t");
    expect(dump[0]?.d).not.toContain(token);
  });

  it("validates the name at its limit and needs routers:write", async () => {
    const user = await billedUser();
    expect(
      (await h.request("POST", "/api/routers", { token: user.token, body: { name: "n".repeat(ROUTER_LIMITS.name) } }))
        .status,
    ).toBe(201);
    const reader = await h.login(undefined, { scope: "routers:read" });
    const before = await databaseFingerprint(h.db);
    const long = await h.request("POST", "/api/routers", {
      token: user.token,
      body: { name: "n".repeat(ROUTER_LIMITS.name + 1) },
    });
    expect(long.status).toBe(422);
    expect(long.body).toMatchObject({ status: "fail", data: { name: expect.stringMatching(/at most 100/) } });
    expect((await h.request("POST", "/api/routers", { token: user.token, body: { name: 5 } })).status).toBe(422);
    expect((await h.request("POST", "/api/routers", { token: reader.token, body: {} })).status).toBe(403);
    expect((await h.request("POST", "/api/routers", { body: {} })).status).toBe(401);
    expect(await databaseFingerprint(h.db)).toBe(before);
  });
});

describe("GET /api/routers", () => {
  it("lists the team's routers only, with human uptime and last seen", async () => {
    const user = await billedUser();
    const other = await billedUser();
    const { router } = await enroll(user, { name: "a" });
    await enroll(other);
    const lastSeen = new Date(clock.now().getTime() - 150_000);
    await h.db.query(
      `update routers set identity = 'gw-1', model = 'RB5009UG+S+', board_name = 'RB5009UG+S+', hardwareboard = true,
         serial_number = 'HE0801', software_version = '7.16', software_id = 'AB12-CD34'
       where id = $1`,
      [router.id],
    );
    await h.db.query(
      `insert into router_liveness (router_id, has_pulse, uptime_seconds, last_seen_at, last_seen_from)
       values ($3, true, $1, $2, '203.0.113.7')`,
      [3 * 86_400 + 14 * 3_600 + 3 * 60, lastSeen, router.id],
    );
    const res = await h.request("GET", "/api/routers", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("success");
    expect(res.body.data).toEqual([
      expect.objectContaining({
        id: router.id,
        identity: "gw-1",
        has_pulse: true,
        // Reported 3 d 14 h 3 min, 150 s ago, still online: it kept running.
        uptime: "3 days, 14 hours, 5 minutes",
        last_seen: "2 minutes ago",
        last_seen_from: "203.0.113.7",
        last_seen_at: "2026-11-21 13:17:30",
        hardwareboard: true,
        model: "RB5009UG+S+",
        board_name: "RB5009UG+S+",
        serial_number: "HE0801",
        software_version: "7.16",
        software_id: "AB12-CD34",
      }),
    ]);
    expect(res.body.data[0].created_at).toMatch(DATETIME);
    const empty = await h.request("GET", "/api/routers", { token: (await h.login()).token });
    expect(empty.body).toEqual({ status: "success", data: [] });
  });

  // Paging, search and sort rules: routers.service.test.ts; here the HTTP face.
  it("pages with limit and cursor: next_cursor beside data, null on the last page", async () => {
    const user = await h.login();
    for (const name of ["b", "a", "c"]) await makeRouter(h.db, user, { name });
    const first = await h.request("GET", "/api/routers?limit=2", { token: user.token });
    expect(first.status).toBe(200);
    expect(Object.keys(first.body)).toEqual(["status", "data", "next_cursor"]);
    expect(first.body.data.map((r: { name: string }) => r.name)).toEqual(["a", "b"]);
    const next = await h.request("GET", `/api/routers?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`, {
      token: user.token,
    });
    expect(next.body).toMatchObject({ status: "success", data: [{ name: "c" }], next_cursor: null });
    const filtered = await h.request("GET", "/api/routers?q=B&status=online&sort=last_seen", { token: user.token });
    expect(filtered.body).toEqual({ status: "success", data: [expect.objectContaining({ name: "b" })] });
    const edge = await h.request("GET", "/api/routers?limit=500", { token: user.token });
    expect(edge.body).toMatchObject({ status: "success", next_cursor: null });
  });

  it("answers 422 naming the bad value: limit 0, 501 or not a number, status, sort, cursor", async () => {
    const user = await h.login();
    for (const [query, field] of [
      ["limit=0", "limit"],
      ["limit=501", "limit"],
      ["limit=ten", "limit"],
      ["limit=1.5", "limit"],
      ["limit=", "limit"],
      ["status=", "status"],
      ["status=up", "status"],
      ["sort=created", "sort"],
      ["cursor=garbage&limit=5", "cursor"],
      ["q=%00", "q"],
    ]) {
      const res = await h.request("GET", `/api/routers?${query}`, { token: user.token });
      expect([query, res.status]).toEqual([query, 422]);
      expect(res.body).toMatchObject({ status: "fail", data: { [field as string]: expect.any(String) } });
    }
  });
});

describe("GET /api/routers/{router_id}", () => {
  it("answers one router in the JSend envelope, 404 for another team's, and needs routers:read", async () => {
    const user = await billedUser();
    const stranger = await h.login();
    const { router } = await enroll(user, { name: "Branch" });
    const res = await h.request("GET", `/api/routers/${router.id}`, { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: "success",
      data: expect.objectContaining({ id: router.id, name: "Branch", has_pulse: false, last_seen: "never" }),
    });
    const list = await h.request("GET", "/api/routers", { token: user.token });
    expect(list.body.data).toEqual([res.body.data]);
    const foreign = await h.request("GET", `/api/routers/${router.id}`, { token: stranger.token });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ status: "fail", message: "Router not found." });
    const noScope = await h.login(undefined, { scope: "account:read" });
    expect((await h.request("GET", `/api/routers/${router.id}`, { token: noScope.token })).status).toBe(403);
  });
});

describe("team scoping", () => {
  it("answers 404 on every endpoint for another team's router, an unknown id and a malformed id, changing nothing", async () => {
    const owner = await billedUser();
    const stranger = await billedUser();
    const { router } = await enroll(owner);
    const before = await databaseFingerprint(h.db);
    for (const id of [router.id, crypto.randomUUID(), "not-a-uuid", "1%27%20or%201%3D1"]) {
      for (const [method, path, body] of [
        ["GET", `/api/routers/${id}/metadata`],
        ["PATCH", `/api/routers/${id}/metadata`, { name: "x" }],
        ["GET", `/api/routers/${id}/metrics`],
        ["GET", `/api/routers/${id}/faults`],
        ["GET", `/api/routers/${id}/oem`],
        ["GET", `/api/routers/${id}`],
        ["DELETE", `/api/routers/${id}`],
      ] as Array<[string, string, object?]>) {
        const res = await h.request(method, path, { token: stranger.token, ...(body ? { body } : {}) });
        expect([method, path, res.status]).toEqual([method, path, 404]);
        expect(res.body).toMatchObject({ status: "fail", message: "Router not found." });
      }
    }
    expect(await databaseFingerprint(h.db)).toBe(before);
  });
});

describe("router metadata", () => {
  it("shows the router's facts, its free-form report and the user's keys; PATCH merges and null removes", async () => {
    const user = await billedUser();
    const { router } = await enroll(user, { name: "Branch" });
    await h.db.query(
      `update routers set model = 'hAP ax3', board_name = 'C53UiG+5HPaxD2HPaxD', hardwareboard = true,
         tunnel_ip = '127.0.0.9', reported_metadata = '{"site_code": "B-7", "lat": "not a number"}'::jsonb where id = $1`,
      [router.id],
    );
    await h.db.query("insert into router_liveness (router_id, last_seen_from) values ($1, '198.51.100.4')", [
      router.id,
    ]);
    const patch = await h.request("PATCH", `/api/routers/${router.id}/metadata`, {
      token: user.token,
      body: {
        name: "Branch 7",
        timezone: "Europe/Berlin",
        lat: 52.52,
        lng: 13.405,
        banner_img: "https://cdn.example.com/b.png",
        floor: 3,
        tags: ["a", "b"],
      },
    });
    expect(patch.status).toBe(200);
    const expected = {
      name: "Branch 7",
      model: "hAP ax3",
      boardname: "C53UiG+5HPaxD2HPaxD",
      hardwareboard: true,
      last_seen_from: "198.51.100.4",
      tunnel_ip: "127.0.0.9",
      site_code: "B-7",
      timezone: "Europe/Berlin",
      lat: 52.52,
      lng: 13.405,
      banner_img: "https://cdn.example.com/b.png",
      floor: 3,
      tags: ["a", "b"],
      // From the OEM catalogue (hAP ax3 is in it); the user's banner_img above wins over its banner.
      slug: expect.any(String),
      thumbnail_img: expect.stringMatching(/^https:\/\//),
    };
    expect(patch.body).toEqual({ status: "success", data: expected });
    const get = await h.request("GET", `/api/routers/${router.id}/metadata`, { token: user.token });
    expect(get.body).toEqual({ status: "success", data: expected });
    const removed = await h.request("PATCH", `/api/routers/${router.id}/metadata`, {
      token: user.token,
      body: { floor: null, lat: null },
    });
    expect(removed.body.data).not.toHaveProperty("floor");
    expect(removed.body.data).not.toHaveProperty("lat");
    expect(removed.body.data.lng).toBe(13.405);
    // The name is the router's name: faults say "Site Offline: <identity or name>".
    expect((await h.db.query<{ name: string }>("select name from routers where id = $1", [router.id]))[0]?.name).toBe(
      "Branch 7",
    );
  });

  it("accepts every limit at its edge and refuses one past it, changing nothing", async () => {
    const user = await billedUser();
    const { router } = await enroll(user);
    const path = `/api/routers/${router.id}/metadata`;
    const ok = async (body: object) =>
      expect((await h.request("PATCH", path, { token: user.token, body })).status).toBe(200);
    await ok({
      name: "n".repeat(100),
      lat: 90,
      lng: -180,
      timezone: "America/Argentina/Buenos_Aires",
      thumbnail_img: "http://x.example/t.png",
    });
    await ok({ lat: -90, lng: 180 });
    await ok({ ["k".repeat(64)]: "v", blob: "x".repeat(ROUTER_LIMITS.metadataValueBytes - 2) });
    const bad: Array<[object, string, RegExp]> = [
      [{ name: "n".repeat(101) }, "name", /at most 100/],
      [{ name: null }, "name", /string/],
      [{ timezone: "Mars/Olympus_Mons" }, "timezone", /IANA/],
      [{ lat: 90.000001 }, "lat", /between -90 and 90/],
      [{ lat: "52" }, "lat", /number/],
      [{ lng: -180.5 }, "lng", /between -180 and 180/],
      [{ banner_img: "ftp://x.example/b.png" }, "banner_img", /http or https URL/],
      [{ thumbnail_img: "not a url" }, "thumbnail_img", /URL/],
      [{ model: "spoofed" }, "model", /reported by the router/],
      [{ tunnel_ip: "10.0.0.1" }, "tunnel_ip", /assigned by the system at enrollment/],
      [{ ["k".repeat(65)]: 1 }, "k".repeat(65), /not a valid key/],
      [{ "bad key": 1 }, "bad key", /not a valid key/],
      [{ blob: "x".repeat(ROUTER_LIMITS.metadataValueBytes - 1) }, "blob", /at most 2048 bytes/],
      [Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])), "body", /at most 50 keys/],
    ];
    for (const [body, field, message] of bad) {
      const before = await databaseFingerprint(h.db);
      const res = await h.request("PATCH", path, { token: user.token, body });
      expect([field, res.status]).toEqual([field, 422]);
      expect(res.body.status).toBe("fail");
      expect(res.body.data[field]).toMatch(message);
      expect(await databaseFingerprint(h.db)).toBe(before);
    }
  });
});

describe("GET /api/routers/{id}/metrics", () => {
  it("answers the 24 most recent complete UTC hours, oldest first, with stored and ongoing downtime", async () => {
    clock.set(new Date(Date.UTC(2026, 11, 1, 9, 0, 0)));
    const user = await billedUser();
    const { router } = await enroll(user); // enrolled 2026-12-01 09:00
    const hour = (h: number) => new Date(Date.UTC(2026, 11, 1, h, 0, 0));
    await h.db.query(
      "insert into router_downtime_hours (router_id, hour, seconds_down) values ($1, $2, 600), ($3, $4, 1800), ($5, $6, 3600)",
      [router.id, hour(8), router.id, hour(10), router.id, hour(11)],
    );
    // Last heartbeat 13:59:00 at a 30 s interval: down since 13:59:30, still silent at 15:10.
    clock.set(new Date(Date.UTC(2026, 11, 1, 15, 10, 0)));
    await h.db.query("insert into router_liveness (router_id, last_seen_at) values ($2, $1)", [
      new Date(Date.UTC(2026, 11, 1, 13, 59, 0)),
      router.id,
    ]);
    await h.db.query(
      `insert into heartbeat_coverage (id, covered_since, alive_at, outage_started_at, interval_ms) values (1, $1, $2, null, 30000)
       on conflict (id) do update set covered_since = excluded.covered_since, alive_at = excluded.alive_at, outage_started_at = null, interval_ms = 30000`,
      [new Date(Date.UTC(2026, 10, 1)), clock.now()],
    );
    const res = await h.request("GET", `/api/routers/${router.id}/metrics`, { token: user.token });
    expect(res.status).toBe(200);
    const data = res.body.data as Array<{ date: string; minutes_down: number; percentage_down: number }>;
    expect(data).toHaveLength(24);
    expect(data[0]?.date).toBe("2026-11-30T15:00:00+00:00");
    expect(data[23]?.date).toBe("2026-12-01T14:00:00+00:00");
    const byDate = Object.fromEntries(data.map((m) => [m.date.slice(11, 13), m]));
    expect(byDate["08"]).toMatchObject({ minutes_down: 0, percentage_down: 0 }); // before enrollment
    expect(byDate["10"]).toMatchObject({ minutes_down: 30, percentage_down: 50 });
    expect(byDate["11"]).toMatchObject({ minutes_down: 60, percentage_down: 100 });
    expect(byDate["12"]).toMatchObject({ minutes_down: 0, percentage_down: 0 });
    expect(byDate["13"]).toMatchObject({ minutes_down: 0.5, percentage_down: 0.83 });
    expect(byDate["14"]).toMatchObject({ minutes_down: 60, percentage_down: 100 });
    // The current hour (15:00-16:00) is not complete: not shown.
    expect(data.some((m) => m.date.startsWith("2026-12-01T15"))).toBe(false);
  });
});

describe("GET /api/routers/{id}/faults", () => {
  it("answers the last 100 faults, newest first, in the API doc's shape", async () => {
    const user = await billedUser();
    const { router } = await enroll(user);
    const base = Date.UTC(2026, 10, 1, 0, 0, 0);
    for (let i = 0; i < 105; i++) {
      const created = new Date(base + i * 3_600_000);
      await h.db.query(
        `insert into router_faults (id, router_id, type, severity, message, cause, status, created_at, resolved_at, duration_seconds)
         values ($1, $2, 'site', 'error', $3, 'Connectivity lost', 'completed', $4, $5, 90)`,
        [crypto.randomUUID(), router.id, `Site Offline: f${i}`, created, new Date(created.getTime() + 90_000)],
      );
    }
    await h.db.query(
      `insert into router_faults (id, router_id, type, severity, message, cause, status, created_at) values ($1, $2, 'site', 'error', 'Site Offline: now', 'Unknown', 'ongoing', $3)`,
      [crypto.randomUUID(), router.id, new Date(Date.UTC(2026, 11, 1, 12, 0, 30))],
    );
    const res = await h.request("GET", `/api/routers/${router.id}/faults`, { token: user.token });
    expect(res.status).toBe(200);
    const faults = res.body.data;
    expect(faults).toHaveLength(100);
    expect(faults[0]).toEqual({
      id: expect.any(String),
      rid: router.id,
      message: "Site Offline: now",
      severity: "error",
      type: "site",
      cause: "Unknown",
      created_at: "2026-12-01T12:00:30+00:00",
      resolved_at: null,
      duration: null,
      status: "ongoing",
    });
    expect(faults[1]).toMatchObject({
      message: "Site Offline: f104",
      resolved_at: "2026-11-05T08:01:30+00:00",
      duration: 90,
      status: "completed",
    });
    expect(faults[99].message).toBe("Site Offline: f6");
  });
});

describe("DELETE /api/routers/{id}", () => {
  it("answers 204, removes the router with its faults and downtime, and announces the revocation", async () => {
    const user = await billedUser();
    const { router } = await enroll(user);
    await h.db.query("insert into router_downtime_hours (router_id, hour, seconds_down) values ($1, $2, 60)", [
      router.id,
      new Date(Date.UTC(2026, 10, 1)),
    ]);
    const heard: TRouterStatusEvent[] = [];
    const stop = feed.feed.subscribe((e) => heard.push(e));
    const res = await h.request("DELETE", `/api/routers/${router.id}`, { token: user.token });
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    await eventually(
      () => heard.some((e) => e.type === "removed" && e.router_id === router.id && e.team_id === user.teamId),
      "the removed event",
    );
    stop();
    expect(await h.db.query("select 1 from routers where id = $1", [router.id])).toEqual([]);
    expect(await h.db.query("select 1 from router_downtime_hours where router_id = $1", [router.id])).toEqual([]);
    expect((await h.request("GET", `/api/routers/${router.id}/metadata`, { token: user.token })).status).toBe(404);
    expect((await h.request("DELETE", `/api/routers/${router.id}`, { token: user.token })).status).toBe(404);
  });
});

describe("tRPC", () => {
  it("serves routers.* with the REST bodies as outputs", async () => {
    const user = await billedUser();
    const client = createClient({ url: h.api.url, token: user.token });
    const enrolled = await client.routers.enroll.mutate({ name: "via trpc" });
    expect(enrolled.status).toBe("success");
    const id = enrolled.data.router.id;
    expect((await client.routers.list.query()).data.map((r) => r.id)).toEqual([id]);
    const page = await client.routers.list.query({ limit: 1, q: "VIA", sort: "last_seen" });
    expect(page).toEqual({ status: "success", data: [expect.objectContaining({ id })], next_cursor: null });
    expect((await client.routers.get.query({ router_id: id })).data).toMatchObject({ id, name: "via trpc" });
    expect(await client.routers.counts.query()).toEqual({ total: 1, online: 0, offline: 1 });
    expect((await client.routers.metadata.query({ router_id: id })).data.name).toBe("via trpc");
    expect((await client.routers.updateMetadata.mutate({ router_id: id, timezone: "UTC" })).data.timezone).toBe("UTC");
    expect((await client.routers.metrics.query({ router_id: id })).data).toHaveLength(24);
    expect((await client.routers.faults.query({ router_id: id })).data).toEqual([]);
    await client.routers.remove.mutate({ router_id: id });
    await expect(client.routers.metadata.query({ router_id: id })).rejects.toMatchObject({ data: { httpStatus: 404 } });
  });

  it("routers.onStatus pushes the team's has_pulse and fault changes over SSE, and only the team's", async () => {
    const user = await billedUser();
    const stranger = await billedUser();
    const mine = await makeRouter(h.db, user);
    const client = createClient({ url: h.api.url, token: user.token, EventSource });
    const received: TRouterStatusEvent[] = [];
    let started = false;
    const subscription = client.routers.onStatus.subscribe(undefined, {
      onStarted: () => {
        started = true;
      },
      onData: (event) => received.push(event),
    });
    await eventually(() => started, "the subscription to start");
    const ours = pulseEvent({
      routerId: mine.id,
      teamId: user.teamId,
      hasPulse: false,
      at: new Date("2026-12-01T12:00:00Z"),
    });
    const theirs: TRouterStatusEvent = { ...ours, router_id: crypto.randomUUID(), team_id: stranger.teamId };
    // The subscriber may register a moment after the stream opens: publish until heard.
    await expect
      .poll(async () => {
        await feed.feed.publish([theirs, ours]);
        return received.length;
      })
      .toBeGreaterThan(0);
    subscription.unsubscribe();
    expect(received.every((e) => e.team_id === user.teamId)).toBe(true);
    expect(received[0]).toEqual(ours);
  });

  it("refuses a subscription without a valid token", async () => {
    const client = createClient({ url: h.api.url, token: "nope", EventSource });
    const error = await new Promise<unknown>((resolve) => {
      const sub = client.routers.onStatus.subscribe(undefined, {
        onError: (e) => {
          sub.unsubscribe();
          resolve(e);
        },
      });
    });
    expect(error).toMatchObject({ data: { httpStatus: 401 } });
  });
});

describe("OpenAPI", () => {
  it("documents every router path", async () => {
    const doc = (await h.request("GET", "/openapi.json")).body;
    expect(Object.keys(doc.paths["/api/routers"])).toEqual(expect.arrayContaining(["get", "post"]));
    expect(Object.keys(doc.paths["/api/routers/{router_id}"])).toEqual(expect.arrayContaining(["get", "delete"]));
    expect(doc.paths["/api/routers"].get.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(["limit", "cursor", "q", "status", "sort"]),
    );
    expect(Object.keys(doc.paths["/api/routers/{router_id}/metadata"])).toEqual(
      expect.arrayContaining(["get", "patch"]),
    );
    for (const p of ["metrics", "faults", "oem"])
      expect(doc.paths[`/api/routers/{router_id}/${p}`]).toHaveProperty("get");
  });
});

// The OEM endpoint's HTTP face (its rules: features/oem/oem.service.test.ts).
describe("GET /api/routers/{router_id}/oem", () => {
  it("answers the OEM Information in a JSend envelope, and no data as a 404 JSend fail", async () => {
    const owner = await h.login();
    const router = await makeRouter(h.db, owner, { model: "RB5009UG+S+", boardName: "RB5009UG+S+" });
    const res = await h.request("GET", `/api/routers/${router.id}/oem`, { token: owner.token });
    expect(res.status).toBe(200);
    expect(ZOemInfoResponse.strict().safeParse(res.body).success).toBe(true);
    expect(res.body).toMatchObject({ status: "success", data: { slug: "rb5009ug_s_in" } });
    expect(res.body.data).not.toHaveProperty("match_keys");

    const unknownModel = await makeRouter(h.db, owner, { model: "RB951G-2HnD", boardName: "RB951G-2HnD" });
    const before = await databaseFingerprint(h.db);
    const none = await h.request("GET", `/api/routers/${unknownModel.id}/oem`, { token: owner.token });
    expect(await databaseFingerprint(h.db)).toBe(before);
    expect(none.status).toBe(404);
    expect(ZApiError.safeParse(none.body).success).toBe(true);
    expect(none.body).toMatchObject({ status: "fail", message: "No manufacturer data for model RB951G-2HnD." });
  });

  it.each(["1", "00000000-0000-0000-0000-00000000000g", "x".repeat(300)])(
    "answers 404 for the malformed id %s",
    async (id) => {
      const owner = await h.login();
      const res = await h.request("GET", `/api/routers/${id}/oem`, { token: owner.token });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ status: "fail", message: "Router not found." });
    },
  );

  it("needs a token with routers:read", async () => {
    const owner = await h.login();
    const router = await makeRouter(h.db, owner, { model: "RB750Gr3" });
    const anonymous = await h.request("GET", `/api/routers/${router.id}/oem`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.status).toBe("fail");
    const limited = await h.login(undefined, { scope: "account:read routers:write" });
    const mine = await makeRouter(h.db, limited, { model: "RB750Gr3" });
    const forbidden = await h.request("GET", `/api/routers/${mine.id}/oem`, { token: limited.token });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ status: "fail", message: expect.stringContaining("routers:read") });
  });

  it("is documented under the routers tag with its path parameter", async () => {
    const res = await h.request("GET", "/openapi.json");
    const operation = res.body.paths["/api/routers/{router_id}/oem"]?.get;
    expect(operation?.tags).toEqual(["routers"]);
    expect(operation?.parameters?.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual([
      "path:router_id",
    ]);
  });

  describe("tRPC routers.oem", () => {
    const call = async (token: string, routerId: string) => {
      const input = encodeURIComponent(JSON.stringify({ router_id: routerId }));
      const res = await fetch(`${h.api.url}/trpc/routers.oem?input=${input}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return {
        status: res.status,
        body: (await res.json()) as {
          result?: { data: unknown };
          error?: { message: string; data: { httpStatus: number } };
        },
      };
    };

    it("answers the same body as REST", async () => {
      const owner = await h.login();
      const router = await makeRouter(h.db, owner, { model: "CCR2004-1G-12S+2XS", boardName: "CCR2004-1G-12S+2XS" });
      const rest = await h.request("GET", `/api/routers/${router.id}/oem`, { token: owner.token });
      const trpc = await call(owner.token, router.id);
      expect(trpc.status).toBe(200);
      expect(trpc.body.result?.data).toEqual(rest.body);
    });

    it("answers NOT_FOUND for an unknown router and for an unknown model", async () => {
      const owner = await h.login();
      const unknown = await call(owner.token, crypto.randomUUID());
      expect(unknown.status).toBe(404);
      expect(unknown.body.error?.message).toBe("Router not found.");
      const router = await makeRouter(h.db, owner, { model: "RB000" });
      const noData = await call(owner.token, router.id);
      expect(noData.status).toBe(404);
      expect(noData.body.error?.message).toBe("No manufacturer data for model RB000.");
    });
  });
});

// The backups endpoint's HTTP face (its rules: features/backups/backups.service.test.ts).
describe("POST /api/routers/{router_id}/backups", () => {
  it("answers 202 with the job in a JSend envelope", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const res = await h.request("POST", `/api/routers/${router.id}/backups`, { token: user.token });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: "success", data: { job_id: expect.any(String) } });
  });
});

describe("tunnel_ip at enrollment over HTTP", () => {
  // The rules (range, held, quarantine, allocation) are RouterService's (routers.service.test.ts).
  it("lets only the platform scope tunnel:assign choose tunnel_ip (403), which dev-login and API keys never grant", async () => {
    const user = await billedUser();
    const operator = await adminApiKey(h.db, user.organizationId);
    const res = await h.refused("POST", "/api/routers", { token: user.token, body: { tunnel_ip: "100.64.0.9" } });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ status: "fail", message: expect.stringMatching(/tunnel:assign/) });
    const devLogin = await h.request("POST", "/v1/auth/dev-login", {
      body: { email: `op-${crypto.randomUUID()}@example.com`, scope: "routers:write tunnel:assign" },
    });
    expect(devLogin.status).toBe(422);
    const key = await h.request("POST", "/v1/api-keys", {
      token: operator,
      body: { name: "escalate", scopes: ["routers:write", "tunnel:assign"] },
    });
    expect(key.status).toBe(422);
    expect(key.body.errors).toHaveProperty(["scopes.1"]);
  });

  it("takes the operator's address (201), answers 422 naming tunnel_ip outside the network or malformed, 409 when held", async () => {
    const user = await billedUser();
    const operator = await adminApiKey(h.db, user.organizationId);
    const res = await h.request("POST", "/api/routers", {
      token: operator,
      body: { name: "Edge", tunnel_ip: "100.127.255.201" },
    });
    expect(res.status).toBe(201);
    expect(res.body.data.tunnel_ip).toBe("100.127.255.201");
    for (const tunnelIp of ["127.0.0.1", "100.64.0.0", "100.64.0.05", "100.64.0.5/32", " 100.64.0.6", "", 1684013062]) {
      const refused = await h.refused("POST", "/api/routers", { token: operator, body: { tunnel_ip: tunnelIp } });
      expect(refused.status, String(tunnelIp)).toBe(422);
      expect(Object.keys(refused.body.data), String(tunnelIp)).toEqual(["tunnel_ip"]);
    }
    const held = await h.refused("POST", "/api/routers", { token: operator, body: { tunnel_ip: "100.127.255.201" } });
    expect(held.status).toBe(409);
    expect(held.body).toMatchObject({ status: "fail", message: expect.stringMatching(/another router/) });
  });
});

describe("router path parameter names", () => {
  it("tRPC accepts `id` (docs/api.md, Routers and heartbeats) as well as `router_id` (docs/api.md)", async () => {
    const login = await h.login();
    const client = createClient({ url: h.api.url, token: login.token });
    const a = await makeRouter(h.db, login, { name: "alias-a" });
    const b = await makeRouter(h.db, login, { name: "alias-b" });
    const updated = await client.routers.updateMetadata.mutate({ id: a.id, lat: 52.5 } as never);
    expect(updated).toMatchObject({ status: "success" });
    const meta = await client.routers.metadata.query({ router_id: a.id });
    expect(meta.data).toMatchObject({ lat: 52.5 });
    expect(meta.data).not.toHaveProperty("id");
    await client.routers.remove.mutate({ id: a.id } as never);
    await client.routers.remove.mutate({ router_id: b.id });
    const list = await client.routers.list.query();
    expect(list.data.map((r: { id: string }) => r.id)).not.toContain(a.id);
    expect(list.data.map((r: { id: string }) => r.id)).not.toContain(b.id);
  });

  it("REST refuses a body that is not a JSON object with 422", async () => {
    const login = await h.login();
    const router = await makeRouter(h.db, login);
    const res = await h.request("PATCH", `/api/routers/${router.id}/metadata`, { token: login.token, body: [1, 2] });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ status: "fail", data: { body: expect.any(String) } });
    const v1 = await h.request("PATCH", "/v1/account", { token: login.token, body: [] });
    expect(v1.status).toBe(422);
    expect(v1.body.errors.body).toBeDefined();
  });

  it("documents router paths with their parameters", async () => {
    const doc = await h.request("GET", "/openapi.json");
    const op = doc.body.paths["/api/routers/{router_id}/metadata"]?.get;
    expect(op.parameters.map((p: { name: string }) => p.name)).toContain("router_id");
  });
});

describe("routers.onStatus keep-alive", () => {
  it("an idle subscription receives SSE ping events, so proxies do not cut it", async () => {
    const user = await h.login();
    const params = encodeURIComponent(JSON.stringify({ token: user.token }));
    const abort = new AbortController();
    const res = await fetch(`${h.api.url}/trpc/routers.onStatus?connectionParams=${params}`, {
      headers: { accept: "text/event-stream" },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    try {
      // Nothing happens in this team: whatever arrives is keep-alive.
      while (!/event: ping/.test(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value);
      }
    } finally {
      abort.abort();
    }
    expect(text).toMatch(/event: ping/);
    // The stream tells the client to reconnect if even pings stop.
    expect(text).toMatch(new RegExp(`"reconnectAfterInactivityMs":${SSE_PING_INTERVAL_MS * 4}`));
  }, 30_000);
});

/**
 * docs/api.md "Authentication": a revoked API key, an expired access token or a removed
 * organization ends every `routers.onStatus` stream opened with it within 10 s, and no stream
 * delivers an event that happened after its credential stopped being valid. Real SSE over HTTP;
 * the API keeps its production recheck period; token expiry moves the API's wall clock.
 */
interface SseEvent {
  event: string;
  data: string;
}

/** One SSE stream of routers.onStatus, read as it arrives; `ended` resolves when the server closes it. */
const openStream = async (bearer: string) => {
  const abort = new AbortController();
  const res = await fetch(`${h.api.url}/trpc/routers.onStatus`, {
    headers: { accept: "text/event-stream", authorization: `Bearer ${bearer}` },
    signal: abort.signal,
  });
  expect(res.status).toBe(200);
  const events: SseEvent[] = [];
  let endedAt: number | undefined;
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const ended = (async () => {
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let cut = buffer.indexOf("\n\n"); cut !== -1; cut = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
        const data = [...block.matchAll(/^data: ?(.*)$/gm)].map((m) => m[1]).join("\n");
        events.push({ event, data });
      }
    }
    endedAt = Date.now();
  })();
  const routerEvents = () => events.filter((e) => e.event === "message" && e.data.includes("router_id"));
  return {
    events,
    routerEvents,
    ended,
    endedAt: () => endedAt,
    close: () => abort.abort(),
  };
};

/** `marker` is the event's `at` (ISO 8601 UTC, as the feed formats it). */
const pulse = (teamId: string, marker: string): TRouterStatusEvent =>
  pulseEvent({ routerId: crypto.randomUUID(), teamId, hasPulse: true, at: new Date(marker) });

/** Publishes until the stream delivers one event: its subscriber is registered from then on. */
const heard = async (stream: Awaited<ReturnType<typeof openStream>>, teamId: string) => {
  await eventually(async () => {
    await feed.feed.publish([pulse(teamId, "2026-11-25T00:00:00+00:00")]);
    return stream.routerEvents().length > 0;
  }, "the stream hears the team's events");
};

/** The stream ended with tRPC's UNAUTHORIZED, and none of `after` reached it. */
const endedUnauthorized = async (stream: Awaited<ReturnType<typeof openStream>>, after: string) => {
  await eventually(() => stream.endedAt() !== undefined, "the stream to end", 15_000);
  const error = stream.events.find((e) => e.event === "serialized-error");
  expect(error, JSON.stringify(stream.events)).toBeDefined();
  expect(JSON.parse(error?.data ?? "{}")).toMatchObject({
    data: { code: "UNAUTHORIZED", httpStatus: 401, appCode: "unauthenticated" },
  });
  expect(stream.routerEvents().filter((e) => e.data.includes(after))).toEqual([]);
};

const AFTER = "2026-11-25T23:59:59+00:00";

describe("routers.onStatus ends with its credential", () => {
  type Stream = Awaited<ReturnType<typeof openStream>>;
  /**
   * Two streams per case, each of its own organization: `busy` gets an event right after its
   * credential stops being valid (it must not be delivered), `idle` gets nothing at all (it must
   * still end within 10 s).
   */
  const twoStreams = async (credential: (user: Awaited<ReturnType<ApiHarness["login"]>>) => Promise<string>) => {
    const users = [await h.login(), await h.login()] as const;
    const busy = await openStream(await credential(users[0]));
    const idle = await openStream(await credential(users[1]));
    await heard(busy, users[0].teamId);
    await heard(idle, users[1].teamId);
    return { users, busy, idle };
  };
  const afterInvalid = async (busy: Stream, idle: Stream, teamId: string, invalidAt: number, publish = true) => {
    // Without any event, only the periodic recheck can end the streams.
    if (publish) await feed.feed.publish([pulse(teamId, AFTER)]);
    await endedUnauthorized(busy, AFTER);
    await endedUnauthorized(idle, AFTER);
    expect((idle.endedAt() ?? Number.POSITIVE_INFINITY) - invalidAt).toBeLessThan(10_000);
  };
  const keyOf = async (user: Awaited<ReturnType<ApiHarness["login"]>>) => {
    const created = await h.request("POST", "/v1/api-keys", {
      token: user.token,
      body: { name: "stream", scopes: ["routers:read"] },
    });
    expect(created.status).toBe(201);
    keys.set(created.body.key, created.body.id);
    return created.body.key as string;
  };
  const keys = new Map<string, string>();

  it("a revoked API key: the stream ends within 10 s and delivers nothing that happened after", async () => {
    const { users, busy, idle } = await twoStreams(keyOf);
    try {
      const ids = [...keys.values()].slice(-2);
      const revokedAt = Date.now();
      for (const [i, user] of users.entries()) {
        const res = await h.request("DELETE", `/v1/api-keys/${ids[i]}`, { token: user.token });
        expect(res.status).toBe(204);
      }
      await afterInvalid(busy, idle, users[0].teamId, revokedAt);
    } finally {
      busy.close();
      idle.close();
    }
  }, 60_000);

  it("an API key revoked by another API process (its row gone, this process's cache warm), nothing happening", async () => {
    const { users, busy, idle } = await twoStreams(keyOf);
    try {
      const revokedAt = Date.now();
      await h.db.query("delete from api_keys where id = any($1::uuid[])", [[...keys.values()].slice(-2)]);
      await afterInvalid(busy, idle, users[0].teamId, revokedAt, false);
      expect((busy.endedAt() ?? Number.POSITIVE_INFINITY) - revokedAt).toBeLessThan(10_000);
    } finally {
      busy.close();
      idle.close();
    }
  }, 60_000);

  it("an expired access token: the stream ends within 10 s and delivers nothing after the expiry", async () => {
    const { users, busy, idle } = await twoStreams(async (user) => user.token);
    try {
      // Every token of this harness (1 h) is past its expiry on the API's clock from now on.
      h.clock.offsetMs = 3_600_000 + 60_000;
      await afterInvalid(busy, idle, users[0].teamId, Date.now());
    } finally {
      h.clock.offsetMs = 0;
      busy.close();
      idle.close();
    }
  }, 60_000);

  it("a removed organization: the stream ends within 10 s and delivers nothing after", async () => {
    const { users, busy, idle } = await twoStreams(async (user) => user.token);
    try {
      const removedAt = Date.now();
      await h.db.query("delete from organizations where id = any($1::uuid[])", [users.map((u) => u.organizationId)]);
      await afterInvalid(busy, idle, users[0].teamId, removedAt);
    } finally {
      busy.close();
      idle.close();
    }
  }, 60_000);

  it("a removed or demoted member: the stream ends within 10 s (removed here, demoted by another process)", async () => {
    const memberIds: string[] = [];
    // Each stream is a technician's in an owner's organization (their token's `id`).
    const { users, busy, idle } = await twoStreams(async (owner) => {
      const email = `member-${crypto.randomUUID()}@example.com`;
      const member = await h.login(email);
      memberIds.push(member.userId);
      await h.db.query(
        "insert into organization_members (id, organization_id, user_id, role, created_at) values (gen_random_uuid(), $1, $2, 'technician', now())",
        [owner.organizationId, member.userId],
      );
      await h.db.query("update users set current_organization_id = $1 where id = $2", [
        owner.organizationId,
        member.userId,
      ]);
      return (await h.login(email)).token;
    });
    try {
      const changedAt = Date.now();
      const removed = await h.request(
        "DELETE",
        `/v1/organizations/${users[0].organizationId}/members/${memberIds[0]}`,
        {
          token: users[0].token,
        },
      );
      expect(removed.status).toBe(204);
      // Another process demotes the second to billing (no routers:read): only the database changes.
      await h.db.query("update organization_members set role = 'billing' where user_id = $1", [memberIds[1]]);
      await afterInvalid(busy, idle, users[0].teamId, changedAt);
    } finally {
      busy.close();
      idle.close();
    }
  }, 60_000);

  it("a valid credential keeps its stream through several recheck periods", async () => {
    const user = await h.login();
    const stream = await openStream(user.token);
    try {
      await heard(stream, user.teamId);
      const before = stream.routerEvents().length;
      const checks = Date.now() + 2 * STREAM_RECHECK_MS + 500;
      // Events keep arriving for two recheck periods and more: nothing ends the stream.
      await eventually(
        async () => {
          await feed.feed.publish([pulse(user.teamId, "2026-11-25T12:00:00+00:00")]);
          return Date.now() > checks && stream.routerEvents().length > before + 1;
        },
        "events across two rechecks",
        30_000,
      );
      expect(stream.endedAt()).toBeUndefined();
    } finally {
      stream.close();
    }
  }, 60_000);
});
