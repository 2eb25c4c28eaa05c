import { databaseFingerprint, makeRouter } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

// docs/api.md "Tunnel agent and entry point": FORWARDS_PER_ORG active forwards per organization
// (20 per router), 429 with Retry-After, so one tenant cannot take the whole port range.
const PER_ORG = 3;
const clock = new ManualClock(new Date("2026-11-23T10:00:00Z"));

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness(
    {
      ENTRY_POINT_HOST: "quotas.fleet.test",
      ENTRY_POINT_PORTS: "46100-46199",
      FORWARDS_PER_ORG: String(PER_ORG),
      // The trial quota has its own harness below.
      TRIAL_FORWARDS: "1000",
    },
    { clock },
  );
});
afterAll(async () => {
  await h?.close();
});

const body = (minutes = 30) => ({
  expire_after_minutes: minutes,
  dst_port: 22,
  dst_address: "10.0.0.2",
  allow_from: "8.8.8.8",
});

const tenant = async () => {
  const user = await h.login();
  const routers = [await makeRouter(h.db, user), await makeRouter(h.db, user)];
  return { ...user, bases: routers.map((r) => `/api/routers/${r.id}/transient-forwarding`) };
};

describe("forward quotas", () => {
  it("FORWARDS_PER_ORG: n forwards across the organization's routers ok, n+1 refused with 429 and Retry-After; other tenants unaffected", async () => {
    const first = await tenant();
    const [a = "", b = ""] = first.bases;
    // The earliest to expire sets Retry-After: 10 minutes from now.
    const created = [
      await h.request("POST", a, { token: first.token, body: body(10) }),
      await h.request("POST", b, { token: first.token, body: body(60) }),
    ];
    clock.advance(61_500);
    created.push(await h.request("POST", b, { token: first.token, body: body(60) }));
    expect(created.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(created).toHaveLength(PER_ORG);

    for (const base of [a, b]) {
      const before = await databaseFingerprint(h.db);
      const refused = await h.request("POST", base, { token: first.token, body: body() });
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({
        status: "fail",
        code: "rate_limited",
        message: expect.stringMatching(/billing account already hold 3 active transient forwards/),
        // 600 s of life minus the 61.5 s that passed, rounded up to whole seconds.
        retry_after_seconds: 539,
        limit: PER_ORG,
      });
      expect(await databaseFingerprint(h.db)).toBe(before);
    }

    // Another tenant still creates forwards while the first sits at its quota.
    const second = await tenant();
    expect((await h.request("POST", second.bases[0] ?? "", { token: second.token, body: body() })).status).toBe(201);

    // A delete frees a slot at once.
    const id = created[0]?.body.id as string;
    expect((await h.request("DELETE", `${a}/${id}`, { token: first.token })).status).toBe(204);
    expect((await h.request("POST", b, { token: first.token, body: body() })).status).toBe(201);
  });
});
