import { AuditLogRepository, acquireJobEngine } from "@fleet/db";
import { databaseFingerprint, expireForwards, makeAccount, makeRouter } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { pruneAuditLog } from "./prune-audit-log.job.ts";

let h: ApiHarness;
const clock = new ManualClock(Date.UTC(2026, 10, 23, 9, 0, 0));
const logger = pino({ level: "silent" });

beforeAll(async () => {
  h = await startApiHarness({}, { clock });
});

afterAll(async () => {
  await h?.close();
});

type Login = Awaited<ReturnType<ApiHarness["login"]>>;

const auditLog = async (user: Login, query = "") => {
  const res = await h.request("GET", `/api/audit-log${query}`, { token: user.token });
  expect(res.status).toBe(200);
  return res.body as { status: string; data: any[]; next_cursor: string | null };
};

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;

describe("every action is recorded once, with actor, target, router and source", () => {
  it("router.enrolled, forward.created, forward.revoked, forward.expired, router.removed over the API", async () => {
    const user = await h.login();
    await makeAccount(h.db, user.organizationId);
    const enrolled = await h.request("POST", "/api/routers", { token: user.token, body: { name: "Office" } });
    expect(enrolled.status).toBe(201);
    const routerId = enrolled.body.data.router.id as string;
    await h.db.query("update routers set tunnel_ip = '100.64.0.9' where id = $1", [routerId]);
    const forwardBody = {
      dst_address: "192.168.88.1",
      dst_port: 22,
      allow_from: "8.8.8.8",
      expire_after_minutes: 10,
    };
    const created = await h.request("POST", `/api/routers/${routerId}/transient-forwarding`, {
      token: user.token,
      body: forwardBody,
    });
    expect(created.status).toBe(201);
    const revokedId = created.body.data?.id ?? created.body.id;
    expect(
      (await h.request("DELETE", `/api/routers/${routerId}/transient-forwarding/${revokedId}`, { token: user.token }))
        .status,
    ).toBe(204);
    // Deleting again is a no-op: no second entry.
    await h.request("DELETE", `/api/routers/${routerId}/transient-forwarding/${revokedId}`, { token: user.token });
    const second = await h.request("POST", `/api/routers/${routerId}/transient-forwarding`, {
      token: user.token,
      body: forwardBody,
    });
    const expiredId = second.body.data?.id ?? second.body.id;
    const forwardCreator = await h.db.query<{ created_by_type: string; created_by_id: string }>(
      "select created_by_type, created_by_id from forwards where id = $1",
      [expiredId],
    );
    expect(forwardCreator[0]).toEqual({ created_by_type: "user", created_by_id: user.userId });
    // The tunnel agent's expiry sweep.
    // The sweep queues removal jobs: the process's job engine (shared with the API's).
    const engine = await acquireJobEngine(h.db);
    try {
      expect(await expireForwards(h.db, engine, new Date(clock.now().getTime() + 11 * 60_000))).toHaveLength(1);
    } finally {
      await engine.stop();
    }
    expect((await h.request("DELETE", `/api/routers/${routerId}`, { token: user.token })).status).toBe(204);

    const { data } = await auditLog(user);
    expect(data.map((e) => e.action).sort()).toEqual(
      [
        "forward.created",
        "forward.created",
        "forward.expired",
        "forward.revoked",
        "router.enrolled",
        "router.removed",
      ].sort(),
    );
    const byAction = (action: string) => data.filter((e) => e.action === action);
    const userActor = { type: "user", id: user.userId };
    expect(byAction("router.enrolled")[0]).toEqual({
      id: expect.any(String),
      occurred_at: expect.stringMatching(ISO),
      action: "router.enrolled",
      actor: userActor,
      target: { type: "router", id: routerId },
      router_id: routerId,
      source_ip: "127.0.0.1",
      details: { name: "Office", team_id: user.teamId },
    });
    expect(byAction("forward.revoked")[0]).toMatchObject({
      actor: userActor,
      target: { type: "forward", id: revokedId },
      router_id: routerId,
      source_ip: "127.0.0.1",
      details: { dst_address: "192.168.88.1", dst_port: 22 },
    });
    expect(byAction("forward.created")[0]).toMatchObject({
      actor: userActor,
      // Timestamps in details are written like every other answer's: whole seconds, +00:00.
      details: {
        allow_from: "8.8.8.8/32",
        dst_port: 22,
        expires_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/),
      },
    });
    expect(byAction("forward.expired")[0]).toMatchObject({
      actor: { type: "system", id: null },
      target: { type: "forward", id: expiredId },
    });
    expect(byAction("forward.expired")[0]).not.toHaveProperty("source_ip");
    expect(byAction("router.removed")[0]).toMatchObject({ actor: userActor, router_id: routerId });
    // The history of a removed router stays, and the router filter still finds it.
    expect((await auditLog(user, `?router_id=${routerId}`)).data).toHaveLength(6);
  });

  it("an API key is the actor of what it does", async () => {
    const user = await h.login();
    const key = (
      await h.request("POST", "/v1/api-keys", {
        token: user.token,
        body: { name: "ops", scopes: ["routers:read", "routers:write", "account:write"] },
      })
    ).body;
    await makeAccount(h.db, user.organizationId);
    const enrolled = await h.request("POST", "/api/routers", { token: key.key, body: {} });
    expect(enrolled.status).toBe(201);
    expect((await h.request("DELETE", `/v1/api-keys/${key.id}`, { token: user.token })).status).toBe(204);
    const { data } = await auditLog(user);
    // API keys run on the token clock, routers on the domain clock: compare without order.
    expect(data.map((e) => [e.action, e.actor]).sort()).toEqual([
      ["api_key.created", { type: "user", id: user.userId }],
      ["api_key.revoked", { type: "user", id: user.userId }],
      ["router.enrolled", { type: "api_key", id: key.id }],
    ]);
    expect(data.find((e) => e.action === "api_key.created").details).toMatchObject({ name: "ops", prefix: key.prefix });
    expect(JSON.stringify(data)).not.toContain(key.key);
  });

  it("relay connection entries (batched) land in the forward's organization", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user, { tunnelIp: "100.64.0.10" });
    const created = await h.request("POST", `/api/routers/${router.id}/transient-forwarding`, {
      token: user.token,
      body: { dst_address: "10.0.0.2", dst_port: 443, allow_from: "8.8.4.0/24", expire_after_minutes: 30 },
    });
    const forwardId = created.body.data?.id ?? created.body.id;
    await new AuditLogRepository(h.db).recordForwardEvents([
      {
        forwardId,
        occurredAt: clock.now(),
        action: "forward.connection.accepted",
        sourceIp: "8.8.4.4",
        details: { source_ip: "8.8.4.4", bytes_in: 10, bytes_out: 20, duration_s: 1.5 },
      },
      {
        forwardId,
        occurredAt: clock.now(),
        action: "forward.connection.denied",
        sourceIp: "192.0.2.1",
        details: { source_ip: "192.0.2.1" },
      },
      // A forward that does not exist is dropped, not misfiled.
      {
        forwardId: crypto.randomUUID(),
        occurredAt: clock.now(),
        action: "forward.connection.denied",
        sourceIp: null,
        details: {},
      },
    ]);
    const accepted = (await auditLog(user, "?action=forward.connection.accepted")).data;
    expect(accepted).toEqual([
      expect.objectContaining({
        target: { type: "forward", id: forwardId },
        router_id: router.id,
        source_ip: "8.8.4.4",
        details: { source_ip: "8.8.4.4", bytes_in: 10, bytes_out: 20, duration_s: 1.5 },
      }),
    ]);
    expect((await auditLog(user, "?action=forward.connection.denied")).data).toHaveLength(1);
  });
});

