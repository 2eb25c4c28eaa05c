import { createSecretKey } from "node:crypto";
import { makeAccount } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

/**
 * Issue 20, findings 5 and 12 replayed over the wire (docs/api.md "Authentication"): a key made
 * with a team-scoped token stays in that team; claims that are not well-formed ids are a 401 and
 * store nothing; an organization holds at most 100 live keys.
 */
let h: ApiHarness;
let secret: string;
beforeAll(async () => {
  h = await startApiHarness({ TRIAL_ROUTERS: "100" });
  secret = h.config.auth.jwtSecret ?? "";
});
afterAll(async () => {
  await h?.close();
});

const sign = (claims: Record<string, unknown>) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("5m")
    .sign(createSecretKey(Buffer.from(secret)));

const ALL = "account:read account:write routers:read routers:write";

describe("a key made with a team-scoped token (finding 5)", () => {
  it("is bound to that team: it never lists, reads or changes the default team's routers", async () => {
    const user = await h.login();
    await makeAccount(h.db, user.organizationId);
    const secondTeam = crypto.randomUUID();
    await h.db.query(
      "insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, 'T2', false, now())",
      [secondTeam, user.organizationId],
    );
    const inDefault = await h.request("POST", "/api/routers", { token: user.token, body: { name: "default team" } });
    expect(inDefault.status).toBe(201);
    const defaultRouter = inDefault.body.data.router.id as string;

    const teamToken = await sign({ sub: user.userId, id: user.organizationId, team: secondTeam, scope: ALL });
    const created = await h.request("POST", "/v1/api-keys", {
      token: teamToken,
      body: { name: "team 2 automation", scopes: ["routers:read", "routers:write", "account:write"] },
    });
    expect(created.status).toBe(201);
    const key = created.body.key as string;

    // The attack: list and read the default team's routers with the key.
    const listed = await h.request("GET", "/api/routers", { token: key });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([]);
    for (const path of [`/api/routers/${defaultRouter}/metadata`, `/api/routers/${defaultRouter}/metrics`]) {
      expect((await h.request("GET", path, { token: key })).status, path).toBe(404);
    }
    // The key's first use writes its last_used_at off the request path: let it land before the
    // refused request is measured.
    await eventually(
      async () =>
        (await h.db.query("select 1 from api_keys where id = $1 and last_used_at is not null", [created.body.id]))
          .length === 1,
      "the key's first use recorded",
    );
    expect(
      (await h.refused("DELETE", `/api/routers/${defaultRouter}`, { token: key })).status,
      "removing another team's router",
    ).toBe(404);
    // What it enrolls lands in its own team, and a key it makes is bound there too.
    const enrolled = await h.request("POST", "/api/routers", { token: key, body: { name: "team 2" } });
    expect(enrolled.status).toBe(201);
    const [row] = await h.db.query<{ team_id: string }>("select team_id from routers where id = $1", [
      enrolled.body.data.router.id,
    ]);
    expect(row?.team_id).toBe(secondTeam);
    const child = await h.request("POST", "/v1/api-keys", {
      token: key,
      body: { name: "child", scopes: ["routers:read"] },
    });
    expect(child.status).toBe(201);
    const childList = await h.request("GET", "/api/routers", { token: child.body.key });
    expect(childList.body.data.map((r: { id: string }) => r.id)).toEqual([enrolled.body.data.router.id]);
    // The default-team token still sees only its own router.
    const own = await h.request("GET", "/api/routers", { token: user.token });
    expect(own.body.data.map((r: { id: string }) => r.id)).toEqual([defaultRouter]);
  });

  it("refuses to make a key for a team of another organization (403), writing nothing", async () => {
    const user = await h.login();
    const stranger = await h.login();
    const token = await sign({ sub: user.userId, id: user.organizationId, team: stranger.teamId, scope: ALL });
    const res = await h.refused("POST", "/v1/api-keys", { token, body: { name: "k", scopes: ["routers:read"] } });
    expect(res.status).toBe(403);
  });
});

describe("claims are data from outside (finding 12)", () => {
  it.each([
    ["a NUL in id", { id: "org\u0000x" }],
    ["a control character in id", { id: "Acme\u0007Corp" }],
    ["DEL in sub", { sub: "user\u007f" }],
    ["a newline in sub", { sub: "user\nadmin" }],
    ["a lone surrogate in id", { id: "org\ud800" }],
    ["an id over 255 characters", { id: "o".repeat(256) }],
    ["a sub over 255 characters", { sub: "u".repeat(256) }],
    ["a NUL in team", { team: "\u0000" }],
    ["an empty team", { team: "" }],
    ["a team over 255 characters", { team: "t".repeat(256) }],
    ["a team that is not a string", { team: 42 }],
  ])("%s: 401 on REST and tRPC, never 500, nothing stored", async (_case, bad) => {
    const token = await sign({
      sub: `ext-${crypto.randomUUID()}`,
      id: `ext-org-${crypto.randomUUID()}`,
      scope: ALL,
      ...bad,
    });
    for (const path of ["/v1/account", "/api/routers"]) {
      const res = await h.refused("GET", path, { token });
      expect(res.status, path).toBe(401);
      expect(res.body.message).toMatch(/well-formed/);
    }
    const trpc = await h.refused("GET", "/trpc/routers.list", { token });
    expect(trpc.status).toBe(401);
  });

  it("takes a 255-character external id (the edge) as an organization", async () => {
    const id = `x${"o".repeat(254)}`;
    const token = await sign({ sub: `ext-${crypto.randomUUID()}`, id, scope: ALL });
    expect((await h.request("GET", "/api/routers", { token })).status).toBe(200);
  });
});

describe("at most 100 live API keys per organization (finding 12)", () => {
  // 101 creations in a row: on a loaded machine the default 30 s is too short.
  it("the 100th is made, the 101st answers 429 with Retry-After and writes nothing; revoking one frees a slot", {
    timeout: 120_000,
  }, async () => {
    const user = await h.login();
    const make = (name: string, extra: object = {}) =>
      h.request("POST", "/v1/api-keys", { token: user.token, body: { name, scopes: ["routers:read"], ...extra } });
    // In parallel, as the attacker would: the limit holds under concurrency.
    const first = await Promise.all(Array.from({ length: 99 }, (_, i) => make(`k${i}`)));
    expect(first.map((r) => r.status)).toEqual(first.map(() => 201));
    const hundredth = await make("short", { expires_in_days: 1 });
    expect(hundredth.status).toBe(201);
    const over = await h.refused("POST", "/v1/api-keys", {
      token: user.token,
      body: { name: "k101", scopes: ["routers:read"] },
    });
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(over.body.message).toMatch(/100/);
    const burst = await Promise.all(Array.from({ length: 5 }, (_, i) => make(`burst${i}`)));
    expect(burst.map((r) => r.status)).toEqual(burst.map(() => 429));
    const [{ n } = { n: 0 }] = await h.db.query<{ n: number }>(
      "select count(*)::int as n from api_keys where organization_id = $1",
      [user.organizationId],
    );
    expect(n).toBe(100);
    // Revoking one frees a slot.
    const revoke = await h.request("DELETE", `/v1/api-keys/${hundredth.body.id}`, { token: user.token });
    expect(revoke.status).toBe(204);
    expect((await make("after revoke")).status).toBe(201);
    expect((await make("again")).status).toBe(429);
  });
});
