import { queryOf, TunnelAddressesRepository } from "@fleet/db";
import { makeAccount } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, adminApiKey, startApiHarness } from "../../testing/api-harness.ts";

/**
 * docs/api.md "Routers and heartbeats": a removed router's tunnel address is not handed to any
 * router for TUNNEL_ADDRESS_QUARANTINE_DAYS, unless its offboarding confirmed the device was
 * cleaned. A /29 holds six routers, small enough to fill; the clock is the harness's domain clock.
 */
const DAY_MS = 86_400_000;
const clock = new ManualClock(new Date("2026-12-01T09:00:00Z"));
let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness(
    { TUNNEL_NETWORK: "10.78.0.0/29", TRIAL_ROUTERS: "1000", TUNNEL_ADDRESS_QUARANTINE_DAYS: "30" },
    { clock },
  );
});
afterAll(async () => {
  await h?.close();
});

describe("tunnel address quarantine", () => {
  it("holds a removed router's address for exactly 30 days (409 to the operator, never allocated), then frees it", async () => {
    const user = await h.login();
    await makeAccount(h.db, user.organizationId);
    const operator = await adminApiKey(h.db, user.organizationId);
    const enroll = (body: object, token = operator) => h.request("POST", "/api/routers", { token, body });
    const removedAt = clock.now().getTime();
    const first = await enroll({ name: "gone", tunnel_ip: "10.78.0.1" });
    expect(first.status).toBe(201);
    expect((await h.request("DELETE", `/api/routers/${first.body.data.router.id}`, { token: user.token })).status).toBe(
      204,
    );
    const [row] = await h.db.query<{ quarantined_until: Date }>(
      "select quarantined_until from tunnel_addresses where tunnel_ip = '10.78.0.1'",
    );
    expect(new Date(row?.quarantined_until ?? 0).getTime()).toBe(removedAt + 30 * DAY_MS);

    // One millisecond before the end: still held, whoever asks.
    clock.set(new Date(removedAt + 30 * DAY_MS - 1));
    const held = await h.refused("POST", "/api/routers", { token: operator, body: { tunnel_ip: "10.78.0.1" } });
    expect(held.status).toBe(409);
    // The allocator fills the other five addresses and then has none: X is never handed out.
    const allocated = [];
    for (let i = 0; i < 5; i++) allocated.push((await enroll({ name: `r${i}` }, user.token)).body.data.tunnel_ip);
    expect(allocated.sort()).toEqual(["10.78.0.2", "10.78.0.3", "10.78.0.4", "10.78.0.5", "10.78.0.6"]);
    expect((await h.refused("POST", "/api/routers", { token: user.token, body: {} })).status).toBe(503);

    // At the end of the quarantine the address is assignable again.
    clock.set(new Date(removedAt + 30 * DAY_MS));
    const again = await enroll({ name: "back", tunnel_ip: "10.78.0.1" });
    expect(again.status).toBe(201);
  });

  it("frees the address at once when the offboarding job confirmed the device was cleaned", async () => {
    const user = await h.login();
    await makeAccount(h.db, user.organizationId);
    const operator = await adminApiKey(h.db, user.organizationId);
    // The network is full after the test above: make room by deleting one row directly (no quarantine).
    const [{ id, tunnel_ip: tunnelIp } = { id: "", tunnel_ip: "" }] = await h.db.query<{
      id: string;
      tunnel_ip: string;
    }>("select id, tunnel_ip from routers order by tunnel_ip limit 1");
    await h.db.query("delete from routers where id = $1", [id]);
    const mine = await h.request("POST", "/api/routers", { token: operator, body: { tunnel_ip: tunnelIp } });
    expect(mine.status).toBe(201);
    const routerId = mine.body.data.router.id as string;
    expect((await h.request("DELETE", `/api/routers/${routerId}`, { token: user.token })).status).toBe(204);
    expect((await h.refused("POST", "/api/routers", { token: operator, body: { tunnel_ip: tunnelIp } })).status).toBe(
      409,
    );
    // What the agent records when offboarding succeeded (test/routers/address-reuse.e2e.test.ts does it over SSH).
    expect(
      await new TunnelAddressesRepository(h.db).markOffboarded(queryOf(h.db), routerId, clock.now()),
    ).not.toBeNull();
    expect((await h.request("POST", "/api/routers", { token: operator, body: { tunnel_ip: tunnelIp } })).status).toBe(
      201,
    );
  });
});
