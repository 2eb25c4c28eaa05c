import { makeRouter, databaseFingerprint } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";
import { EMULATOR_SECRET_KEY, emulatorSdk, loginWithAccount } from "../testing/billing-fixtures.ts";

/**
 * docs/api.md "Errors": text holding a control character or a lone surrogate is refused with 422
 * naming the field, on every endpoint, and nothing is written anywhere (database and processor).
 */
let h: ApiHarness;
const HOOK_SECRET = "login-hook-secret-of-at-least-32-bytes!!";
let owner: Awaited<ReturnType<typeof loginWithAccount>>;
let fresh: Awaited<ReturnType<ApiHarness["login"]>>;
let routerId: string;
let forwardId: string;
let forwardRouterId: string;

beforeAll(async () => {
  h = await startApiHarness({ AUTH_LOGIN_HOOK_SECRET: HOOK_SECRET });
  owner = await loginWithAccount(h);
  fresh = await h.login();
  const enrolled = await h.request("POST", "/api/routers", { token: owner.token, body: { name: "Edge" } });
  expect(enrolled.status).toBe(201);
  routerId = enrolled.body.data.router.id;
  // Forwards need a router that reported a tunnel address.
  forwardRouterId = (await makeRouter(h.db, owner, { tunnelIp: "100.64.0.51" })).id;
  const forward = await h.request("POST", `/api/routers/${forwardRouterId}/transient-forwarding`, {
    token: owner.token,
    body: { expire_after_minutes: 60, dst_port: 22, dst_address: "192.168.88.10", allow_from: "8.8.8.8" },
  });
  expect(forward.status).toBe(201);
  forwardId = forward.body.id ?? forward.body.data?.id;
});
afterAll(async () => {
  await h?.close();
});

/** Everything the processor holds that these requests could touch. */
const processorState = async (): Promise<string> => {
  const stripe = emulatorSdk(h, EMULATOR_SECRET_KEY);
  const customers = await stripe.customers.list({ limit: 100 });
  const methods = await stripe.paymentMethods.list({ customer: owner.customerId, limit: 100 });
  return JSON.stringify({ customers: customers.data, methods: methods.data });
};

const BAD = [
  ["NUL", "x\u0000"],
  ["U+001B", "x\u001by"],
  ["a lone surrogate", "x\ud800"],
] as const;

type Case = { name: string; method: string; path: () => string; field: string; body: (bad: string) => unknown };

const token = (c: Case) => (c.name.startsWith("account.create") ? fresh.token : owner.token);

