import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";
import { loginWithAccount } from "../testing/billing-fixtures.ts";

/** docs/api.md "Authentication": answers that carry a secret carry `Cache-Control: no-store`. */
let h: ApiHarness;
const HOOK_SECRET = "login-hook-secret-of-at-least-32-bytes!!";
let owner: Awaited<ReturnType<typeof loginWithAccount>>;
beforeAll(async () => {
  h = await startApiHarness({ AUTH_LOGIN_HOOK_SECRET: HOOK_SECRET });
  owner = await loginWithAccount(h);
});
afterAll(async () => {
  await h?.close();
});

const json = { "content-type": "application/json" };
/** `trpc-accept` sends the call through tRPC's own adapter instead of the fast path. */
const VIA = { "fast path": {}, "tRPC adapter": { "trpc-accept": "application/json" } } as const;

describe("Cache-Control: no-store on answers with secrets", () => {
  it("REST: dev-login, login-hook, setup intent, router enroll", async () => {
    const login = await h.request("POST", "/v1/auth/dev-login", { body: { email: "ns@example.com" } });
    expect(login.status).toBe(200);
    expect(login.headers.get("cache-control")).toBe("no-store");
    const hook = await h.request("POST", "/v1/auth/login-hook", {
      headers: { authorization: `Bearer ${HOOK_SECRET}` },
      body: { email: "ns@example.com" },
    });
    expect(hook.status).toBe(200);
    expect(hook.headers.get("cache-control")).toBe("no-store");
    const intent = await h.request("POST", "/v1/account/setup-intent", { token: owner.token });
    expect(intent.status).toBe(201);
    expect(intent.headers.get("cache-control")).toBe("no-store");
    const enrolled = await h.request("POST", "/api/routers", { token: owner.token, body: { name: "NS" } });
    expect(enrolled.status).toBe(201);
    expect(enrolled.headers.get("cache-control")).toBe("no-store");
  });

  it("REST: answers without secrets are not marked", async () => {
    const account = await h.request("GET", "/v1/account", { token: owner.token });
    expect(account.status).toBe(200);
    expect(account.headers.get("cache-control")).toBeNull();
  });

  for (const [name, headers] of Object.entries(VIA)) {
    it(`tRPC (${name}): single and batched calls`, async () => {
      const single = await fetch(`${h.api.url}/trpc/auth.devLogin`, {
        method: "POST",
        headers: { ...json, ...headers },
        body: JSON.stringify({ email: "ns-trpc@example.com" }),
      });
      expect(single.status).toBe(200);
      expect(single.headers.get("cache-control")).toBe("no-store");
      const batch = await fetch(`${h.api.url}/trpc/paymentMethods.createSetupIntent,routers.enroll?batch=1`, {
        method: "POST",
        headers: { ...json, ...headers, authorization: `Bearer ${owner.token}` },
        body: JSON.stringify({ 1: { name: "Batch" } }),
      });
      expect(batch.status).toBe(200);
      expect(batch.headers.get("cache-control")).toBe("no-store");
      const plain = await fetch(`${h.api.url}/trpc/account.get`, {
        headers: { ...headers, authorization: `Bearer ${owner.token}` },
      });
      expect(plain.status).toBe(200);
      expect(plain.headers.get("cache-control")).toBeNull();
    });
  }
});
