import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../client.ts";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";

let h: ApiHarness;
let token: string;
beforeAll(async () => {
  h = await startApiHarness();
  token = (await h.login()).token;
});
afterAll(async () => {
  await h?.close();
});

const nested = (depth: number): unknown => {
  let value: unknown = "leaf";
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
};

describe("request edges", () => {
  it("malformed JSON is 400 and changes nothing", async () => {
    // refused(): the emulator's pending webhooks land first, then the database must not change.
    const res = await h.refused("POST", "/v1/account", {
      token,
      rawBody: '{"name": ',
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/JSON/);
  });

  it.each(["null", '"x"', "5"])("valid JSON that is no object (%s) is 422 naming the body", async (rawBody) => {
    const headers = { "content-type": "application/json" };
    const v1 = await h.refused("POST", "/v1/account", { token, rawBody, headers });
    expect(v1).toMatchObject({ status: 422, body: { errors: { body: [expect.any(String)] } } });
    const api = await h.refused("POST", "/api/routers", { token, rawBody, headers });
    expect(api).toMatchObject({ status: 422, body: { status: "fail", data: { body: expect.any(String) } } });
  });

  it.each(["application/json", "application/json; charset=utf-8"])(
    "a body over 100 KiB is 413 (%s); exactly 100 KiB is parsed",
    async (type) => {
      const wrap = (size: number) => {
        const base = JSON.stringify({ name: "A", email: "a@b.co", address: { country: "US" }, pad: "" });
        return base.replace('"pad":""', `"pad":"${"x".repeat(size - base.length)}"`);
      };
      // refused(): the Stripe webhooks of the previous case's account land first (they raced the
      // fingerprint), then the database must not change.
      const over = await h.refused("POST", "/v1/account", {
        token,
        rawBody: wrap(100 * 1024 + 1),
        headers: { "content-type": type },
      });
      expect(over.status).toBe(413);
      expect(over.body.message).toMatch(/100 KiB/);
      const { token: fresh } = await h.login();
      const exact = await h.request("POST", "/v1/account", {
        token: fresh,
        rawBody: wrap(100 * 1024),
        headers: { "content-type": type },
      });
      expect(exact.status).toBe(201);
    },
  );

  it("JSON nested deeper than 32 levels is 422 naming the field in every prefix's shape; 32 levels is accepted", async () => {
    // The body is level 1 and nested(n) holds n - 1 objects: `{address: nested(33)}` is 33 levels.
    const deep = await h.refused("PATCH", "/v1/account", { token, body: { address: nested(33) } });
    expect(deep.status).toBe(422);
    expect(deep.body).toMatchObject({ code: "validation_failed", errors: { address: [expect.stringMatching(/32/)] } });
    const ok = await h.request("PATCH", "/v1/account", { token, body: { x: nested(32) } });
    // 32 levels pass the parser; the missing account is what answers.
    expect(ok).toMatchObject({ status: 422, body: { code: "no_account" } });
    // The attack's shape (7,000 arrays, 14 KB) on /api: refused, never a 500.
    const attack = `{"metadata":${"[".repeat(7_000)}${"]".repeat(7_000)}}`;
    const api = await h.refused("PATCH", `/api/routers/${crypto.randomUUID()}/metadata`, {
      token,
      rawBody: attack,
      headers: { "content-type": "application/json" },
    });
    expect(api).toMatchObject({ status: 422, body: { status: "fail", data: { metadata: expect.any(String) } } });
    const trpc = await fetch(`${h.api.url}/trpc/account.update`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ address: nested(33) }),
    });
    expect(trpc.status).toBe(422);
    expect(await trpc.json()).toMatchObject({
      error: { data: { code: "UNPROCESSABLE_CONTENT", errors: { address: [expect.any(String)] } } },
    });
    // A batch is one level more; the field is named inside the call's input. A query's input too.
    const batched = await fetch(`${h.api.url}/trpc/account.update?batch=1`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ 0: { address: nested(32) } }),
    });
    expect(batched.status).toBe(422);
    expect(await batched.json()).toMatchObject({ error: { data: { errors: { address: [expect.any(String)] } } } });
    const query = await fetch(
      `${h.api.url}/trpc/routers.list?input=${encodeURIComponent(JSON.stringify({ q: nested(33) }))}`,
      { headers: { authorization: `Bearer ${token}` } },
    );
    expect(query.status).toBe(422);
    expect(await query.json()).toMatchObject({
      error: { data: { code: "UNPROCESSABLE_CONTENT", errors: { q: [expect.any(String)] } } },
    });
    const flat = await fetch(
      `${h.api.url}/trpc/routers.list?input=${encodeURIComponent(JSON.stringify({ q: nested(32) }))}`,
      {
        headers: { authorization: `Bearer ${token}` },
      },
    );
    // 32 levels pass the depth rule: whatever answers, it is not the depth refusal.
    expect(JSON.stringify(await flat.json())).not.toMatch(/32 levels/);
  });

  it("tRPC's body refusals (malformed JSON 400, over 100 KiB 413, a charset 415) come in tRPC's shape", async () => {
    const post = (path: string, body: string, type = "application/json") =>
      fetch(`${h.api.url}/trpc/${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": type },
        body,
      });
    const cases = [
      { res: await post("account.update", '{"name": '), status: 400, code: "BAD_REQUEST" },
      { res: await post("account.update?batch=1", "{bad"), status: 400, code: "BAD_REQUEST" },
      {
        res: await post("account.update", JSON.stringify({ name: "x".repeat(100 * 1024) })),
        status: 413,
        code: "PAYLOAD_TOO_LARGE",
      },
      {
        res: await post("account.update", "{}", "application/json; charset=latin1"),
        status: 415,
        code: "UNSUPPORTED_MEDIA_TYPE",
      },
    ];
    for (const { res, status, code } of cases) {
      expect(res.status).toBe(status);
      expect(await res.json()).toMatchObject({
        error: { message: expect.any(String), data: { code, httpStatus: status } },
      });
    }
  });

  it("a GET's or DELETE's body is ignored, never parsed or refused (those operations take none)", async () => {
    for (const [type, rawBody] of [
      ["application/json", "{bad"],
      ["text/plain", "hello"],
      ["application/json", `"${"x".repeat(101 * 1024)}"`],
    ]) {
      const headers = { "content-type": type as string };
      // fetch sends no GET body: node:http does.
      const listed = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${h.api.url}/api/routers?limit=1`, {
          method: "GET",
          headers: {
            ...headers,
            authorization: `Bearer ${token}`,
            "content-length": Buffer.byteLength(rawBody as string),
          },
        });
        req.on("response", (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end(rawBody);
      });
      expect([type, listed]).toEqual([type, 200]);
      const gone = await h.request("DELETE", `/api/webhooks/${crypto.randomUUID()}`, { token, rawBody, headers });
      expect([type, gone.status]).toEqual([type, 404]);
    }
  });

  it("a non-JSON content type with a body is 415", async () => {
    const res = await h.request("POST", "/v1/account", {
      token,
      rawBody: "name=a",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(415);
  });

  it("unknown paths are 404 in the shape of their prefix", async () => {
    const v1 = await h.request("GET", "/v1/nope", { token });
    expect(v1.status).toBe(404);
    expect(v1.body.message).toEqual(expect.any(String));
    const api = await h.request("GET", "/api/nope", { token });
    expect(api.status).toBe(404);
    expect(api.body).toMatchObject({ status: "fail", message: expect.any(String) });
  });
});