describe("GET /api/audit-log", () => {
  const seed = async (user: Login, n: number) => {
    const start = Date.UTC(2026, 10, 1);
    await h.db.query(
      `insert into audit_log (id, organization_id, occurred_at, action, actor_type, actor_id, target_type, target_id, details, dispatched_at)
       select gen_random_uuid(), $1, to_timestamp(($2::float8 + (i / 3) * 1000) / 1000.0), 'api_key.created', 'system', null, 'api_key', i::text, '{}'::jsonb, now()
       from generate_series(1, $3) as i`,
      [user.organizationId, start, n],
    );
  };

  // Paging (order, ties, next_cursor) and tenancy are AuditLogService's rules: audit-log.service.test.ts.
  it("checks limit at its edges and refuses bad cursors and unknown actions with 422", async () => {
    const user = await h.login();
    await seed(user, 3);
    expect((await auditLog(user, "?limit=1")).data).toHaveLength(1);
    expect((await auditLog(user, "?limit=200")).data).toHaveLength(3);
    expect((await auditLog(user)).data).toHaveLength(3);
    for (const query of [
      "?limit=0",
      "?limit=201",
      "?limit=abc",
      "?limit=1.5",
      "?limit=",
      "?cursor=nonsense",
      "?cursor=",
      "?action=router.exploded",
      "?router_id=a%00b",
      "?action=%07",
    ]) {
      const res = await h.request("GET", `/api/audit-log${query}`, { token: user.token });
      expect(res.status, query).toBe(422);
      expect(res.body.status).toBe("fail");
      expect(Object.keys(res.body.data ?? {}), query).toEqual([query.slice(1, query.indexOf("="))]);
    }
    expect((await auditLog(user, "?router_id=not-a-uuid")).data).toEqual([]);
    // Every filter is optional over tRPC too: a typed client may pass no input at all.
    const client = createClient({ url: h.api.url, token: user.token });
    expect((await client.auditLog.list.query()).data).toHaveLength(3);
  });

  it("needs routers:read", async () => {
    const user = await h.login(undefined, { scope: "account:read" });
    expect((await h.request("GET", "/api/audit-log", { token: user.token })).status).toBe(403);
    expect((await h.request("GET", "/api/audit-log")).status).toBe(401);
  });

  it("is index-backed: each query shape walks an (organization_id, ...) index with no sort", async () => {
    const user = await h.login();
    const others = await Promise.all([1, 2, 3].map(() => h.login()));
    for (const other of others) await seed(other, 2_000);
    await seed(user, 6_000);
    await h.db.query("analyze audit_log");
    const repo = new AuditLogRepository(h.db);
    const plans = {
      plain: await repo.explainList({ organizationId: user.organizationId, limit: 51 }),
      router: await repo.explainList({ organizationId: user.organizationId, limit: 51, routerId: crypto.randomUUID() }),
      action: await repo.explainList({ organizationId: user.organizationId, limit: 51, action: "router.offline" }),
      cursor: await repo.explainList({
        organizationId: user.organizationId,
        limit: 51,
        before: { occurredAt: new Date(), id: crypto.randomUUID() },
      }),
    };
    for (const [name, plan] of Object.entries(plans)) {
      expect(plan, name).toMatch(/Index Scan Backward using audit_log_org_\w+_index/);
      expect(plan, name).not.toMatch(/Sort|Seq Scan/);
    }
    console.log(
      `audit-log plans:\n${Object.entries(plans)
        .map(([k, v]) => `-- ${k}\n${v}`)
        .join("\n")}`,
    );
  });
});

