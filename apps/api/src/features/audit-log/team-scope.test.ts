import { createSecretKey } from "node:crypto";
import { makeAccount } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

/**
 * Issue 35, finding 5 (docs/api.md "Audit log and webhooks"): a team-bound credential sees in the
 * audit log only its team's entries, its webhooks belong to its team and receive only that team's
 * events, and another team's webhook answers it 404. Organization-wide credentials see everything.
 */
let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness(
    { TRIAL_ROUTERS: "100", WEBHOOK_ALLOW_PRIVATE: "true" },
    { webhookTiming: { retryDelaySeconds: 60, pollMs: 25 } },
  );
});
afterAll(() => h?.close());

const ALL = "account:read account:write routers:read routers:write";
/** Nothing listens there: deliveries are stored (and fail), which is all these tests read. */
const RECEIVER = "http://127.0.0.1:9/hook";

const sign = (claims: Record<string, unknown>) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("5m")
    .sign(createSecretKey(Buffer.from(h.config.auth.jwtSecret ?? "")));

interface Tenant {
  /** An organization-wide token (the default team's). */
  org: string;
  organizationId: string;
  /** An API key made with a token naming the second team. */
  teamKey: string;
  teamKeyId: string;
  secondTeam: string;
}

const tenant = async (): Promise<Tenant> => {
  const user = await h.login();
  await makeAccount(h.db, user.organizationId);
  const secondTeam = crypto.randomUUID();
  await h.db.query(
    "insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, 'Second', false, now())",
    [secondTeam, user.organizationId],
  );
  const teamToken = await sign({ sub: user.userId, id: user.organizationId, team: secondTeam, scope: ALL });
  const key = await h.request("POST", "/v1/api-keys", {
    token: teamToken,
    body: { name: "second team", scopes: ["routers:read", "routers:write", "account:read"] },
  });
  expect(key.status).toBe(201);
  return {
    org: user.token,
    organizationId: user.organizationId,
    teamKey: key.body.key,
    teamKeyId: key.body.id,
    secondTeam,
  };
};

const enroll = async (token: string, name: string): Promise<string> => {
  const res = await h.request("POST", "/api/routers", { token, body: { name } });
  expect(res.status).toBe(201);
  return res.body.data.router.id;
};

const createWebhook = async (token: string): Promise<string> => {
  const res = await h.request("POST", "/api/webhooks", { token, body: { url: RECEIVER, events: ["*"] } });
  expect(res.status).toBe(201);
  return res.body.data.id;
};

const auditOf = async (token: string, query = "") => {
  const res = await h.request("GET", `/api/audit-log${query}`, { token });
  expect(res.status).toBe(200);
  return res.body.data as Array<{ action: string; router_id?: string; target: { id: string } }>;
};

describe("the audit log of a team-bound credential", () => {
  it("holds its team's routers' entries and its team's own actions, nothing of other teams", async () => {
    const t = await tenant();
    const defaultRouter = await enroll(t.org, "default team");
    const teamRouter = await enroll(t.teamKey, "second team");
    const orgHook = await createWebhook(t.org);
    const teamHook = await createWebhook(t.teamKey);
    // Removed in its own team: the entry written after the row is gone still belongs to the team.
    expect((await h.request("DELETE", `/api/routers/${teamRouter}`, { token: t.teamKey })).status).toBe(204);

    const seen = (await auditOf(t.teamKey)).map((e) => `${e.action} ${e.target.id}`).sort();
    expect(seen).toEqual(
      [
        `api_key.created ${t.teamKeyId}`,
        `router.enrolled ${teamRouter}`,
        `router.removed ${teamRouter}`,
        `webhook.created ${teamHook}`,
      ].sort(),
    );
    expect(await auditOf(t.teamKey, `?router_id=${defaultRouter}`)).toEqual([]);
    expect(await auditOf(t.teamKey, "?action=webhook.created")).toHaveLength(1);

    // The organization-wide token sees all of it.
    const all = (await auditOf(t.org)).map((e) => `${e.action} ${e.target.id}`);
    for (const entry of [...seen, `router.enrolled ${defaultRouter}`, `webhook.created ${orgHook}`]) {
      expect(all).toContain(entry);
    }
  });
});

