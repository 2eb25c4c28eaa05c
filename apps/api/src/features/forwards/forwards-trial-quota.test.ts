import { createSecretKey } from "node:crypto";
import { makeChildOrganization, makeRouter } from "@fleet/db/testing";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

/**
 * Issue 20, finding 7 replayed (docs/api.md "Tunnel agent and entry point"): several small
 * organizations under one billing root drained a port pool with no card on file. Quotas are the
 * billing root's, over its whole tree, and TRIAL_FORWARDS while it has no payment method.
 */
const TRIAL = 4;
const PER_ROOT = 7;

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness({
    ENTRY_POINT_HOST: "trial.fleet.test",
    ENTRY_POINT_PORTS: "46300-46339",
    TRIAL_FORWARDS: String(TRIAL),
    FORWARDS_PER_ORG: String(PER_ROOT),
  });
});
afterAll(async () => {
  await h?.close();
});

const body = { expire_after_minutes: 30, dst_port: 22, dst_address: "10.0.0.2", allow_from: "8.8.8.8" };

const tokenFor = (userId: string, organizationId: string) =>
  new SignJWT({ id: organizationId, scope: "account:read account:write routers:read routers:write" })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(userId)
    .setExpirationTime("10m")
    .sign(createSecretKey(Buffer.from(h.config.auth.jwtSecret ?? "")));

/** A billing root and three child organizations (a reseller's customers), each with a router. */
const resellerTree = async () => {
  const root = await h.login();
  const orgs = [{ organizationId: root.organizationId, teamId: root.teamId, token: root.token }];
  for (let i = 0; i < 3; i++) {
    const child = await makeChildOrganization(h.db, root.organizationId);
    orgs.push({ ...child, token: await tokenFor(root.userId, child.organizationId) });
  }
  const tenants = [];
  for (const org of orgs) {
    const router = await makeRouter(h.db, org);
    tenants.push({ ...org, path: `/api/routers/${router.id}/transient-forwarding` });
  }
  return { root, tenants };
};

const create = (tenant: { token: string; path: string }) =>
  h.request("POST", tenant.path, { token: tenant.token, body });

describe("forward quotas per billing root (TRIAL_FORWARDS, FORWARDS_PER_ORG)", () => {
  it("trial organizations under one root share TRIAL_FORWARDS: n ok, n+1 refused 429 with Retry-After in every one of them", async () => {
    const { tenants } = await resellerTree();
    // One forward in each of the four organizations: n = TRIAL = 4.
    const made = [];
    for (const tenant of tenants) made.push(await create(tenant));
    expect(made.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    for (const tenant of tenants) {
      const refused = await h.refused("POST", tenant.path, { token: tenant.token, body });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(refused.body).toMatchObject({
        status: "fail",
        limit: TRIAL,
        trial: true,
        message: expect.stringMatching(/Without a payment method on file.*4 active transient forwards/),
      });
    }
    // tRPC answers the same.
    const trpc = await h.request("POST", "/trpc/forwards.create", {
      token: tenants[1]?.token ?? "",
      body: { ...body, router_id: tenants[1]?.path.split("/")[3] },
    });
    expect(trpc.status).toBe(429);
    // A delete frees a slot for any organization of the tree.
    const first = made[0]?.body.id as string;
    expect((await h.request("DELETE", `${tenants[0]?.path}/${first}`, { token: tenants[0]?.token ?? "" })).status).toBe(
      204,
    );
    expect((await create(tenants[3] ?? tenants[0]!)).status).toBe(201);
    expect((await create(tenants[2] ?? tenants[0]!)).status).toBe(429);
  });

  it("a payment method on the root lifts the tree to FORWARDS_PER_ORG (n ok, n+1 refused), and another root's trial is untouched", async () => {
    const { root, tenants } = await resellerTree();
    const account = await h.request("POST", "/v1/account", {
      token: root.token,
      body: { name: "Reseller", email: `billing-${crypto.randomUUID()}@example.com`, address: { country: "US" } },
    });
    expect(account.status).toBe(201);
    const card = await h.request("POST", "/v1/account/payment-methods", {
      token: root.token,
      body: { id: "pm_card_visa" },
    });
    expect(card.status).toBe(201);
    const statuses = [];
    for (let i = 0; i < PER_ROOT; i++) statuses.push((await create(tenants[i % tenants.length] ?? tenants[0]!)).status);
    expect(statuses).toEqual(Array.from({ length: PER_ROOT }, () => 201));
    const over = await h.refused("POST", tenants[1]?.path ?? "", { token: tenants[1]?.token ?? "", body });
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ limit: PER_ROOT, trial: false });

    // Another reseller without a card is still held to its trial.
    const other = await resellerTree();
    const mine = [];
    for (let i = 0; i < TRIAL + 1; i++) mine.push((await create(other.tenants[i % 4] ?? other.tenants[0]!)).status);
    expect(mine).toEqual([201, 201, 201, 201, 429]);
  });
});
