import { makeRouter } from "@fleet/db/testing";
import { DEFAULT_HEALTH_THRESHOLDS, ManualClock } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { evaluateResources } from "./resource-evaluator.ts";

// What is HTTP about health thresholds (docs/api.md "Health thresholds"): status codes, JSend
// bodies, field errors, scopes and tRPC. The rules are in health.service.test.ts.

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.close();
});

describe("health thresholds over HTTP", () => {
  it("GET answers the defaults; PUT replaces only what it names and answers every measure", async () => {
    const user = await h.login();
    const got = await h.request("GET", "/api/health-thresholds", { token: user.token });
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ status: "success", data: DEFAULT_HEALTH_THRESHOLDS });
    const put = await h.request("PUT", "/api/health-thresholds", {
      token: user.token,
      body: { cpu: { above: 85.5, for_seconds: 86_400 }, ping_loss: null, temperature: { above: -40, for_seconds: 0 } },
    });
    expect(put.status).toBe(200);
    expect(put.body.data).toEqual({
      ...DEFAULT_HEALTH_THRESHOLDS,
      cpu: { above: 85.5, for_seconds: 86_400 },
      ping_loss: null,
      temperature: { above: -40, for_seconds: 0 },
    });
    expect((await h.request("GET", "/api/health-thresholds", { token: user.token })).body.data).toEqual(put.body.data);
  });

  it("refuses bad bodies with 422 naming the field, and changes nothing", async () => {
    const user = await h.login();
    for (const [body, field] of [
      [{ cpu: { above: 100.01, for_seconds: 0 } }, "cpu.above"],
      [{ memory: { above: -1, for_seconds: 0 } }, "memory.above"],
      [{ disk: { above: 50, for_seconds: 86_401 } }, "disk.for_seconds"],
      [{ disk: { above: 50, for_seconds: 1.5 } }, "disk.for_seconds"],
      [{ ping_loss: { above: 50 } }, "ping_loss.for_seconds"],
      [{ temperature: { above: 151, for_seconds: 0 } }, "temperature.above"],
      [{ cpu: "90" }, "cpu"],
      [{ cpu: { above: "90", for_seconds: 0 } }, "cpu.above"],
      [{ cpu: { above: 90, for_seconds: "0" } }, "cpu.for_seconds"],
      [{ cpu: { above: 90, for_seconds: 0, below: 80 } }, "cpu"],
    ] as const) {
      const refused = await h.refused("PUT", "/api/health-thresholds", { token: user.token, body });
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(refused.body).toMatchObject({ status: "fail", data: { [field]: expect.any(String) } });
    }
  });

  it("a router's override: GET and PUT through its team; another organization's router is 404", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const put = await h.request("PUT", `/api/routers/${router.id}/health-thresholds`, {
      token: user.token,
      body: { disk: { above: 99, for_seconds: 60 } },
    });
    expect(put.status).toBe(200);
    expect(put.body.data).toEqual({
      ...DEFAULT_HEALTH_THRESHOLDS,
      disk: { above: 99, for_seconds: 60 },
      overridden: ["disk"],
    });
    const got = await h.request("GET", `/api/routers/${router.id}/health-thresholds`, { token: user.token });
    expect(got.body.data).toEqual(put.body.data);
    const other = await h.login();
    for (const method of ["GET", "PUT"] as const) {
      const refused = await h.refused(method, `/api/routers/${router.id}/health-thresholds`, {
        token: other.token,
        ...(method === "PUT" ? { body: { cpu: null } } : {}),
      });
      expect(refused.status).toBe(404);
      expect(refused.body).toMatchObject({ status: "fail" });
    }
    const bad = await h.refused("PUT", `/api/routers/${router.id}/health-thresholds`, {
      token: user.token,
      body: { cpu: { above: 101, for_seconds: 0 } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.data).toEqual({ "cpu.above": expect.any(String) });
  });

  it("routers:read reads but cannot change (403); no token is 401", async () => {
    const reader = await h.login(undefined, { scope: "routers:read" });
    expect((await h.request("GET", "/api/health-thresholds", { token: reader.token })).status).toBe(200);
    const router = await makeRouter(h.db, reader);
    expect(
      (await h.request("GET", `/api/routers/${router.id}/health-thresholds`, { token: reader.token })).status,
    ).toBe(200);
    expect(
      (await h.refused("PUT", "/api/health-thresholds", { token: reader.token, body: { cpu: null } })).status,
    ).toBe(403);
    expect(
      (
        await h.refused("PUT", `/api/routers/${router.id}/health-thresholds`, {
          token: reader.token,
          body: { cpu: null },
        })
      ).status,
    ).toBe(403);
    expect((await h.request("GET", "/api/health-thresholds")).status).toBe(401);
  });

  it("a resource fault opened inside a maintenance window is listed with maintenance: true", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user, { name: "hot-1" });
    const clock = new ManualClock(Date.UTC(2026, 10, 1, 2, 0, 0));
    const window = await h.request("POST", "/api/maintenance-windows", {
      token: user.token,
      body: { name: "all", starts_at: "2026-11-01T01:00:00Z", ends_at: "2026-11-01T03:00:00Z" },
    });
    expect(window.status).toBe(201);
    await h.db.query(
      `insert into router_liveness (router_id, health_reported_at, disk_used_percent) values ($1, $2::timestamptz, 99)
       on conflict (router_id) do update set health_reported_at = excluded.health_reported_at, disk_used_percent = 99`,
      [router.id, clock.now().toISOString()],
    );
    await evaluateResources({ db: h.db, clock });
    const faults = await h.request("GET", `/api/routers/${router.id}/faults`, { token: user.token });
    expect(faults.body.data).toEqual([
      expect.objectContaining({
        type: "resource",
        cause: "disk",
        severity: "warning",
        status: "ongoing",
        message: "Disk used above 95 %: hot-1",
        maintenance: true,
      }),
    ]);
  });

  it("tRPC mirrors the paths (healthThresholds.*), with 422 field paths in data.errors", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const client = createClient({ url: h.api.url, token: user.token });
    expect((await client.healthThresholds.update.mutate({ memory: null })).data.memory).toBeNull();
    expect((await client.healthThresholds.get.query()).data.memory).toBeNull();
    const own = await client.healthThresholds.updateRouter.mutate({
      router_id: router.id,
      cpu: { above: 70, for_seconds: 5 },
    });
    expect(own.data).toMatchObject({ cpu: { above: 70, for_seconds: 5 }, memory: null, overridden: ["cpu"] });
    expect((await client.healthThresholds.getRouter.query({ router_id: router.id })).data.overridden).toEqual(["cpu"]);
    const error = await client.healthThresholds.update.mutate({ cpu: { above: 500, for_seconds: 0 } }).catch((e) => e);
    expect(error.data).toMatchObject({ httpStatus: 422, errors: { "cpu.above": [expect.any(String)] } });
  });

  it("hostile bodies: not an object is 422, NaN is malformed JSON (400), a smuggled router_id is ignored", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const sibling = await makeRouter(h.db, user);
    const headers = { "content-type": "application/json" };
    for (const path of ["/api/health-thresholds", `/api/routers/${router.id}/health-thresholds`]) {
      for (const rawBody of ["null", "[]", '"cpu"', "42"]) {
        const res = await h.refused("PUT", path, { token: user.token, rawBody, headers });
        // Valid JSON that is no object is a bad body (422 naming it), never malformed JSON.
        expect(res.status, `${path} ${rawBody}`).toBe(422);
        expect(res.body.status).toBe("fail");
      }
      for (const rawBody of ['{"cpu": {"above": NaN, "for_seconds": 0}}', '{"cpu": {"above": Infinity}}']) {
        const res = await h.refused("PUT", path, { token: user.token, rawBody, headers });
        expect(res.status, rawBody).toBe(400);
      }
      // 1e309 is valid JSON that parses to Infinity: a bad field, not a 500.
      const huge = await h.refused("PUT", path, {
        token: user.token,
        rawBody: '{"cpu": {"above": 1e309, "for_seconds": 0}}',
        headers,
      });
      expect([huge.status, Object.keys(huge.body.data ?? {})]).toEqual([422, ["cpu.above"]]);
    }
    const put = await h.request("PUT", `/api/routers/${router.id}/health-thresholds`, {
      token: user.token,
      body: { router_id: sibling.id, id: sibling.id, cpu: null },
    });
    expect(put.status).toBe(200);
    expect(put.body.data.overridden).toEqual(["cpu"]);
    const untouched = await h.request("GET", `/api/routers/${sibling.id}/health-thresholds`, { token: user.token });
    expect(untouched.body.data.overridden).toEqual([]);
  });

  it("a viewer (routers:read) changes nothing on either PUT; another organization's PUT changes nothing", async () => {
    const owner = await h.login();
    const router = await makeRouter(h.db, owner);
    const viewer = await h.login(undefined, { scope: "routers:read" });
    const stranger = await h.login();
    const body = { cpu: { above: 1, for_seconds: 0 }, disk: null };
    expect((await h.refused("PUT", "/api/health-thresholds", { token: viewer.token, body })).status).toBe(403);
    expect(
      (await h.refused("PUT", `/api/routers/${router.id}/health-thresholds`, { token: stranger.token, body })).status,
    ).toBe(404);
    for (const id of ["not-a-uuid", "00000000-0000-0000-0000-000000000000", "%00", "..%2F"]) {
      const res = await h.refused("PUT", `/api/routers/${id}/health-thresholds`, { token: owner.token, body });
      expect([404, 422], id).toContain(res.status);
    }
    const got = await h.request("GET", `/api/routers/${router.id}/health-thresholds`, { token: owner.token });
    expect(got.body.data).toEqual({ ...DEFAULT_HEALTH_THRESHOLDS, overridden: [] });
  });
});