const BODY_CASES: Case[] = [
  {
    name: "dev-login email",
    method: "POST",
    path: () => "/v1/auth/dev-login",
    field: "email",
    body: (b) => ({ email: `a${b}@example.com` }),
  },
  {
    name: "dev-login scope",
    method: "POST",
    path: () => "/v1/auth/dev-login",
    field: "scope",
    body: (b) => ({ email: "a@example.com", scope: b }),
  },
  {
    name: "dev-login timezone",
    method: "POST",
    path: () => "/v1/auth/dev-login",
    field: "timezone",
    body: (b) => ({ email: "a@example.com", timezone: `Europe/${b}` }),
  },
  {
    name: "account.create name",
    method: "POST",
    path: () => "/v1/account",
    field: "name",
    body: (b) => ({ name: b, email: "a@example.com", address: { country: "DE" } }),
  },
  {
    name: "account.create email",
    method: "POST",
    path: () => "/v1/account",
    field: "email",
    body: (b) => ({ name: "A", email: `a${b}@example.com`, address: { country: "DE" } }),
  },
  {
    name: "account.create country",
    method: "POST",
    path: () => "/v1/account",
    field: "address.country",
    body: (b) => ({ name: "A", email: "a@example.com", address: { country: `D${b}` } }),
  },
  ...["name", "email"].map((field) => ({
    name: `account.update ${field}`,
    method: "PATCH",
    path: () => "/v1/account",
    field,
    body: (b: string) => ({ [field]: field === "email" ? `a${b}@example.com` : `Evil${b}` }),
  })),
  ...["city", "country", "line1", "line2", "postal_code", "state"].map((f) => ({
    name: `account.update address.${f}`,
    method: "PATCH",
    path: () => "/v1/account",
    field: `address.${f}`,
    body: (b: string) => ({ name: "Renamed", address: { [f]: `D${b}` } }),
  })),
  {
    name: "account PUT name",
    method: "PUT",
    path: () => "/v1/account",
    field: "name",
    body: (b) => ({ name: `Evil${b}` }),
  },
  {
    name: "paymentMethods.save id",
    method: "POST",
    path: () => "/v1/account/tax",
    field: "id",
    body: (b) => ({ id: `pm_${b}` }),
  },
  {
    name: "paymentMethods.save alias id",
    method: "POST",
    path: () => "/v1/account/payment-methods",
    field: "id",
    body: (b) => ({ id: `pm_${b}` }),
  },
  {
    name: "routers.enroll name",
    method: "POST",
    path: () => "/api/routers",
    field: "name",
    body: (b) => ({ name: `R${b}` }),
  },
  {
    name: "metadata name",
    method: "PATCH",
    path: () => `/api/routers/${routerId}/metadata`,
    field: "name",
    body: (b) => ({ name: `R${b}` }),
  },
  {
    name: "metadata free-form value",
    method: "PATCH",
    path: () => `/api/routers/${routerId}/metadata`,
    field: "rack",
    body: (b) => ({ rack: `A${b}` }),
  },
  {
    name: "metadata nested value",
    method: "PATCH",
    path: () => `/api/routers/${routerId}/metadata`,
    field: "site.floor.0",
    body: (b) => ({ site: { floor: [`A${b}`] } }),
  },
  {
    name: "metadata nested key",
    method: "PATCH",
    path: () => `/api/routers/${routerId}/metadata`,
    field: "site.k\u0000",
    body: () => ({ site: { "k\u0000": 1 } }),
  },
  {
    name: "forward dst_address",
    method: "POST",
    path: () => `/api/routers/${forwardRouterId}/transient-forwarding`,
    field: "dst_address",
    body: (b) => ({ expire_after_minutes: 60, dst_port: 22, dst_address: `192.168.88.1${b}`, allow_from: "8.8.8.8" }),
  },
  {
    name: "forward allow_from",
    method: "POST",
    path: () => `/api/routers/${forwardRouterId}/transient-forwarding`,
    field: "allow_from",
    body: (b) => ({ expire_after_minutes: 60, dst_port: 22, dst_address: "192.168.88.10", allow_from: `8.8.8.8${b}` }),
  },
];

describe("the text rule on every body field", () => {
  for (const c of BODY_CASES) {
    it.each(BAD)(`${c.name}: %s answers 422 naming the field; nothing written`, async (_label, bad) => {
      const counts = await databaseFingerprint(h.db);
      const processor = await processorState();
      const res = await h.request(c.method, c.path(), { token: token(c), body: c.body(bad) });
      expect(res.status).toBe(422);
      const fields = c.path().startsWith("/api/") ? res.body.data : res.body.errors;
      const field = c.field === "site.k\u0000" ? "site.k\u0000" : c.field;
      expect(Object.keys(fields ?? {})).toContain(field);
      expect(await databaseFingerprint(h.db)).toEqual(counts);
      expect(await processorState()).toBe(processor);
    });
  }

  it("a metadata key holding a control character is named", async () => {
    const res = await h.request("PATCH", `/api/routers/${routerId}/metadata`, {
      token: owner.token,
      body: { "bad\u0007key": 1 },
    });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.data)).toEqual(["bad\u0007key"]);
  });

  it("the processor customer keeps its old name after a refused rename", async () => {
    const stripe = emulatorSdk(h, EMULATOR_SECRET_KEY);
    const res = await h.request("PATCH", "/v1/account", { token: owner.token, body: { name: "Evil\u0000" } });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({ name: [expect.stringMatching(/control characters/)] });
    expect((await stripe.customers.retrieve(owner.customerId)) as { name: string }).toMatchObject({ name: "Card Co" });
  });

  it("login-hook email", async () => {
    for (const [, bad] of BAD) {
      const counts = await databaseFingerprint(h.db);
      const res = await h.request("POST", "/v1/auth/login-hook", {
        headers: { authorization: `Bearer ${HOOK_SECRET}` },
        body: { email: `a${bad}@example.com` },
      });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.errors)).toContain("email");
      expect(await databaseFingerprint(h.db)).toEqual(counts);
    }
  });

  it("over tRPC too (same schemas)", async () => {
    const res = await fetch(`${h.api.url}/trpc/account.update`, {
      method: "POST",
      headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Evil\u0000" }),
    });
    // docs/api.md "Errors": the same 422 as REST, tRPC code UNPROCESSABLE_CONTENT, field paths in data.errors.
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: { data: { code: string; errors: Record<string, string[]> } } };
    expect(body.error.data.code).toBe("UNPROCESSABLE_CONTENT");
    expect(Object.keys(body.error.data.errors)).toEqual(["name"]);
  });
});

