import { makeRouter } from "@fleet/db/testing";
import { ROUTER_LIMITS } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

// docs/api.md "Routers": PATCH /api/routers/{id} {"tags"} and GET /api/routers?tag=.

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.close();
});

const tags = (n: number, length = 5) => Array.from({ length: n }, (_, i) => `t${String(i).padStart(length - 1, "0")}`);

describe("router tags", () => {
  it("PATCH replaces the tags (duplicates collapse) and GET ?tag= keeps the routers that carry it", async () => {
    const user = await h.login();
    const a = await makeRouter(h.db, user, { name: "a" });
    const b = await makeRouter(h.db, user, { name: "b" });
    const res = await h.request("PATCH", `/api/routers/${a.id}`, {
      token: user.token,
      body: { tags: ["site:paris", "core", "core"] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "success", data: { id: a.id, tags: ["site:paris", "core"] } });
    await h.request("PATCH", `/api/routers/${b.id}`, { token: user.token, body: { tags: ["core"] } });

    const core = await h.request("GET", "/api/routers?tag=core", { token: user.token });
    expect(core.body.data.map((r: { id: string }) => r.id).sort()).toEqual([a.id, b.id].sort());
    const paris = await h.request("GET", `/api/routers?tag=${encodeURIComponent("site:paris")}`, { token: user.token });
    expect(paris.body.data.map((r: { id: string }) => r.id)).toEqual([a.id]);
    const none = await h.request("GET", "/api/routers?tag=cor", { token: user.token });
    expect(none.body.data).toEqual([]);
    const all = await h.request("GET", "/api/routers", { token: user.token });
    expect(all.body.data).toHaveLength(2);

    // An empty body changes nothing; an empty list clears.
    const same = await h.request("PATCH", `/api/routers/${a.id}`, { token: user.token, body: {} });
    expect(same.body.data.tags).toEqual(["site:paris", "core"]);
    const cleared = await h.request("PATCH", `/api/routers/${a.id}`, { token: user.token, body: { tags: [] } });
    expect(cleared.body.data.tags).toEqual([]);
  });

  it("takes 20 tags of 40 characters and refuses 21, 41 characters, empty and control characters (422 naming the field)", async () => {
    const user = await h.login();
    const r = await makeRouter(h.db, user);
    const max = tags(ROUTER_LIMITS.tags, ROUTER_LIMITS.tagLength);
    const ok = await h.request("PATCH", `/api/routers/${r.id}`, { token: user.token, body: { tags: max } });
    expect(ok.status).toBe(200);
    expect(ok.body.data.tags).toEqual(max);

    const tooMany = await h.refused("PATCH", `/api/routers/${r.id}`, {
      token: user.token,
      body: { tags: tags(ROUTER_LIMITS.tags + 1) },
    });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body).toMatchObject({ status: "fail", data: { tags: expect.any(String) } });
    for (const bad of ["x".repeat(ROUTER_LIMITS.tagLength + 1), "", "a\u0000b", 7]) {
      const res = await h.refused("PATCH", `/api/routers/${r.id}`, { token: user.token, body: { tags: [bad] } });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.data)).toEqual(["tags.0"]);
    }
    const badQuery = await h.request("GET", `/api/routers?tag=${"y".repeat(ROUTER_LIMITS.tagLength + 1)}`, {
      token: user.token,
    });
    expect(badQuery.status).toBe(422);
    expect(badQuery.body.data).toHaveProperty("tag");
  });

  it("answers 404 for another organization's router and needs routers:write", async () => {
    const owner = await h.login();
    const other = await h.login();
    const r = await makeRouter(h.db, owner);
    const res = await h.refused("PATCH", `/api/routers/${r.id}`, { token: other.token, body: { tags: ["x"] } });
    expect(res.status).toBe(404);
    const reader = await h.login(undefined, { scope: "routers:read" });
    const mine = await makeRouter(h.db, reader);
    const denied = await h.refused("PATCH", `/api/routers/${mine.id}`, { token: reader.token, body: { tags: ["x"] } });
    expect(denied.status).toBe(403);
  });

  it("tRPC routers.update and routers.list({ tag }) answer the REST bodies", async () => {
    const user = await h.login();
    const r = await makeRouter(h.db, user);
    const client = createClient({ url: h.api.url, token: user.token });
    const updated = await client.routers.update.mutate({ router_id: r.id, tags: ["edge"] });
    expect(updated.data.tags).toEqual(["edge"]);
    const listed = await client.routers.list.query({ tag: "edge" });
    expect(listed.data.map((x) => x.id)).toEqual([r.id]);
  });
});