describe("tRPC", () => {
  it("serves the same procedures to a typed client (batched and unbatched)", async () => {
    const { token: t } = await h.login();
    const client = createClient({ url: h.api.url, token: t });
    await expect(client.account.get.query()).rejects.toMatchObject({
      data: { httpStatus: 422, appCode: "no_account" },
    });
    const created = await client.account.create.mutate({
      name: "Typed Co",
      email: "typed@example.com",
      address: { country: "NL" },
    });
    expect(created.address.country).toBe("NL");
    const [a, b] = await Promise.all([client.account.get.query(), client.account.get.query()]);
    expect(a).toEqual(created);
    expect(b).toEqual(created);
    const plain = createClient({ url: h.api.url, token: t, batch: false });
    const updated = await plain.account.update.mutate({ address: { city: "Utrecht" } });
    expect(updated.address.city).toBe("Utrecht");
    await expect(plain.account.update.mutate({ name: "x".repeat(101) })).rejects.toMatchObject({
      data: { code: "UNPROCESSABLE_CONTENT", httpStatus: 422, errors: { name: [expect.any(String)] } },
    });
  });

  it("refuses a batch of more than 10 calls and accepts 10", async () => {
    const paths = (n: number) => Array.from({ length: n }, () => "account.get").join(",");
    const input = (_n: number) => encodeURIComponent("{}");
    const ten = await fetch(`${h.api.url}/trpc/${paths(10)}?batch=1&input=${input(10)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    // Ten calls run: each answers the no-account error.
    expect(ten.status).toBe(422);
    const eleven = await fetch(`${h.api.url}/trpc/${paths(11)}?batch=1&input=${input(11)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(eleven.status).toBe(400);
    expect(JSON.stringify(await eleven.json())).toMatch(/exceeds maximum/);
  });

  it("answers 401 without a token", async () => {
    const client = createClient({ url: h.api.url });
    await expect(client.account.get.query()).rejects.toMatchObject({ data: { httpStatus: 401 } });
  });
});

describe("service endpoints", () => {
  it("healthz, openapi.json and the offline docs page", async () => {
    expect(await h.request("GET", "/healthz")).toMatchObject({ status: 200, body: { status: "ok" } });
    const doc = await h.request("GET", "/openapi.json");
    expect(doc.status).toBe(200);
    const account = doc.body.paths["/v1/account"];
    expect(Object.keys(account).sort()).toEqual(["delete", "get", "patch", "post", "put"]);
    expect(Object.keys(account.post.responses)).toContain("201");
    // Error answers are documented as the transports really render them.
    expect(account.post.responses["422"].content["application/json"].schema.$ref).toBe("#/components/schemas/V1Error");
    expect(account.post.responses["413"]).toBeDefined();
    const forwards = doc.body.paths["/api/routers/{router_id}/transient-forwarding"].post;
    expect(forwards.responses["404"].content["application/json"].schema.$ref).toBe("#/components/schemas/ApiError");
    expect(Object.keys(doc.body.components.schemas).filter((n: string) => n.startsWith("error."))).toEqual([]);
    expect(doc.body.components.schemas.ApiError.properties.status).toBeDefined();
    const docs = await fetch(`${h.api.url}/docs`);
    const html = await docs.text();
    expect(docs.status).toBe(200);
    expect(html).not.toMatch(/https?:\/\/(?!localhost)/);
    const asset = await fetch(`${h.api.url}/docs/assets/swagger-ui-bundle.js`);
    expect(asset.status).toBe(200);
    expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  });

  it("healthz is 503 once the database is gone", async () => {
    const other = await startApiHarness();
    await other.db.close();
    try {
      const res = await other.request("GET", "/healthz");
      expect(res.status).toBe(503);
    } finally {
      await other.api.close();
    }
  });
});
