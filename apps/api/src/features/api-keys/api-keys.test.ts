import { createHash } from "node:crypto";
import { databaseFingerprint } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness();
});

afterAll(async () => {
  await h?.close();
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;
const DAY_MS = 86_400_000;

const createKey = async (token: string, body: object) => h.request("POST", "/v1/api-keys", { token, body });

describe("POST /v1/api-keys", () => {
  it("answers 201 with the key once, stores only its hash, and the key works as a bearer credential", async () => {
    const user = await h.login();
    const res = await createKey(user.token, { name: "CI", scopes: ["routers:read"], expires_in_days: 30 });
    expect(res.status).toBe(201);
    const created = res.body;
    expect(created).toEqual({
      id: expect.any(String),
      name: "CI",
      prefix: expect.stringMatching(/^fk_.{8}$/),
      key: expect.stringMatching(/^fk_[A-Za-z0-9_-]{43}$/),
      scopes: ["routers:read"],
      created_at: expect.stringMatching(ISO),
      expires_at: expect.stringMatching(ISO),
      last_used_at: null,
    });
    expect(created.key.startsWith(created.prefix)).toBe(true);
    expect(Date.parse(created.expires_at) - Date.parse(created.created_at)).toBe(30 * DAY_MS);
    const stored = await h.db.query<{ key_hash: string }>("select key_hash from api_keys where id = $1", [created.id]);
    expect(stored[0]?.key_hash).toBe(createHash("sha256").update(created.key).digest("hex"));
    const dump = JSON.stringify(await h.db.query("select * from api_keys"));
    expect(dump).not.toContain(created.key);

    // Works where a JWT does: the organization's default team, exactly its scopes.
    const routers = await h.request("GET", "/api/routers", { token: created.key });
    expect(routers.status).toBe(200);
    expect((await h.request("POST", "/api/routers", { token: created.key, body: {} })).status).toBe(403);
    expect((await h.request("GET", "/v1/api-keys", { token: created.key })).status).toBe(403);

    // The list never shows the key; last_used_at appears once the use is written (off the request path).
    const listed: any[] = await eventually(async () => {
      const body = (await h.request("GET", "/v1/api-keys", { token: user.token })).body;
      return body[0]?.last_used_at ? body : undefined;
    }, "the key's last use to be written");
    expect(listed).toHaveLength(1);
    expect(listed[0]).not.toHaveProperty("key");
    expect(listed[0]).toMatchObject({
      id: created.id,
      prefix: created.prefix,
      last_used_at: expect.stringMatching(ISO),
    });
  });

  it("refuses scopes beyond the creator's token with 422 and writes nothing", async () => {
    const user = await h.login(undefined, { scope: "account:read account:write routers:read" });
    const before = await databaseFingerprint(h.db);
    const res = await createKey(user.token, { name: "too much", scopes: ["routers:read", "routers:write"] });
    expect(res.status).toBe(422);
    expect(res.body.errors).toHaveProperty("scopes");
    expect(await databaseFingerprint(h.db)).toBe(before);
    // Exactly the creator's scopes are fine.
    const ok = await createKey(user.token, { name: "same", scopes: ["account:read", "account:write", "routers:read"] });
    expect(ok.status).toBe(201);
    // A key can mint keys only within its own scopes.
    const minted = await createKey(ok.body.key, { name: "child", scopes: ["routers:write"] });
    expect(minted.status).toBe(422);
  });

  it("checks expires_in_days at its edges (1 and 365 ok; 0, 366, 1.5, '30' refused), name and scopes", async () => {
    const user = await h.login();
    for (const days of [1, 365]) {
      expect((await createKey(user.token, { name: "k", scopes: ["routers:read"], expires_in_days: days })).status).toBe(
        201,
      );
    }
    const before = await databaseFingerprint(h.db);
    for (const days of [0, 366, 1.5, "30", null]) {
      const res = await createKey(user.token, { name: "k", scopes: ["routers:read"], expires_in_days: days });
      expect(res.status).toBe(422);
      expect(res.body.errors).toHaveProperty("expires_in_days");
    }
    for (const body of [
      { name: "", scopes: ["routers:read"] },
      { name: "x".repeat(101), scopes: ["routers:read"] },
      { name: "a\u0000b", scopes: ["routers:read"] },
      { name: "k", scopes: [] },
      { name: "k", scopes: ["root"] },
      { name: "k" },
    ]) {
      expect((await createKey(user.token, body)).status).toBe(422);
    }
    expect((await createKey(user.token, { name: "x".repeat(100), scopes: ["routers:read"] })).status).toBe(201);
    expect(
      (
        await h.request("POST", "/v1/api-keys", {
          token: user.token,
          rawBody: "{",
          headers: { "content-type": "application/json" },
        })
      ).status,
    ).toBe(400);
    const after = await databaseFingerprint(h.db);
    expect(after).not.toBe(before); // the 100-character key above
  });

  it("needs account:write to create and account:read to list", async () => {
    const reader = await h.login(undefined, { scope: "account:read routers:read" });
    expect((await createKey(reader.token, { name: "k", scopes: ["routers:read"] })).status).toBe(403);
    expect((await h.request("GET", "/v1/api-keys", { token: reader.token })).status).toBe(200);
    const writer = await h.login(undefined, { scope: "account:write" });
    expect((await h.request("GET", "/v1/api-keys")).status).toBe(401);
    expect((await h.request("GET", "/v1/api-keys", { token: writer.token })).status).toBe(403);
  });
});

describe("API key expiry and revocation", () => {
  it("an expired key answers 401", async () => {
    const user = await h.login();
    const { key } = (await createKey(user.token, { name: "short", scopes: ["routers:read"], expires_in_days: 1 })).body;
    expect((await h.request("GET", "/api/routers", { token: key })).status).toBe(200);
    h.clock.offsetMs = DAY_MS - 1_000;
    try {
      expect((await h.request("GET", "/api/routers", { token: key })).status).toBe(200);
      h.clock.offsetMs = DAY_MS + 1_000;
      const res = await h.request("GET", "/api/routers", { token: key });
      expect(res.status).toBe(401);
      expect(res.body.message).toMatch(/expired/);
    } finally {
      h.clock.offsetMs = 0;
    }
  });

  it("DELETE answers 204, the key answers 401 at once, a second DELETE 404", async () => {
    const user = await h.login();
    const created = (await createKey(user.token, { name: "gone", scopes: ["routers:read", "account:read"] })).body;
    expect((await h.request("GET", "/api/routers", { token: created.key })).status).toBe(200);
    const del = await h.request("DELETE", `/v1/api-keys/${created.id}`, { token: user.token });
    expect(del.status).toBe(204);
    const after = await h.request("GET", "/api/routers", { token: created.key });
    expect(after.status).toBe(401);
    expect((await h.request("GET", "/v1/account", { token: created.key })).status).toBe(401);
    expect((await h.request("DELETE", `/v1/api-keys/${created.id}`, { token: user.token })).status).toBe(404);
  });

  it("another organization's key id answers 404 and stays valid; unknown and malformed ids 404", async () => {
    const owner = await h.login();
    const stranger = await h.login();
    const created = (await createKey(owner.token, { name: "mine", scopes: ["routers:read"] })).body;
    const before = await databaseFingerprint(h.db);
    expect((await h.request("DELETE", `/v1/api-keys/${created.id}`, { token: stranger.token })).status).toBe(404);
    expect((await h.request("DELETE", `/v1/api-keys/${crypto.randomUUID()}`, { token: stranger.token })).status).toBe(
      404,
    );
    expect((await h.request("DELETE", "/v1/api-keys/not-a-uuid", { token: stranger.token })).status).toBe(404);
    expect(await databaseFingerprint(h.db)).toBe(before);
    expect((await h.request("GET", "/v1/api-keys", { token: stranger.token })).body).toEqual([]);
    expect((await h.request("GET", "/api/routers", { token: created.key })).status).toBe(200);
  });

  it("a made-up key in the right shape answers 401", async () => {
    const res = await h.request("GET", "/api/routers", { token: `fk_${"A".repeat(43)}` });
    expect(res.status).toBe(401);
  });
});

describe("tRPC apiKeys.*", () => {
  it("create, list and delete", async () => {
    const user = await h.login();
    const client = createClient({ url: h.api.url, token: user.token });
    const created = await client.apiKeys.create.mutate({ name: "trpc", scopes: ["routers:read"] });
    expect(created.key).toMatch(/^fk_/);
    expect((await client.apiKeys.list.query()).map((k) => k.id)).toEqual([created.id]);
    await client.apiKeys.delete.mutate({ id: created.id });
    expect(await client.apiKeys.list.query()).toEqual([]);
  });
});
