import { createSecretKey } from "node:crypto";
import { makeChildOrganization, makeRouter } from "@fleet/db/testing";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

let h: ApiHarness;
const ENTRY_POINT = "entry.fleet.test";
const TRIAL = 4;
const PER_ROOT = 7;

beforeAll(async () => {
  h = await startApiHarness({
    ENTRY_POINT_HOST: ENTRY_POINT,
    ENTRY_POINT_PORTS: "45000-45999",
    // The quota tests below (their own reseller trees; every other test has an organization of its own).
    TRIAL_FORWARDS: String(TRIAL),
    FORWARDS_PER_ORG: String(PER_ROOT),
  });
});
afterAll(async () => {
  await h?.close();
});

const body = (overrides: Record<string, unknown> = {}) => ({
  expire_after_minutes: 60,
  dst_port: 22,
  dst_address: "192.168.88.10",
  allow_from: "8.8.8.8",
  ...overrides,
});

/** A logged-in user with a router in their default team that has reported a tunnel address. */
const withRouter = async (extra: { scope?: string } = {}) => {
  const user = await h.login(undefined, extra);
  const router = await makeRouter(h.db, user);
  return { ...user, routerId: router.id, base: `/api/routers/${router.id}/transient-forwarding` };
};

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("transient forwarding endpoints", () => {
  it("create answers 201 with every field of the API doc, bare, and queues the apply job", async () => {
    const { token, base } = await withRouter();
    const before = Date.now();
    const res = await h.request("POST", base, { token, body: body({ allow_from: "8.8.8.77/24" }) });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body)).toEqual([
      "id",
      "port",
      "revoked_early",
      "allow_only_cidr",
      "authorized_at",
      "expires_at",
      "expired",
      "entry_point",
      "dst_address",
      "dst_port",
      "time_to_expire",
      "state",
      "failure_reason",
    ]);
    expect(res.body).toMatchObject({
      revoked_early: false,
      allow_only_cidr: "8.8.8.0/24",
      authorized_at: null,
      expired: false,
      entry_point: ENTRY_POINT,
      dst_address: "192.168.88.10",
      dst_port: 22,
      time_to_expire: "1 hour from now",
      // Not on the router yet: the agent's apply job has not run.
      state: "pending",
      failure_reason: null,
    });
    expect(res.body.id).toMatch(UUID);
    expect(res.body.port).toBeGreaterThanOrEqual(45000);
    expect(res.body.port).toBeLessThanOrEqual(45999);
    expect(res.body.expires_at).toMatch(ISO_UTC);
    const expires = Date.parse(res.body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3_600_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 3_600_000);
    const jobs = await h.db.query<{ kind: string; state: string }>(
      `select data->>'kind' as kind, state from pgboss.job where name = 'router.jobs' and data->>'forward_id' = $1`,
      [res.body.id],
    );
    expect(jobs).toEqual([{ kind: "forward.apply", state: "created" }]);
  });

  it("list shows active forwards only, get shows any state, delete revokes once and is idempotent", async () => {
    const { token, base } = await withRouter();
    const a = (await h.request("POST", base, { token, body: body({ dst_port: 80 }) })).body;
    const b = (await h.request("POST", base, { token, body: body({ dst_port: 443, expire_after_minutes: 1440 }) }))
      .body;
    expect(a.port).not.toBe(b.port);
    const listed = await h.request("GET", base, { token });
    expect(listed.status).toBe(200);
    expect(listed.body.map((f: { id: string }) => f.id)).toEqual([a.id, b.id]);
    expect(listed.body[1].time_to_expire).toMatch(/^(1 day|23 hours) from now$/);

    const deleted = await h.request("DELETE", `${base}/${a.id}`, { token });
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expect((await h.request("GET", base, { token })).body.map((f: { id: string }) => f.id)).toEqual([b.id]);
    const gone = await h.request("GET", `${base}/${a.id}`, { token });
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({ id: a.id, revoked_early: true, expired: false, time_to_expire: "revoked" });

    const again = await h.refused("DELETE", `${base}/${a.id}`, { token });
    expect(again.status).toBe(204);
    const jobs = await h.db.query<{ kind: string }>(
      `select data->>'kind' as kind from pgboss.job where name = 'router.jobs' and data->>'forward_id' = $1 order by created_on`,
      [a.id],
    );
    expect(jobs.map((j) => j.kind)).toEqual(["forward.apply", "forward.remove"]);
  });

  it("time_to_expire counts down and the forward reads expired once its time has passed", async () => {
    const { token, base } = await withRouter();
    const created = (await h.request("POST", base, { token, body: body({ expire_after_minutes: 10 }) })).body;
    expect(created.time_to_expire).toBe("10 minutes from now");
    try {
      h.clock.offsetMs = 1000;
      expect((await h.request("GET", `${base}/${created.id}`, { token })).body.time_to_expire).toBe(
        "9 minutes from now",
      );
      h.clock.offsetMs = 10 * 60_000;
      const expired = (await h.request("GET", `${base}/${created.id}`, { token })).body;
      expect(expired).toMatchObject({ expired: true, revoked_early: false, time_to_expire: "expired" });
      expect((await h.request("GET", base, { token })).body).toEqual([]);
      // Deleting after expiry closes it as expired (not revoked early) and still answers 204.
      expect((await h.request("DELETE", `${base}/${created.id}`, { token })).status).toBe(204);
      const row = await h.db.query<{ status: string }>(`select status from forwards where id = $1`, [created.id]);
      expect(row[0]?.status).toBe("expired");
    } finally {
      h.clock.offsetMs = 0;
    }
  });

  it("answers 404 alike for unknown, malformed and other teams' routers and forwards", async () => {
    const mine = await withRouter();
    const theirs = await withRouter();
    const forward = (await h.request("POST", mine.base, { token: mine.token, body: body() })).body;
    const other = (await h.request("POST", theirs.base, { token: theirs.token, body: body() })).body;
    const cases: Array<[string, string]> = [
      ["GET", `/api/routers/${crypto.randomUUID()}/transient-forwarding`],
      ["GET", "/api/routers/not-a-uuid/transient-forwarding"],
      ["GET", theirs.base],
      ["POST", theirs.base],
      ["GET", `${theirs.base}/${other.id}`],
      ["DELETE", `${theirs.base}/${other.id}`],
      ["GET", `${mine.base}/${other.id}`],
      ["GET", `${mine.base}/${crypto.randomUUID()}`],
      ["GET", `${mine.base}/not-a-uuid`],
      ["DELETE", `${mine.base}/${crypto.randomUUID()}`],
    ];
    for (const [method, path] of cases) {
      const res = await h.refused(method, path, { token: mine.token, ...(method === "POST" ? { body: body() } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toMatchObject({ status: "fail", message: expect.stringMatching(/not found/) });
    }
    expect((await h.request("GET", `${theirs.base}/${other.id}`, { token: theirs.token })).body.revoked_early).toBe(
      false,
    );
    expect((await h.request("GET", `${mine.base}/${forward.id}`, { token: mine.token })).status).toBe(200);
  });

  it("refuses a router without an assigned tunnel address, or with one outside TUNNEL_NETWORK, with 409", async () => {
    const user = await h.login();
    for (const tunnelIp of [null, "127.0.0.1"]) {
      const router = await makeRouter(h.db, user, { tunnelIp });
      const res = await h.refused("POST", `/api/routers/${router.id}/transient-forwarding`, {
        token: user.token,
        body: body(),
      });
      expect(res.status, String(tunnelIp)).toBe(409);
      expect(res.body).toMatchObject({ status: "fail", message: expect.stringMatching(/tunnel_ip/) });
    }
  });

  it("needs routers:read to read and routers:write to change, and a token at all", async () => {
    const reader = await withRouter({ scope: "routers:read" });
    expect((await h.request("GET", reader.base, { token: reader.token })).status).toBe(200);
    const create = await h.refused("POST", reader.base, { token: reader.token, body: body() });
    expect(create.status).toBe(403);
    expect(create.body).toMatchObject({ status: "fail", message: expect.stringMatching(/routers:write/) });
    expect((await h.refused("GET", reader.base, {})).status).toBe(401);
  });

  it("accepts application/json with a charset", async () => {
    const { token, base } = await withRouter();
    const res = await h.request("POST", base, {
      token,
      rawBody: JSON.stringify(body()),
      headers: { "content-type": "application/json; charset=utf-8" },
    });
    expect(res.status).toBe(201);
  });

  it("serves the same operations over tRPC with path parameters as fields", async () => {
    const { token, routerId } = await withRouter();
    const client = createClient({ url: h.api.url, token, batch: false });
    const created = await client.forwards.create.mutate({ router_id: routerId, ...body({ allow_from: "1.1.1.1/32" }) });
    expect(created).toMatchObject({ allow_only_cidr: "1.1.1.1/32", entry_point: ENTRY_POINT });
    expect((await client.forwards.list.query({ router_id: routerId })).map((f) => f.id)).toEqual([created.id]);
    expect((await client.forwards.get.query({ router_id: routerId, id: created.id })).id).toBe(created.id);
    await client.forwards.delete.mutate({ router_id: routerId, id: created.id });
    expect(await client.forwards.list.query({ router_id: routerId })).toEqual([]);
    await expect(client.forwards.get.query({ router_id: routerId, id: crypto.randomUUID() })).rejects.toMatchObject({
      data: { httpStatus: 404 },
    });
  });

  it("documents the four operations in the OpenAPI document", async () => {
    const doc = (await h.request("GET", "/openapi.json")).body;
    const list = doc.paths["/api/routers/{router_id}/transient-forwarding"];
    const one = doc.paths["/api/routers/{router_id}/transient-forwarding/{id}"];
    expect(Object.keys(list).sort()).toEqual(["get", "post"]);
    expect(Object.keys(one).sort()).toEqual(["delete", "get"]);
    expect(Object.keys(list.post.responses)).toContain("201");
    expect(Object.keys(one.delete.responses)).toContain("204");
  });
});

describe("create validation (docs/api.md, Tunnel agent and entry point)", () => {
  let ctx: Awaited<ReturnType<typeof withRouter>>;
  beforeAll(async () => {
    ctx = await withRouter();
  });

  const accepted = async (overrides: Record<string, unknown>) => {
    const res = await h.request("POST", ctx.base, { token: ctx.token, body: body(overrides) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    // Keeps the router under its cap of active forwards.
    expect((await h.request("DELETE", `${ctx.base}/${res.body.id}`, { token: ctx.token })).status).toBe(204);
    return res.body;
  };

  const rejected = async (overrides: Record<string, unknown>, field: string) => {
    const res = await h.refused("POST", ctx.base, { token: ctx.token, body: body(overrides) });
    expect(res.status, JSON.stringify(overrides)).toBe(422);
    expect(res.body.status).toBe("fail");
    expect(Object.keys(res.body.data)).toEqual([field]);
    expect(res.body.message).toContain(field);
    return res.body.data[field] as string;
  };

  it.each([10, 1440])("accepts expire_after_minutes %d", async (minutes) => {
    const created = await accepted({ expire_after_minutes: minutes });
    expect(created.time_to_expire).toBe(minutes === 10 ? "10 minutes from now" : "1 day from now");
  });

  it.each([9, 1441, 0, 60.5, "60", null, true, [60]])("refuses expire_after_minutes %j", async (minutes) => {
    expect(await rejected({ expire_after_minutes: minutes }, "expire_after_minutes")).toBe(
      "must be an integer between 10 and 1440",
    );
  });

  it.each([1, 65535])("accepts dst_port %d", async (port) => {
    expect((await accepted({ dst_port: port })).dst_port).toBe(port);
  });

  it.each([0, 65536, -22, 22.5, "22", true, [22], ""])("refuses dst_port %j", async (port) => {
    expect(await rejected({ dst_port: port }, "dst_port")).toBe("must be an integer between 1 and 65535");
  });

  it.each([
    ["8.8.8.8/24", "8.8.8.0/24"],
    ["8.8.8.8/32", "8.8.8.8/32"],
    ["8.8.8.8", "8.8.8.8/32"],
  ])("accepts allow_from %s as %s", async (allow, cidr) => {
    expect((await accepted({ allow_from: allow })).allow_only_cidr).toBe(cidr);
  });

  it.each([
    ["8.8.8.0/23", /between \/24 and \/32/],
    ["8.8.8.8/33", /prefix length/],
    ["10.1.2.0/24", /publicly routed/],
    ["127.0.0.0/23", /between \/24 and \/32/],
    ["203.0.113.0/24", /documentation/],
    ["100.64.0.1", /carrier-grade NAT/],
  ])("refuses allow_from %s", async (allow, message) => {
    expect(await rejected({ allow_from: allow }, "allow_from")).toMatch(message);
  });

  it.each([
    ["127.0.0.1", "127.0.0.1/32"],
    ["127.64.0.0/24", "127.64.0.0/24"],
  ])("in development (NODE_ENV not production) accepts a loopback allow_from %s as %s", async (allow, cidr) => {
    expect((await accepted({ allow_from: allow })).allow_only_cidr).toBe(cidr);
  });

  it.each(["10.0.0.5", "172.16.0.1", "192.168.1.1", "8.8.4.4"])("accepts dst_address %s", async (address) => {
    expect((await accepted({ dst_address: address })).dst_address).toBe(address);
  });

  it.each([
    "127.0.0.1",
    "169.254.0.1",
    "224.0.0.1",
    "100.64.0.1",
    "192.0.2.1",
    "240.0.0.1",
    "0.0.0.0",
    "255.255.255.255",
    "127.1",
    "0x7f.0.0.1",
    "017700000001",
    "0",
    "192.168.001.1",
    "::1",
  ])("refuses dst_address %j", async (address) => {
    await rejected({ dst_address: address }, "dst_address");
  });

  const injections = [
    '"',
    '" ; /system reboot ; "',
    ";/system reboot",
    "[/system reboot]",
    "]",
    "\n/system reboot",
    "$(x)",
    "$x",
    "\\",
  ];
  it.each(injections)("refuses the injection %j in every field", async (payload) => {
    await rejected({ dst_address: `192.168.88.10${payload}` }, "dst_address");
    await rejected({ allow_from: `8.8.8.8${payload}` }, "allow_from");
    await rejected({ dst_port: `22${payload}` }, "dst_port");
    await rejected({ expire_after_minutes: `60${payload}` }, "expire_after_minutes");
  });

  it("reports every missing field and refuses a body that is not an object", async () => {
    const res = await h.refused("POST", ctx.base, { token: ctx.token, body: {} });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.data).sort()).toEqual([
      "allow_from",
      "dst_address",
      "dst_port",
      "expire_after_minutes",
    ]);
    expect(
      (
        await h.refused("POST", ctx.base, {
          token: ctx.token,
          rawBody: "{nope",
          headers: { "content-type": "application/json" },
        })
      ).status,
    ).toBe(400);
  });
});

/**
 * Issue 20, finding 7 replayed (docs/api.md "Tunnel agent and entry point"): several small
 * organizations under one billing root drained a port pool with no card on file. Quotas are the
 * billing root's, over its whole tree, and TRIAL_FORWARDS while it has no payment method.
 */
const quotaBody = { expire_after_minutes: 30, dst_port: 22, dst_address: "10.0.0.2", allow_from: "8.8.8.8" };

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
  h.request("POST", tenant.path, { token: tenant.token, body: quotaBody });

describe("forward quotas per billing root (TRIAL_FORWARDS, FORWARDS_PER_ORG)", () => {
  it("trial organizations under one root share TRIAL_FORWARDS: n ok, n+1 refused 429 with Retry-After in every one of them", async () => {
    const { tenants } = await resellerTree();
    // One forward in each of the four organizations: n = TRIAL = 4.
    const made = [];
    for (const tenant of tenants) made.push(await create(tenant));
    expect(made.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    for (const tenant of tenants) {
      const refused = await h.refused("POST", tenant.path, { token: tenant.token, body: quotaBody });
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
      body: { ...quotaBody, router_id: tenants[1]?.path.split("/")[3] },
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
    const over = await h.refused("POST", tenants[1]?.path ?? "", { token: tenants[1]?.token ?? "", body: quotaBody });
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ limit: PER_ROOT, trial: false });

    // Another reseller without a card is still held to its trial.
    const other = await resellerTree();
    const mine = [];
    for (let i = 0; i < TRIAL + 1; i++) mine.push((await create(other.tenants[i % 4] ?? other.tenants[0]!)).status);
    expect(mine).toEqual([201, 201, 201, 201, 429]);
  });
});

// Temporary router access's HTTP face (its rules, and the quota it shares with forwards:
// features/access/access.service.test.ts).
describe("POST /api/routers/{router_id}/access", () => {
  const accessBody = { service: "winbox", level: "read", expire_after_minutes: 15, allow_from: "8.8.8.8" };

  it("answers 201, and 429 with Retry-After once forwards and sessions hold the trial quota", async () => {
    const user = await h.login();
    const [a, b] = [await makeRouter(h.db, user), await makeRouter(h.db, user)];
    const access = (routerId: string) =>
      h.request("POST", `/api/routers/${routerId}/access`, { token: user.token, body: accessBody });
    const created = await access(a.id);
    expect(created.status).toBe(201);
    expect(created.body.status).toBe("success");
    expect((await access(a.id)).status).toBe(201);
    for (let i = 0; i < TRIAL - 2; i++) {
      expect(
        (await h.request("POST", `/api/routers/${b.id}/transient-forwarding`, { token: user.token, body: body() }))
          .status,
      ).toBe(201);
    }
    const refused = await h.refused("POST", `/api/routers/${b.id}/access`, { token: user.token, body: accessBody });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(refused.body).toMatchObject({ status: "fail", limit: TRIAL, trial: true });
  });
});
