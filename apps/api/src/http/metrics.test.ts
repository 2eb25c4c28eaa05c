import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";

const TOKEN = "metrics-secret-0123456789";
let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness({ METRICS_TOKEN: TOKEN });
});
afterAll(async () => {
  await h?.close();
});

const scrape = async () => {
  const res = await fetch(`${h.api.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
};

/**
 * The sum of the sample lines carrying these labels, or undefined when none does. The registry is
 * the process's (prom-client's default), which other test files in the same worker also count into:
 * assertions compare a scrape before and after.
 */
const sample = (text: string, name: string, labels: Record<string, string>): number | undefined => {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const lines = text.split("\n").filter((l) => l.startsWith(`${name}{`) && wanted.every((w) => l.includes(w)));
  if (lines.length === 0) return undefined;
  return lines.reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
};

describe("GET /metrics on the API port", () => {
  it("needs the bearer token when METRICS_TOKEN is set", async () => {
    expect((await fetch(`${h.api.url}/metrics`)).status).toBe(401);
    const wrong = await fetch(`${h.api.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    const basic = await fetch(`${h.api.url}/metrics`, { headers: { authorization: `Basic ${TOKEN}` } });
    expect(basic.status).toBe(401);
    await scrape();
  });

  it("counts requests by route template (never an id), method and status, with latency histograms", async () => {
    const { token } = await h.login();
    const id = crypto.randomUUID();
    const before = await scrape();
    const delta = (text: string, name: string, labels: Record<string, string>) =>
      (sample(text, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
    for (let i = 0; i < 3; i++) await h.request("GET", `/api/routers/${crypto.randomUUID()}/faults`, { token });
    await h.request("GET", "/no/such/path");
    const text = await scrape();
    expect(delta(text, "fleet_http_requests_total", { route: "/api/routers/{router_id}/faults", status: "404" })).toBe(
      3,
    );
    expect(delta(text, "fleet_http_requests_total", { route: "unmatched", method: "GET", status: "404" })).toBe(1);
    expect(text).not.toContain(id);
    expect(delta(text, "fleet_http_request_duration_seconds_count", { route: "/api/routers/{router_id}/faults" })).toBe(
      3,
    );
    expect(text).toMatch(
      /fleet_http_request_duration_seconds_bucket\{le="0\.005",route="\/api\/routers\/\{router_id\}\/faults"/,
    );
  });

  it("counts Stripe calls by result and shows job queues and process metrics", async () => {
    const { token } = await h.login();
    const before = sample(await scrape(), "fleet_stripe_calls_total", { result: "ok" }) ?? 0;
    const res = await h.request("POST", "/v1/account", {
      token,
      body: { name: "Metrics Co", email: "billing@metrics.example", address: { country: "DE" } },
    });
    expect(res.status).toBe(201);
    const text = await scrape();
    expect(sample(text, "fleet_stripe_calls_total", { result: "ok" })).toBeGreaterThan(before);
    expect(sample(text, "fleet_jobs", { queue: "router.jobs", state: "queued" })).toBeGreaterThanOrEqual(0);
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
    expect(text).toContain("# TYPE fleet_webhook_deliveries_total counter");
  });

  it("counts tRPC calls under their procedure, each call of a batch, and unknown procedures as unmatched", async () => {
    const { token } = await h.login();
    const auth = { authorization: `Bearer ${token}` };
    const before = await scrape();
    const count = (text: string, route: string) =>
      sample(text, "fleet_http_requests_total", { route, method: "GET" }) ?? 0;
    expect((await fetch(`${h.api.url}/trpc/account.get`, { headers: auth })).status).toBeGreaterThan(0);
    const batch = await fetch(`${h.api.url}/trpc/account.get,account.get?batch=1&input=${encodeURIComponent("{}")}`, {
      headers: auth,
    });
    expect(batch.status).toBeGreaterThan(0);
    await fetch(`${h.api.url}/trpc/no.such.procedure${crypto.randomUUID()}`, { headers: auth });
    const after = await scrape();
    expect(count(after, "/trpc/account.get") - count(before, "/trpc/account.get")).toBe(3);
    expect(after).not.toMatch(/route="\/trpc\/no\.such/);
    expect(after).not.toMatch(/route="\/trpc"/);
    expect(count(after, "unmatched")).toBeGreaterThan(count(before, "unmatched"));
  });
});
