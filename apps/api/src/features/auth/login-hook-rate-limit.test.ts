import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

// docs/api.md "Rate limits": the login hook counts against RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE per
// source address, whatever secret it carries, so the shared secret cannot be guessed at speed.
const LIMIT = 5;
const SECRET = "login-hook-secret-of-at-least-32-bytes!!";
let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness({ AUTH_LOGIN_HOOK_SECRET: SECRET, RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: String(LIMIT) });
  // Counts are kept per clock minute: the API's clock starts the test just after a minute begins,
  // so no window ends halfway through the n / n+1 check.
  h.clock.offsetMs = 60_000 - (Date.now() % 60_000) + 500;
});
afterAll(() => h?.close());

const hook = (secret: string, from: string) =>
  new Promise<{ status: number; retryAfter: string | undefined; body: any }>((resolve, reject) => {
    const url = new URL(`${h.api.url}/v1/auth/login-hook`);
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        localAddress: from,
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        agent: false,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers["retry-after"] as string | undefined,
            body: JSON.parse(text),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ email: `hook-${from}@example.com` }));
  });

describe("login hook rate limit", () => {
  it("answers n calls from one address, the n+1st 429 with Retry-After; another address goes on", async () => {
    // Wrong secrets count too: they are what the limit is for.
    expect((await hook("x".repeat(SECRET.length), "127.0.0.1")).status).toBe(401);
    for (let i = 1; i < LIMIT; i++) expect((await hook(SECRET, "127.0.0.1")).status).toBe(200);
    const over = await hook(SECRET, "127.0.0.1");
    expect(over.status).toBe(429);
    expect(Number(over.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(over.body.message).toMatch(/Too many requests/);
    // Over the limit even the right secret is refused, and a wrong one learns nothing.
    expect((await hook("x".repeat(SECRET.length), "127.0.0.1")).status).toBe(429);
    expect((await hook(SECRET, "127.0.0.2")).status).toBe(200);
  });
});