describe("the text rule on path parameters", () => {
  // REST path parameters reach the procedures undecoded (a `%00` stays three characters), so they
  // can never carry a control character; the same fields over tRPC are checked by the schemas.
  const TRPC_CASES: Array<{
    procedure: string;
    type: "query" | "mutation";
    input: (bad: string) => object;
    field: string;
  }> = [
    { procedure: "paymentMethods.delete", type: "mutation", input: (b) => ({ id: `pm_${b}` }), field: "id" },
    { procedure: "routers.remove", type: "mutation", input: (b) => ({ router_id: b }), field: "router_id" },
    { procedure: "routers.metadata", type: "query", input: (b) => ({ router_id: b }), field: "router_id" },
    { procedure: "routers.metrics", type: "query", input: (b) => ({ router_id: b }), field: "router_id" },
    { procedure: "routers.faults", type: "query", input: (b) => ({ router_id: b }), field: "router_id" },
    { procedure: "routers.oem", type: "query", input: (b) => ({ router_id: b }), field: "router_id" },
    { procedure: "forwards.list", type: "query", input: (b) => ({ router_id: b }), field: "router_id" },
    { procedure: "forwards.get", type: "query", input: (b) => ({ router_id: forwardRouterId, id: b }), field: "id" },
    {
      procedure: "forwards.delete",
      type: "mutation",
      input: (b) => ({ router_id: forwardRouterId, id: b }),
      field: "id",
    },
  ];
  for (const c of TRPC_CASES) {
    it.each(BAD)(`tRPC ${c.procedure}: %s names ${c.field}`, async (_label, bad) => {
      const counts = await databaseFingerprint(h.db);
      const input = JSON.stringify(c.input(bad));
      const res =
        c.type === "query"
          ? await fetch(`${h.api.url}/trpc/${c.procedure}?input=${encodeURIComponent(input)}`, {
              headers: { authorization: `Bearer ${owner.token}` },
            })
          : await fetch(`${h.api.url}/trpc/${c.procedure}`, {
              method: "POST",
              headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
              body: input,
            });
      const body = (await res.json()) as { error: { data: { httpStatus: number; errors: Record<string, string[]> } } };
      expect([res.status, body.error.data.httpStatus]).toEqual([422, 422]);
      expect(Object.keys(body.error.data.errors)).toContain(c.field);
      expect(await databaseFingerprint(h.db)).toEqual(counts);
    });
  }

  it.each([
    ["DELETE", "/api/routers/%00"],
    ["GET", "/api/routers/a%1F/metadata"],
    ["DELETE", "/v1/account/payment-methods/pm_%00"],
  ])("REST %s %s is refused without a write", async (method, path) => {
    const counts = await databaseFingerprint(h.db);
    const res = await h.request(method, path, { token: owner.token });
    expect([404, 422]).toContain(res.status);
    expect(await databaseFingerprint(h.db)).toEqual(counts);
  });

  it("the forward used above still exists", async () => {
    const res = await h.request("GET", `/api/routers/${forwardRouterId}/transient-forwarding/${forwardId}`, {
      token: owner.token,
    });
    expect(res.status).toBe(200);
  });
});
