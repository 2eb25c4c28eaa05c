import { requestLogMixin, runWithRequestId } from "@fleet/shared";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const lines: Array<Record<string, unknown>> = [];
let h: ApiHarness;

beforeAll(async () => {
  // The production logger's options: every line written while a request runs names it.
  const logger = pino(
    { level: "info", mixin: requestLogMixin },
    { write: (line: string) => void lines.push(JSON.parse(line)) },
  );
  h = await startApiHarness({}, { logger });
});
afterAll(async () => {
  await h?.close();
});

describe("X-Request-Id", () => {
  it("is on every answer: a fresh UUID, or the caller's own when valid", async () => {
    const fresh = await h.request("GET", "/livez");
    expect(fresh.headers.get("x-request-id")).toMatch(UUID);
    const kept = await h.request("GET", "/v1/account", { headers: { "x-request-id": "trace-42.abc:def" } });
    expect(kept.headers.get("x-request-id")).toBe("trace-42.abc:def");
    for (const bad of ["", "x".repeat(129), "has space", "semi;colon", "é"]) {
      const res = await fetch(`${h.api.url}/livez`, {
        headers: { "x-request-id": encodeURI(bad) === bad ? bad : "%" },
      });
      const id = res.headers.get("x-request-id");
      expect(id, JSON.stringify(bad)).toMatch(UUID);
    }
    // The 128-character edge is kept.
    const edge = "a".repeat(128);
    expect((await h.request("GET", "/livez", { headers: { "x-request-id": edge } })).headers.get("x-request-id")).toBe(
      edge,
    );
  });

  it("is in error bodies as request_id, on /v1 and /api alike", async () => {
    const v1 = await h.request("GET", "/v1/account", { headers: { "x-request-id": "quote-me-1" } });
    expect(v1.status).toBe(401);
    expect(v1.body).toMatchObject({ request_id: "quote-me-1" });
    const api = await h.request("GET", "/api/routers/not-a-uuid", { headers: { "x-request-id": "quote-me-2" } });
    expect(api.status).toBeGreaterThanOrEqual(400);
    expect(api.body).toMatchObject({ status: "fail", request_id: "quote-me-2" });
    const unknown = await h.request("GET", "/v1/nowhere");
    expect(unknown.status).toBe(404);
    expect(unknown.body.request_id).toBe(unknown.headers.get("x-request-id"));
  });

  it("is in every log line written while the request runs", async () => {
    const { token } = await h.login();
    lines.length = 0;
    const res = await h.request("GET", "/v1/account", { token, headers: { "x-request-id": "log-trace-7" } });
    expect(res.headers.get("x-request-id")).toBe("log-trace-7");
    const mine = lines.filter((l) => l.request_id === "log-trace-7");
    expect(mine.some((l) => l.msg === "request" && l.status === res.status)).toBe(true);
    // No line of this request went out without its id.
    expect(lines.filter((l) => l.msg === "request" && l.request_id === undefined)).toEqual([]);
  });
});

describe("request log context", () => {
  it("reaches loggers made before the request (services' child loggers), across awaits", async () => {
    const seen: Array<Record<string, unknown>> = [];
    const root = pino(
      { level: "info", mixin: requestLogMixin },
      { write: (l: string) => void seen.push(JSON.parse(l)) },
    );
    const service = root.child({ feature: "routers" });
    await runWithRequestId("ctx-1", async () => {
      await new Promise((r) => setTimeout(r, 5)); // work, not a wait: the async boundary under test
      service.warn("inside");
    });
    service.warn("outside");
    expect(seen.map((l) => [l.msg, l.request_id, l.feature])).toEqual([
      ["inside", "ctx-1", "routers"],
      ["outside", undefined, "routers"],
    ]);
  });
});

describe("probes", () => {
  it("livez, readyz and healthz answer 200 while the database is up", async () => {
    for (const path of ["/livez", "/readyz", "/healthz"]) {
      expect(await h.request("GET", path), path).toMatchObject({ status: 200, body: { status: "ok" } });
    }
  });
});
