import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApi, startApi } from "../start-api.ts";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";

/**
 * The fast path must answer exactly like tRPC's own adapter, which stays the reference
 * (docs/api.md "tRPC"). Two APIs on one database and one configuration, one with the fast path
 * (the harness) and one without, get the same requests; status, body and the headers a client
 * reads must be equal.
 */
let h: ApiHarness;
let reference: RunningApi;
let token: string;
let noAccountToken: string;

beforeAll(async () => {
  h = await startApiHarness();
  reference = await startApi({
    config: h.config,
    db: h.db,
    logger: pino({ level: "silent" }),
    trpcFastPath: false,
  });
  token = (await h.login()).token;
  noAccountToken = (await h.login()).token;
  const created = await h.request("POST", "/v1/account", {
    token,
    body: { name: "Diff Networks", email: "diff@example.com", address: { country: "DE" } },
  });
  expect(created.status).toBe(201);
});
afterAll(async () => {
  await reference?.close();
  await h?.close();
});

interface Call {
  method: "GET" | "POST" | "PUT";
  path: string;
  token?: string | undefined;
  headers?: Record<string, string>;
  body?: string;
}

const HEADERS = ["content-type", "retry-after", "allow", "cache-control"];

const send = async (base: string, call: Call) => {
  const headers: Record<string, string> = { ...call.headers };
  if (call.token) headers.authorization = `Bearer ${call.token}`;
  const res = await fetch(`${base}/trpc${call.path}`, {
    method: call.method,
    headers,
    ...(call.body === undefined ? {} : { body: call.body }),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Compared as text.
  }
  return {
    status: res.status,
    body,
    headers: Object.fromEntries(HEADERS.map((name) => [name, res.headers.get(name)])),
  };
};

/** Sends the call to both APIs and requires equal answers; returns the answer for further checks. */
const same = async (call: Call) => {
  const fast = await send(h.api.url, call);
  const adapter = await send(reference.url, call);
  expect(fast).toEqual(adapter);
  return fast;
};

const json = { "content-type": "application/json" };
const input = (value: unknown) => encodeURIComponent(JSON.stringify(value));

describe("the tRPC fast path answers like tRPC's own adapter", () => {
  it("a successful query and a successful batch", async () => {
    expect((await same({ method: "GET", path: "/account.get", token })).status).toBe(200);
    const batch = await same({
      method: "GET",
      path: `/account.get,invoices.list,routers.list?batch=1&input=${input({})}`,
      token,
    });
    expect(batch.status).toBe(200);
    expect(batch.body).toHaveLength(3);
  });

  it("a successful mutation", async () => {
    const res = await same({
      method: "POST",
      path: "/account.update",
      token,
      headers: json,
      body: JSON.stringify({ name: "Diff Networks" }),
    });
    expect(res.status).toBe(200);
  });

  it("validation errors, in a single call and in a batch", async () => {
    const single = await same({
      method: "POST",
      path: "/account.update",
      token,
      headers: json,
      body: JSON.stringify({ name: 5, email: "not-an-email" }),
    });
    expect(single.status).toBe(422);
    expect(single.body).toMatchObject({
      error: { data: { code: "UNPROCESSABLE_CONTENT", httpStatus: 422, errors: { name: [expect.any(String)] } } },
    });
    const batch = await same({
      method: "POST",
      path: "/account.update,account.update?batch=1",
      token,
      headers: json,
      body: JSON.stringify({ 0: { name: "ok" }, 1: { email: "nope" } }),
    });
    expect(batch.status).toBe(207);
  });

  it("domain errors (no account) and their extra keys", async () => {
    expect((await same({ method: "GET", path: "/account.get", token: noAccountToken })).status).toBe(422);
  });

  it("authentication errors: no token, a bad token, a missing scope", async () => {
    expect((await same({ method: "GET", path: "/account.get" })).status).toBe(401);
    expect((await same({ method: "GET", path: "/account.get", token: "not-a-jwt" })).status).toBe(401);
    const readOnly = (await h.login(undefined, { scope: "routers:read" })).token;
    expect((await same({ method: "GET", path: "/account.get", token: readOnly })).status).toBe(403);
  });

  it("wrong or missing content type on a mutation", async () => {
    const wrong: Record<string, string>[] = [
      { "content-type": "text/plain" },
      { "content-type": "application/x-www-form-urlencoded" },
      { "content-type": "application/vnd.api+json" },
      {},
    ];
    for (const headers of wrong) {
      const res = await same({
        method: "POST",
        path: "/account.update",
        token,
        headers,
        body: JSON.stringify({ name: "Diff Networks" }),
      });
      expect([headers, res.status, res.body]).toEqual([headers, 415, expect.anything()]);
    }
    // tRPC hands an octet-stream body to the procedure as a stream (its file-upload support); the
    // fast path leaves that to it too, whatever it answers.
    await same({
      method: "POST",
      path: "/account.update",
      token,
      headers: { "content-type": "application/octet-stream" },
      body: "x",
    });
    // JSON without a body, and a GET that says it carries a form.
    await same({ method: "POST", path: "/account.update", token, headers: json });
    await same({ method: "GET", path: "/account.get", token, headers: { "content-type": "multipart/form-data" } });
    // charset is still JSON.
    const charset = await same({
      method: "POST",
      path: "/account.update",
      token,
      headers: { "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ name: "Diff Networks" }),
    });
    expect(charset.status).toBe(200);
  });

  it("unknown procedures, alone and in a batch", async () => {
    expect((await same({ method: "GET", path: "/nope.nothing", token })).status).toBe(404);
    expect(
      (await same({ method: "GET", path: `/account.get,nope.nothing?batch=1&input=${input({})}`, token })).status,
    ).toBe(207);
    expect((await same({ method: "GET", path: "/__proto__", token })).status).toBe(404);
  });

  it("a method that does not fit the procedure", async () => {
    await same({ method: "GET", path: "/account.update", token });
    await same({ method: "POST", path: "/account.get", token, headers: json, body: "{}" });
    await same({ method: "PUT", path: "/account.get", token, headers: json, body: "{}" });
  });

  it("malformed input and oversized batches", async () => {
    await same({ method: "GET", path: "/account.get?input=%7Bnot-json", token });
    await same({ method: "GET", path: "/account.get,invoices.list?batch=1&input=%7Bnot-json", token });
    const eleven = Array.from({ length: 11 }, () => "account.get").join(",");
    expect((await same({ method: "GET", path: `/${eleven}?batch=1&input=${input({})}`, token })).status).toBe(400);
    const ten = Array.from({ length: 10 }, () => "account.get").join(",");
    expect((await same({ method: "GET", path: `/${ten}?batch=1&input=${input({})}`, token })).status).toBe(200);
  });
});