describe("webhooks of a team-bound credential", () => {
  it("lists, tests, reads and deletes only its team's webhooks; others answer 404", async () => {
    const t = await tenant();
    const orgHook = await createWebhook(t.org);
    const teamHook = await createWebhook(t.teamKey);

    const listed = await h.request("GET", "/api/webhooks", { token: t.teamKey });
    expect(listed.body.data.map((w: { id: string }) => w.id)).toEqual([teamHook]);
    const everything = await h.request("GET", "/api/webhooks", { token: t.org });
    expect(everything.body.data.map((w: { id: string }) => w.id).sort()).toEqual([orgHook, teamHook].sort());

    expect((await h.request("GET", `/api/webhooks/${orgHook}/deliveries`, { token: t.teamKey })).status).toBe(404);
    // (Not `h.refused`: the dispatcher and the delivery worker write meanwhile; what must not
    // change is read below.)
    expect((await h.request("POST", `/api/webhooks/${orgHook}/test`, { token: t.teamKey })).status).toBe(404);
    expect((await h.request("DELETE", `/api/webhooks/${orgHook}`, { token: t.teamKey })).status).toBe(404);
    // tRPC says the same.
    const trpc = await h.request("POST", "/trpc/webhooks.delete", { token: t.teamKey, body: { id: orgHook } });
    expect(trpc.status).toBe(404);
    const tests = await h.db.query(
      "select 1 from webhook_deliveries where webhook_id = $1 and event_type = 'webhook.test'",
      [orgHook],
    );
    expect(tests).toEqual([]);
    const still = await h.request("GET", "/api/webhooks", { token: t.org });
    expect(still.body.data.map((w: { id: string }) => w.id).sort()).toEqual([orgHook, teamHook].sort());

    expect((await h.request("GET", `/api/webhooks/${teamHook}/deliveries`, { token: t.teamKey })).status).toBe(200);
    expect((await h.request("DELETE", `/api/webhooks/${teamHook}`, { token: t.teamKey })).status).toBe(204);
    // The organization-wide token deletes any of them.
    expect((await h.request("DELETE", `/api/webhooks/${orgHook}`, { token: t.org })).status).toBe(204);
  });

  it("a team's webhook receives only its team's events; an organization-wide one receives all", async () => {
    const t = await tenant();
    const orgHook = await createWebhook(t.org);
    const teamHook = await createWebhook(t.teamKey);
    const defaultRouter = await enroll(t.org, "default team");
    const teamRouter = await enroll(t.teamKey, "second team");

    const delivered = async (webhookId: string) =>
      (
        await h.db.query<{ router_id: string | null; action: string }>(
          `select a.router_id, a.action from webhook_deliveries d join audit_log a on a.id = d.audit_id
           where d.webhook_id = $1`,
          [webhookId],
        )
      ).map((row) => `${row.action} ${row.router_id}`);
    await eventually(async () => (await delivered(orgHook)).length >= 3, "the organization's webhook got its events");
    // Every entry has been dispatched: what each webhook got is final.
    await eventually(
      async () =>
        (
          await h.db.query("select 1 from audit_log where organization_id = $1 and dispatched_at is null", [
            t.organizationId,
          ])
        ).length === 0,
      "every entry dispatched",
    );
    expect((await delivered(teamHook)).sort()).toEqual(
      [`router.enrolled ${teamRouter}`, `webhook.created null`].sort(),
    );
    expect(await delivered(orgHook)).toEqual(
      expect.arrayContaining([`router.enrolled ${defaultRouter}`, `router.enrolled ${teamRouter}`]),
    );
  });
});

describe("a token naming a team of another organization", () => {
  it("is refused (403) on the audit log and webhooks, as on router endpoints", async () => {
    const user = await h.login();
    const stranger = await h.login();
    const token = await sign({ sub: user.userId, id: user.organizationId, team: stranger.teamId, scope: ALL });
    expect((await h.request("GET", "/api/audit-log", { token })).status).toBe(403);
    expect((await h.request("GET", "/api/webhooks", { token })).status).toBe(403);
    expect((await h.refused("POST", "/api/webhooks", { token, body: { url: RECEIVER, events: ["*"] } })).status).toBe(
      403,
    );
  });
});
