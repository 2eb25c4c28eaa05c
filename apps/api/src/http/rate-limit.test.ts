import { request as httpRequest } from "node:http";
import { makeRouter } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";

/** docs/api.md "Authentication": rate limits per credential and per dev-login address, with Retry-After. */
const LIMIT = 5;
let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness({ RATE_LIMIT_PER_MINUTE: String(LIMIT) }, { devLoginPerMinute: 10 });
  // Counts are kept per clock minute, shared by all processes: the API's clock starts these tests
  // just after a minute begins, so no window ends halfway through an n / n+1 check.
  h.clock.offsetMs = 60_000 - (Date.now() % 60_000) + 500;
});
afterAll(async () => {
  await h?.close();
});

const expectRetryAfter = (headers: Headers) => {
  const value = headers.get("retry-after");
  expect(value).toMatch(/^\d+$/);
  expect(Number(value)).toBeGreaterThanOrEqual(1);
  expect(Number(value)).toBeLessThanOrEqual(60);
};

/** A dev-login from a chosen loopback address (127.0.0.0/8 all reach the API). */
const devLoginFrom = (localAddress: string, email: string) =>
  new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>(
    (resolve, reject) => {
      const url = new URL(`${h.api.url}/v1/auth/dev-login`);
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          localAddress,
          headers: { "content-type": "application/json" },
        },
        (res) => {
          let body = "";
          res.on("data", (chunk) => {
            body += chunk;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify({ email }));
    },
  );

describe("API rate limit per credential", () => {
  it("n requests pass, n+1 answers 429 with Retry-After in the /v1 shape; REST and tRPC count together", async () => {
    const a = await h.login();
    // LIMIT - 1 over REST, the last allowed one over tRPC.
    for (let i = 0; i < LIMIT - 1; i++) {
      const res = await h.request("GET", "/v1/account", { token: a.token });
      expect(res.status).toBe(422);
    }
    const trpc = await fetch(`${h.api.url}/trpc/account.get`, { headers: { authorization: `Bearer ${a.token}` } });
    expect(trpc.status).toBe(422);
    const refused = await h.request("GET", "/v1/account", { token: a.token });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      message: expect.stringMatching(/per minute/),
      code: "rate_limited",
      request_id: expect.any(String),
    });
    expectRetryAfter(refused.headers);

    const api = await h.request("GET", "/api/routers", { token: a.token });
    expect(api.status).toBe(429);
    expect(api.body).toMatchObject({ status: "fail", code: "rate_limited", request_id: expect.any(String) });
    expectRetryAfter(api.headers);

    const viaTrpc = await fetch(`${h.api.url}/trpc/account.get`, { headers: { authorization: `Bearer ${a.token}` } });
    expect(viaTrpc.status).toBe(429);
    expectRetryAfter(viaTrpc.headers);
    expect(((await viaTrpc.json()) as { error: { data: { appCode: string } } }).error.data.appCode).toBe(
      "rate_limited",
    );

    const batch = await fetch(`${h.api.url}/trpc/account.get,routers.list?batch=1&input=%7B%7D`, {
      headers: { authorization: `Bearer ${a.token}` },
    });
    expect(batch.status).toBe(429);
    expectRetryAfter(batch.headers);

    // Another credential is not affected.
    const b = await h.login();
    expect((await h.request("GET", "/v1/account", { token: b.token })).status).toBe(422);
  });

  it("counts per token subject: a second token of the same user shares the count", async () => {
    const email = `same-${crypto.randomUUID()}@example.com`;
    const first = await h.login(email);
    for (let i = 0; i < LIMIT; i++)
      expect((await h.request("GET", "/v1/account", { token: first.token })).status).toBe(422);
    const second = await h.login(email);
    expect((await h.request("GET", "/v1/account", { token: second.token })).status).toBe(429);
  });

  it("requests without a valid token are not counted against anyone", async () => {
    const a = await h.login();
    for (let i = 0; i < LIMIT + 2; i++)
      expect((await h.request("GET", "/v1/account", { token: "forged" })).status).toBe(401);
    expect((await h.request("GET", "/v1/account", { token: a.token })).status).toBe(422);
  });
});

describe("dev-login rate limit per source address", () => {
  it("10 per minute from one address; the 11th answers 429 with Retry-After; another address is not affected", async () => {
    for (let i = 0; i < 10; i++) {
      const ok = await devLoginFrom("127.0.0.2", `dl-${i}-${crypto.randomUUID()}@example.com`);
      expect(ok.status).toBe(200);
      expect(ok.headers["cache-control"]).toBe("no-store");
    }
    const refused = await devLoginFrom("127.0.0.2", `dl-x-${crypto.randomUUID()}@example.com`);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({ code: "rate_limited", request_id: expect.any(String) });
    expect(refused.headers["retry-after"]).toMatch(/^\d+$/);
    const other = await devLoginFrom("127.0.0.3", `dl-y-${crypto.randomUUID()}@example.com`);
    expect(other.status).toBe(200);
  });
});

describe("every 429 carries Retry-After", () => {
  it("the per-router forward cap", async () => {
    const user = await startApiHarness().then(async (other) => {
      try {
        const u = await other.login();
        const router = await makeRouter(other.db, u, { tunnelIp: "100.64.0.61" });
        const body = { expire_after_minutes: 60, dst_port: 22, dst_address: "192.168.88.10", allow_from: "8.8.8.8" };
        let last: Awaited<ReturnType<ApiHarness["request"]>> | undefined;
        for (let i = 0; i < 30; i++) {
          last = await other.request("POST", `/api/routers/${router.id}/transient-forwarding`, {
            token: u.token,
            body,
          });
          if (last.status !== 201) break;
        }
        return last;
      } finally {
        await other.close();
      }
    });
    expect(user?.status).toBe(429);
    expect(user?.headers.get("retry-after")).toMatch(/^\d+$/);
  });
});
