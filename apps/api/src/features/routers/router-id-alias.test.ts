import { makeRouter } from "@fleet/db/testing";
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

describe("router path parameter names", () => {
  it("tRPC accepts `id` (docs/api.md, Routers and heartbeats) as well as `router_id` (docs/api.md)", async () => {
    const login = await h.login();
    const client = createClient({ url: h.api.url, token: login.token });
    const a = await makeRouter(h.db, login, { name: "alias-a" });
    const b = await makeRouter(h.db, login, { name: "alias-b" });
    const updated = await client.routers.updateMetadata.mutate({ id: a.id, lat: 52.5 } as never);
    expect(updated).toMatchObject({ status: "success" });
    const meta = await client.routers.metadata.query({ router_id: a.id });
    expect(meta.data).toMatchObject({ lat: 52.5 });
    expect(meta.data).not.toHaveProperty("id");
    await client.routers.remove.mutate({ id: a.id } as never);
    await client.routers.remove.mutate({ router_id: b.id });
    const list = await client.routers.list.query();
    expect(list.data.map((r: { id: string }) => r.id)).not.toContain(a.id);
    expect(list.data.map((r: { id: string }) => r.id)).not.toContain(b.id);
  });

  it("REST refuses a body that is not a JSON object with 422", async () => {
    const login = await h.login();
    const router = await makeRouter(h.db, login);
    const res = await h.request("PATCH", `/api/routers/${router.id}/metadata`, { token: login.token, body: [1, 2] });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ status: "fail", data: { body: expect.any(String) } });
    const v1 = await h.request("PATCH", "/v1/account", { token: login.token, body: [] });
    expect(v1.status).toBe(422);
    expect(v1.body.errors.body).toBeDefined();
  });

  it("documents router paths with their parameters", async () => {
    const doc = await h.request("GET", "/openapi.json");
    const op = doc.body.paths["/api/routers/{router_id}/metadata"]?.get;
    expect(op.parameters.map((p: { name: string }) => p.name)).toContain("router_id");
  });
});
