import { acquireJobEngine, type JobEngine, routerJobsQueue } from "@fleet/db";
import { databaseFingerprint, makeForward, makeRouter } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

// The API started as in production (NODE_ENV=production) with an entry point of three ports, so the
// test can fill it: how a full range answers over HTTP. The refusal of a loopback allow_from outside
// development is tested on the service (forwards.service.test.ts).
const FIRST_PORT = 46000;
const LAST_PORT = 46002;
let h: ApiHarness;
let engine: JobEngine;

beforeAll(async () => {
  h = await startApiHarness({
    // Production, with what production requires (docs/operations.md "Production").
    NODE_ENV: "production",
    STRIPE_EMULATOR: "true",
    WEBHOOK_ENCRYPTION_KEY: "w".repeat(32),
    ACCESS_PASSWORD_KEY: "a".repeat(32),
    TUNNEL_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey",
    METRICS_TOKEN: "scrape-token",
    ENTRY_POINT_HOST: "limits.fleet.test",
    ENTRY_POINT_PORTS: `${FIRST_PORT}-${LAST_PORT}`,
  });
  engine = await acquireJobEngine(h.db);
  await engine.defineQueue(routerJobsQueue());
});
afterAll(async () => {
  await engine?.stop();
  await h?.close();
});

// The rules (per-router cap, port range, quotas) are tested on the service
// (forwards.service.test.ts); this is how a full range answers over HTTP.
describe("forward limits over HTTP", () => {
  it("a full port range answers 503 capacity_exhausted in the /api envelope and changes nothing", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const [{ n: active = 0 } = {}] = await h.db.query<{ n: number }>(
      "select count(*)::int as n from forwards where status = 'active' and entry_point = 'limits.fleet.test' and port between $1 and $2",
      [FIRST_PORT, LAST_PORT],
    );
    for (let i = active; i <= LAST_PORT - FIRST_PORT; i++) {
      await makeForward(h.db, engine, {
        routerId: router.id,
        entryPoint: "limits.fleet.test",
        ports: [FIRST_PORT, LAST_PORT],
        expiresAt: new Date(Date.now() + 3_600_000),
      });
    }
    const before = await databaseFingerprint(h.db);
    const full = await h.request("POST", `/api/routers/${router.id}/transient-forwarding`, {
      token: user.token,
      body: { expire_after_minutes: 30, dst_port: 22, dst_address: "10.0.0.2", allow_from: "8.8.8.8" },
    });
    expect(full.status).toBe(503);
    expect(full.body).toEqual({
      status: "error",
      code: "capacity_exhausted",
      request_id: expect.any(String),
      message: `Every port of entry point limits.fleet.test (${FIRST_PORT}-${LAST_PORT}) is in use by an active forward. Try again after one expires or is deleted.`,
    });
    expect(await databaseFingerprint(h.db)).toBe(before);
  });
});