describe("retention", () => {
  it("pruneAuditLog deletes entries older than AUDIT_RETENTION_DAYS, keeps the rest", async () => {
    const user = await h.login();
    const now = clock.now().getTime();
    const day = 86_400_000;
    for (const age of [366 * day, 365 * day + 1_000, 365 * day - 1_000, 1 * day]) {
      await h.db.query(
        `insert into audit_log (id, organization_id, occurred_at, action, actor_type, target_type, target_id, details, dispatched_at)
         values (gen_random_uuid(), $1, to_timestamp($2::float8 / 1000.0), 'api_key.created', 'system', 'api_key', $3, '{}', now())`,
        [user.organizationId, now - age, String(age)],
      );
    }
    const removed = await pruneAuditLog({
      audit: new AuditLogRepository(h.db),
      clock,
      retentionDays: 365,
      logger,
    });
    expect(removed).toBeGreaterThanOrEqual(2);
    const left = (await auditLog(user)).data.map((e) => Number(e.target.id));
    expect(left.sort((a, b) => a - b)).toEqual([1 * day, 365 * day - 1_000]);
  });

  it("AUDIT_RETENTION_DAYS is parsed at start-up: 1 and 36500 ok, 0 and junk refused", async () => {
    const { loadApiConfig } = await import("../../config.ts");
    expect(loadApiConfig({}).events.auditRetentionDays).toBe(365);
    expect(loadApiConfig({ AUDIT_RETENTION_DAYS: "1" }).events.auditRetentionDays).toBe(1);
    expect(loadApiConfig({ AUDIT_RETENTION_DAYS: "36500" }).events.auditRetentionDays).toBe(36_500);
    expect(() => loadApiConfig({ AUDIT_RETENTION_DAYS: "0" })).toThrow(/AUDIT_RETENTION_DAYS/);
    expect(() => loadApiConfig({ AUDIT_RETENTION_DAYS: "abc" })).toThrow(/AUDIT_RETENTION_DAYS/);
  });
});

describe("tRPC auditLog.list", () => {
  it("answers the REST body", async () => {
    const user = await h.login();
    await h.request("POST", "/v1/api-keys", { token: user.token, body: { name: "x", scopes: ["routers:read"] } });
    const client = createClient({ url: h.api.url, token: user.token });
    const page = await client.auditLog.list.query({ limit: 10 });
    expect(page.status).toBe("success");
    expect(page.data.map((e) => e.action)).toEqual(["api_key.created"]);
    expect(page.next_cursor).toBeNull();
    const before = await databaseFingerprint(h.db);
    await expect(client.auditLog.list.query({ limit: 0 })).rejects.toThrow();
    expect(await databaseFingerprint(h.db)).toBe(before);
  });
});
