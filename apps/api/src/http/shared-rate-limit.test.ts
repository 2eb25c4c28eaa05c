import { request as httpRequest } from "node:http";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { OffsetClock } from "@fleet/shared/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadApiConfig } from "../config.ts";
import { composeApi, type RunningApi } from "../start-api.ts";

/**
 * Issue 20, findings 12 and 14 replayed over the wire (docs/api.md "Rate limits"): two API
 * processes on one database share every count, so N replicas do not allow N times the limit;
 * requests without a valid credential are limited per source address, which is taken from
 * `X-Forwarded-For` only when the peer is a TRUST_PROXY proxy.
 */
const PER_CREDENTIAL = 12;
const UNAUTHENTICATED = 6;
let db: TestDatabase;
const apis: RunningApi[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const env = {
    PORT: "0",
    STRIPE_EMULATOR_PORT: "0",
    DATA_DIR: "memory",
    AUTH_DEV_LOGIN: "true",
    LOG_LEVEL: "silent",
    JWT_SECRET: `shared-${crypto.randomUUID()}`,
    RATE_LIMIT_PER_MINUTE: String(PER_CREDENTIAL),
    RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: String(UNAUTHENTICATED),
    TRUST_PROXY: "127.0.0.1/32",
  };
  // Counts are kept per clock minute: both processes' clock starts these tests just after a minute
  // begins, so no window ends halfway through an n / n+1 check.
  const shift = 60_000 - (Date.now() % 60_000) + 500;
  for (let i = 0; i < 2; i++) {
    apis.push(
      await composeApi(
        { config: loadApiConfig(env), db, logger: pino({ level: "silent" }) },
        { devLoginPerMinute: 1000, wallClock: new OffsetClock(shift) },
      ),
    );
  }
});
afterAll(async () => {
  for (const api of apis) await api.close();
  await db?.close();
});

/** A GET from a chosen loopback source address, with optional headers. */
const get = (api: RunningApi, path: string, options: { from?: string; headers?: Record<string, string> } = {}) =>
  new Promise<{ status: number; retryAfter: string | undefined }>((resolve, reject) => {
    const url = new URL(`${api.url}${path}`);
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "GET",
        localAddress: options.from ?? "127.0.0.1",
        headers: options.headers,
        agent: false,
      },
      (res) => {
        res.resume();
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"] as string | undefined }),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });

const devLogin = async (api: RunningApi) => {
  const res = await fetch(`${api.url}/v1/auth/dev-login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `shared-${crypto.randomUUID()}@example.com` }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
};

const randomKey = () => `fk_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;

describe("the per-credential limit across two API processes (finding 14)", () => {
  it("allows the limit once in all, not once per process; both refuse with Retry-After afterwards", async () => {
    const [a, b] = apis as [RunningApi, RunningApi];
    const token = await devLogin(a);
    const auth = { authorization: `Bearer ${token}` };
    const statuses: number[] = [];
    // Alternating between the two processes, as a load balancer would: twice the limit is tried.
    for (let i = 0; i < 2 * PER_CREDENTIAL; i++)
      statuses.push((await get(i % 2 ? b : a, "/api/routers", { headers: auth })).status);
    const admitted = statuses.filter((s) => s === 200).length;
    // Each process alone would have admitted PER_CREDENTIAL. One after another, the last ones
    // are counted in the shared store before they are admitted: exactly the limit in all.
    expect(admitted).toBe(PER_CREDENTIAL);
    expect(statuses.slice(-4)).toEqual([429, 429, 429, 429]);
    for (const api of apis) {
      const refused = await get(api, "/api/routers", { headers: auth });
      expect(refused.status).toBe(429);
      expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(refused.retryAfter)).toBeLessThanOrEqual(60);
    }
    // Another credential is untouched.
    expect((await get(b, "/api/routers", { headers: { authorization: `Bearer ${await devLogin(b)}` } })).status).toBe(
      200,
    );
  });
});

describe("requests without a valid credential, per source address (finding 12) behind TRUST_PROXY (finding 14)", () => {
  it("n random keys answer 401, the n+1st 429 on either process; another client and valid tokens are not affected", async () => {
    const [a, b] = apis as [RunningApi, RunningApi];
    const behindProxy = { "x-forwarded-for": "198.51.100.7" };
    const statuses: number[] = [];
    for (let i = 0; i < UNAUTHENTICATED + 2; i++) {
      statuses.push(
        (
          await get(i % 2 ? b : a, "/api/routers", {
            headers: { ...behindProxy, authorization: `Bearer ${randomKey()}` },
          })
        ).status,
      );
    }
    expect(statuses.slice(0, UNAUTHENTICATED)).toEqual(Array.from({ length: UNAUTHENTICATED }, () => 401));
    expect(statuses.slice(UNAUTHENTICATED)).toEqual([429, 429]);
    const refused = await get(a, "/v1/account", { headers: { ...behindProxy, authorization: "Bearer forged" } });
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);

    // Another client behind the same proxy is its own count.
    expect(
      (await get(b, "/api/routers", { headers: { "x-forwarded-for": "198.51.100.8", authorization: "Bearer forged" } }))
        .status,
    ).toBe(401);
    // A valid token from the blocked client still works: only failures are limited per address.
    const token = await devLogin(a);
    expect(
      (await get(b, "/api/routers", { headers: { ...behindProxy, authorization: `Bearer ${token}` } })).status,
    ).toBe(200);
  });

  it("believes X-Forwarded-For only from a TRUST_PROXY address: a client cannot pick the address it is counted under", async () => {
    const [a, b] = apis as [RunningApi, RunningApi];
    // 127.0.0.3 is not a trusted proxy: its made-up X-Forwarded-For values are ignored, so
    // rotating them does not escape the limit.
    const statuses: number[] = [];
    for (let i = 0; i < UNAUTHENTICATED + 1; i++) {
      statuses.push(
        (
          await get(i % 2 ? b : a, "/api/routers", {
            from: "127.0.0.3",
            headers: { "x-forwarded-for": `203.0.113.${i + 1}`, authorization: "Bearer forged" },
          })
        ).status,
      );
    }
    expect(statuses).toEqual([...Array.from({ length: UNAUTHENTICATED }, () => 401), 429]);
    // And it counted nothing against the addresses it named.
    expect(
      (await get(a, "/api/routers", { headers: { "x-forwarded-for": "203.0.113.1", authorization: "Bearer forged" } }))
        .status,
    ).toBe(401);
  });
});
