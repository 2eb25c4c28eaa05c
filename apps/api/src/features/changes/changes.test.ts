import { makeRouter } from "@fleet/db/testing";
import { CHANGE_LIMITS } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { adminApiKey, type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

// What is HTTP about changes (docs/api.md "Changes"): status codes, JSend bodies, field errors,
// scopes and tRPC. The rules themselves are in changes.service.test.ts. Changes here wait for
// approval, so the dispatcher's worker (running in the harness) leaves rows alone for `h.refused`
// until the last test approves one.

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.close();
});

const script = (router_ids: string[], extra: Record<string, unknown> = {}) => ({
  name: "ntp",
  kind: "script",
  script: "/system ntp client set enabled=yes",
  routers: { router_ids },
  requires_approval: true,
  ...extra,
});

describe("changes over HTTP", () => {
  it("creates (201), gets with counts, lists with next_cursor, answers routers and the preview", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user, { identity: "gw;1" });
    const res = await h.request("POST", "/api/changes", {
      token: user.token,
      body: script([router.id], { script: ":put {{identity}}" }),
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      status: "success",
      data: {
        id: expect.any(String),
        state: "awaiting_approval",
        routers: [{ router_id: router.id, wave: 0, state: "pending", phase: null, output: null }],
      },
    });
    const id = res.body.data.id as string;
    const got = await h.request("GET", `/api/changes/${id}`, { token: user.token });
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({
      id,
      name: "ntp",
      kind: "script",
      state: "awaiting_approval",
      created_by: user.userId,
      created_at: expect.stringMatching(/\+00:00$/),
      counts: { pending: 1 },
    });
    const listed = await h.request("GET", "/api/changes?limit=1", { token: user.token });
    expect([listed.status, listed.body.data.length, listed.body.next_cursor]).toEqual([200, 1, null]);
    const routers = await h.request("GET", `/api/changes/${id}/routers`, { token: user.token });
    expect(routers.body.data).toHaveLength(1);
    const preview = await h.request("GET", `/api/changes/${id}/preview?router_id=${router.id}`, { token: user.token });
    expect(preview.body).toEqual({ status: "success", data: { router_id: router.id, script: ':put "gw\\3B1"' } });
  });

  it("refuses bad input with 422 naming the field, another organization's router with 404; nothing is written", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ script: "a".repeat(CHANGE_LIMITS.scriptBytes + 1) }, "script"],
      [{ script: ":put {{secret}}" }, "script"],
      [{ kind: "firmware", script: undefined, firmware: { channel: "beta" } }, "firmware.channel"],
      [{ strategy: { canary: 51 } }, "strategy.canary"],
      [{ guard_seconds: 59 }, "guard_seconds"],
      // JSON booleans only: REST must not read "false" (or 1) as true.
      [{ requires_approval: "false" }, "requires_approval"],
      [{ requires_approval: 1 }, "requires_approval"],
      // An empty list holds for no router (never: every router).
      [{ routers: { router_ids: [] } }, "routers"],
      [{ routers: { tags: [] } }, "routers"],
      [{ start_at: "2026-12-20T10:00:00.1234567890Z" }, "start_at"],
    ];
    for (const [extra, field] of cases) {
      const res = await h.refused("POST", "/api/changes", { token: user.token, body: script([router.id], extra) });
      expect(res.status).toBe(422);
      expect(res.body.status).toBe("fail");
      expect(Object.keys(res.body.data)).toEqual([field]);
    }
    const stranger = await h.login();
    const theirs = await makeRouter(h.db, stranger);
    const notFound = await h.refused("POST", "/api/changes", {
      token: user.token,
      body: script([router.id, theirs.id]),
    });
    expect([notFound.status, notFound.body.status]).toEqual([404, "fail"]);
    // Up to nine digits of a second and an offset with or without its colon, as clients write them.
    const day = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 19);
    for (const startAt of [`${day}.123456+00:00`, `${day}+0100`]) {
      const later = await h.request("POST", "/api/changes", {
        token: user.token,
        body: script([router.id], { start_at: startAt }),
      });
      expect([startAt, later.status]).toEqual([startAt, 201]);
    }
    const ok = await h.request("POST", "/api/changes", {
      token: user.token,
      body: script([router.id], { script: "a".repeat(CHANGE_LIMITS.scriptBytes) }),
    });
    expect(ok.status).toBe(201);
    const id = ok.body.data.id as string;
    for (const path of [`/api/changes/${id}`, `/api/changes/${id}/routers`]) {
      expect((await h.refused("GET", path, { token: stranger.token })).status).toBe(404);
    }
    expect((await h.refused("POST", `/api/changes/${id}/cancel`, { token: stranger.token })).status).toBe(404);
  });

  it("scopes: reading needs routers:read, creating routers:write, approving organizations:write", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const reader = await h.login(undefined, { scope: "routers:read" });
    expect((await h.refused("POST", "/api/changes", { token: reader.token, body: script([router.id]) })).status).toBe(
      403,
    );
    expect((await h.request("GET", "/api/changes", {})).status).toBe(401);
    const created = await h.request("POST", "/api/changes", { token: user.token, body: script([router.id]) });
    const id = created.body.data.id as string;
    const writer = await adminApiKey(h.db, user.organizationId, ["routers:read", "routers:write"]);
    expect((await h.refused("POST", `/api/changes/${id}/approve`, { token: writer })).status).toBe(403);
    // The author, though an owner, may not approve their own change.
    const author = await h.refused("POST", `/api/changes/${id}/approve`, { token: user.token });
    expect([author.status, author.body.status]).toEqual([403, "fail"]);
    expect((await h.refused("POST", `/api/changes/${id}/resume`, { token: user.token })).status).toBe(409);
  });

  it("roles: a viewer may only read; a technician creates and cancels but cannot approve", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const created = await h.request("POST", "/api/changes", { token: user.token, body: script([router.id]) });
    const id = created.body.data.id as string;
    const viewer = await adminApiKey(h.db, user.organizationId, ["routers:read"]);
    expect((await h.request("GET", `/api/changes/${id}`, { token: viewer })).status).toBe(200);
    expect((await h.refused("POST", "/api/changes", { token: viewer, body: script([router.id]) })).status).toBe(403);
    for (const verb of ["approve", "pause", "resume", "cancel"]) {
      expect((await h.refused("POST", `/api/changes/${id}/${verb}`, { token: viewer })).status).toBe(403);
    }
    const technician = await adminApiKey(h.db, user.organizationId, ["routers:read", "routers:write"]);
    expect((await h.refused("POST", `/api/changes/${id}/approve`, { token: technician })).status).toBe(403);
    const mine = await h.request("POST", "/api/changes", { token: technician, body: script([router.id]) });
    expect(mine.status).toBe(201);
    const cancelled = await h.request("POST", `/api/changes/${mine.body.data.id}/cancel`, { token: technician });
    expect([cancelled.status, cancelled.body.data.state]).toEqual([200, "cancelled"]);
  });

  it("garbage in the list's query and the preview's is 422 or 404, never 500", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const created = await h.request("POST", "/api/changes", { token: user.token, body: script([router.id]) });
    const id = created.body.data.id as string;
    for (const [query, field] of [
      ["cursor=bogus", "cursor"],
      ["cursor=%00", "cursor"],
      [`cursor=${"A".repeat(201)}`, "cursor"],
      [`cursor=${Buffer.from('{"t":"x","id":"y"}').toString("base64url")}`, "cursor"],
      ["limit=0", "limit"],
      ["limit=201", "limit"],
      ["limit=1.5", "limit"],
      ["limit=abc", "limit"],
    ]) {
      const res = await h.refused("GET", `/api/changes?${query}`, { token: user.token });
      expect([query, res.status, Object.keys(res.body.data ?? {})]).toEqual([query, 422, [field]]);
    }
    const stranger = await h.login();
    const theirs = await makeRouter(h.db, stranger);
    for (const routerId of [theirs.id, "not-a-uuid", "%00"]) {
      const res = await h.refused("GET", `/api/changes/${id}/preview?router_id=${routerId}`, { token: user.token });
      expect([routerId, res.status]).toEqual([routerId, routerId === "%00" ? 422 : 404]);
    }
    expect((await h.refused("GET", `/api/changes/${id}/preview`, { token: user.token })).status).toBe(422);
  });

  it("serves changes.* over tRPC; another person approves and the dispatcher starts the canary", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const client = createClient({ url: h.api.url, token: user.token });
    const created = await client.changes.create.mutate({
      name: "ntp",
      kind: "script",
      script: ":put 1",
      routers: { router_ids: [router.id] },
      requires_approval: true,
    });
    expect((await client.changes.get.query({ id: created.data.id })).data.state).toBe("awaiting_approval");
    const approver = await adminApiKey(h.db, user.organizationId, ["routers:read", "organizations:write"]);
    const approved = await h.request("POST", `/api/changes/${created.data.id}/approve`, { token: approver });
    expect([approved.status, approved.body.data.state]).toEqual([200, "running"]);
    await eventually(
      async () => (await client.changes.routers.query({ id: created.data.id })).data[0]?.state === "running",
    );
  });
});
