import { makeAccount } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, adminApiKey, startApiHarness } from "../../testing/api-harness.ts";

/**
 * docs/api.md "Routers and heartbeats": the management tunnel address is the system's to assign.
 * A /28 holds 14 routers (network and broadcast addresses skipped), small enough to fill.
 */
const NETWORK = "10.77.0.0/28";
const HOSTS = Array.from({ length: 14 }, (_, i) => `10.77.0.${i + 1}`);

let h: ApiHarness;
beforeAll(async () => {
  // TRIAL_ROUTERS: these tests enroll more routers than a trial allows without a payment method.
  h = await startApiHarness({ TUNNEL_NETWORK: NETWORK, TRIAL_ROUTERS: "1000" });
});
afterAll(async () => {
  await h?.close();
});

/** A tenant with a billing account, and an operator key of its organization (`tunnel:assign`, made by the admin CLI). */
const billedUser = async () => {
  const user = await h.login();
  await makeAccount(h.db, user.organizationId);
  return { ...user, operator: await adminApiKey(h.db, user.organizationId) };
};

type User = Awaited<ReturnType<typeof billedUser>>;

const enroll = (user: User, body: object = {}) =>
  h.request("POST", "/api/routers", { token: "tunnel_ip" in body ? user.operator : user.token, body });

const refused = (user: User, body: object) =>
  h.refused("POST", "/api/routers", { token: "tunnel_ip" in body ? user.operator : user.token, body });

describe("tunnel address assignment at enrollment", () => {
  it("lets only the platform scope tunnel:assign choose tunnel_ip (403), which dev-login and API keys never grant", async () => {
    const user = await billedUser();
    const res = await h.refused("POST", "/api/routers", { token: user.token, body: { tunnel_ip: "10.77.0.9" } });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ status: "fail", message: expect.stringMatching(/tunnel:assign/) });
    // Even a valid-looking address outside the network: the scope is judged first.
    expect(
      (await h.refused("POST", "/api/routers", { token: user.token, body: { tunnel_ip: "1.2.3.4" } })).status,
    ).toBe(403);
    const devLogin = await h.request("POST", "/v1/auth/dev-login", {
      body: { email: `op-${crypto.randomUUID()}@example.com`, scope: "routers:write tunnel:assign" },
    });
    expect(devLogin.status).toBe(422);
    const key = await h.request("POST", "/v1/api-keys", {
      token: user.operator,
      body: { name: "escalate", scopes: ["routers:write", "tunnel:assign"] },
    });
    expect(key.status).toBe(422);
    expect(key.body.errors).toHaveProperty(["scopes.1"]);
  });

  it("takes the operator's address inside the network (201), refuses one outside or malformed (422) or held (409)", async () => {
    const user = await billedUser();
    const res = await enroll(user, { name: "Edge", tunnel_ip: "10.77.0.5" });
    expect(res.status).toBe(201);
    expect(res.body.data.tunnel_ip).toBe("10.77.0.5");
    const metadata = await h.request("GET", `/api/routers/${res.body.data.router.id}/metadata`, { token: user.token });
    expect(metadata.body.data ?? metadata.body).toMatchObject({ tunnel_ip: "10.77.0.5" });

    for (const tunnelIp of ["10.77.0.16", "127.0.0.1", "10.77.0.0", "10.77.0.15", "100.64.0.1"]) {
      const outside = await refused(user, { tunnel_ip: tunnelIp });
      expect(outside.status, tunnelIp).toBe(422);
      expect(Object.keys(outside.body.data), tunnelIp).toEqual(["tunnel_ip"]);
    }
    for (const tunnelIp of ["10.77.0.05", "10.77.0.5/32", " 10.77.0.6", "::ffff:10.77.0.6", "", 167772166]) {
      const malformed = await refused(user, { tunnel_ip: tunnelIp });
      expect(malformed.status, String(tunnelIp)).toBe(422);
      expect(Object.keys(malformed.body.data), String(tunnelIp)).toEqual(["tunnel_ip"]);
    }
    // Held by a router of another organization: the address is still one router's.
    const other = await billedUser();
    // The key's first use writes its last_used_at (off the request path): let it land first.
    await h.request("GET", "/api/routers", { token: other.operator });
    await eventually(
      async () =>
        (
          await h.db.query("select 1 from api_keys where organization_id = $1 and last_used_at is not null", [
            other.organizationId,
          ])
        ).length === 1,
      "the operator key's first use recorded",
    );
    const held = await refused(other, { tunnel_ip: "10.77.0.5" });
    expect(held.status).toBe(409);
    expect(held.body).toMatchObject({ status: "fail", message: expect.stringMatching(/10\.77\.0\.5.*another router/) });
  });

  it("allocates a unique address to every router under concurrent enrollments, then answers 503 when the network is full", async () => {
    const user = await billedUser();
    const [{ n: taken = 0 } = {}] = await h.db.query<{ n: number }>(
      "select count(*)::int as n from routers where tunnel_ip is not null",
    );
    const results = await Promise.all(
      Array.from({ length: HOSTS.length - taken }, (_, i) => enroll(user, { name: `r${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(results.map(() => 201));
    const assigned = await h.db.query<{ tunnel_ip: string }>("select tunnel_ip from routers order by tunnel_ip");
    expect(new Set(assigned.map((r) => r.tunnel_ip))).toEqual(new Set(HOSTS));
    for (const res of results) {
      expect(HOSTS).toContain(res.body.data.tunnel_ip);
    }

    const full = await refused(user, {});
    expect(full.status).toBe(503);
    expect(full.body).toMatchObject({ status: "error" });
  });
});
