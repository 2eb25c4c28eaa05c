import { databaseFingerprint, makeRouter } from "@fleet/db/testing";
import { FORWARD_LIMITS } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

// A range one port larger than the per-router cap: one router can fill all but one port.
const FIRST_PORT = 46000;
const PORTS = FORWARD_LIMITS.activePerRouter + 1;

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness({
    ENTRY_POINT_HOST: "limits.fleet.test",
    ENTRY_POINT_PORTS: `${FIRST_PORT}-${FIRST_PORT + PORTS - 1}`,
    // The per-router and port-range limits, not the trial quota (forwards-trial-quota.test.ts).
    TRIAL_FORWARDS: "1000",
  });
});
afterAll(async () => {
  await h?.close();
});

const body = { expire_after_minutes: 30, dst_port: 22, dst_address: "10.0.0.2", allow_from: "8.8.8.8" };

describe("forward limits", () => {
  it("caps active forwards per router at 20 (429), then runs the port range dry (503), and a delete frees a port", async () => {
    const user = await h.login();
    const a = await makeRouter(h.db, user);
    const b = await makeRouter(h.db, user);
    const baseA = `/api/routers/${a.id}/transient-forwarding`;
    const baseB = `/api/routers/${b.id}/transient-forwarding`;

    const ports: number[] = [];
    for (let i = 0; i < FORWARD_LIMITS.activePerRouter; i++) {
      const res = await h.request("POST", baseA, { token: user.token, body });
      expect(res.status).toBe(201);
      ports.push(res.body.port);
    }
    let before = await databaseFingerprint(h.db);
    const capped = await h.request("POST", baseA, { token: user.token, body });
    expect(capped.status).toBe(429);
    expect(capped.body).toMatchObject({
      status: "fail",
      message: expect.stringMatching(/20 active transient forwards/),
    });
    // Retry-After: whole seconds until the router's earliest forward (30 minutes) expires.
    expect(capped.body.retry_after_seconds).toBeGreaterThan(1_700);
    expect(capped.body.retry_after_seconds).toBeLessThanOrEqual(1_800);
    expect(await databaseFingerprint(h.db)).toBe(before);

    const last = await h.request("POST", baseB, { token: user.token, body });
    expect(last.status).toBe(201);
    ports.push(last.body.port);
    expect(ports.sort((x, y) => x - y)).toEqual(Array.from({ length: PORTS }, (_, i) => FIRST_PORT + i));

    before = await databaseFingerprint(h.db);
    const full = await h.request("POST", baseB, { token: user.token, body });
    expect(full.status).toBe(503);
    expect(full.body).toEqual({
      status: "error",
      code: "capacity_exhausted",
      request_id: expect.any(String),
      message: `Every port of entry point limits.fleet.test (${FIRST_PORT}-${FIRST_PORT + PORTS - 1}) is in use by an active forward. Try again after one expires or is deleted.`,
    });
    expect(await databaseFingerprint(h.db)).toBe(before);

    expect((await h.request("DELETE", `${baseB}/${last.body.id}`, { token: user.token })).status).toBe(204);
    const again = await h.request("POST", baseB, { token: user.token, body });
    expect(again.status).toBe(201);
    expect(again.body.port).toBe(last.body.port);
  });
});
