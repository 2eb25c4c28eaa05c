import { createHmac, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { AuditLogRepository, acquireJobEngine, insertAuditEntries, queryOf, SYSTEM_ORIGIN } from "@fleet/db";
import { databaseFingerprint, expireForwards, makeAccount } from "@fleet/db/testing";
import { EVENT_LIMITS } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { WEBHOOK_CONCURRENCY_PER_ORGANIZATION } from "./webhook-delivery.worker.ts";
import { checkWebhookUrl, sendWebhook } from "./webhook-target.ts";
import { EMBEDDED_PRIVATE_IPV4_URLS } from "../../testing/webhook-urls.ts";

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  path: string;
}

/** A webhook target: records every request; `respond` decides each answer (default 204). */
const startReceiver = async () => {
  const received: Received[] = [];
  const held: http.ServerResponse[] = [];
  let respond: (req: Received, res: http.ServerResponse) => void = (_req, res) => res.writeHead(204).end();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const entry = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), path: req.url ?? "" };
      received.push(entry);
      respond(entry, res);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    held,
    setRespond: (fn: typeof respond) => {
      respond = fn;
    },
    close: () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

/**
 * Standard Webhooks verification written from the spec with node:crypto only (not the library the
 * sender uses): HMAC-SHA256 over "<id>.<timestamp>.<body>" keyed by the base64-decoded secret.
 */
const verifySignature = (secret: string, headers: http.IncomingHttpHeaders, body: string): boolean => {
  const id = String(headers["webhook-id"]);
  const timestamp = String(headers["webhook-timestamp"]);
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
  return String(headers["webhook-signature"])
    .split(" ")
    .some((part) => {
      const [version, signature] = part.split(",");
      const given = Buffer.from(signature ?? "", "base64");
      return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
    });
};

let h: ApiHarness;

/** Earlier tests' deliveries have all ended: nothing in the outbox, no delivery job waiting or running. */
const quietQueue = () =>
  eventually(async () => {
    const engine = await h.db.query<{ t: string | null }>("select to_regclass('pgboss.job')::text as t");
    const busy = engine[0]?.t
      ? await h.db.query(
          "select 1 from pgboss.job where name = 'webhook.deliver' and state in ('created', 'retry', 'active') limit 1",
        )
      : [];
    const outbox = await h.db.query("select 1 from audit_log where dispatched_at is null limit 1");
    return busy.length === 0 && outbox.length === 0 ? true : undefined;
  }, "a quiet queue");
let receiver: Awaited<ReturnType<typeof startReceiver>>;
type Login = Awaited<ReturnType<ApiHarness["login"]>>;

beforeAll(async () => {
  h = await startApiHarness({ WEBHOOK_ALLOW_PRIVATE: "true" }, { webhookTiming: { retryDelaySeconds: 1, pollMs: 25 } });
});

afterAll(async () => {
  await h?.close();
});

afterEach(async () => {
  await receiver?.close();
});

const createWebhook = async (user: Login, body: object) => {
  const res = await h.request("POST", "/api/webhooks", { token: user.token, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { id: string; secret: string; url: string };
};

const bodiesOf = (path: string) =>
  receiver.received.filter((r) => r.path === path).map((r) => ({ ...r, json: JSON.parse(r.body) }));

describe("webhook CRUD", () => {
  it("creates (201, secret once, stored encrypted), lists without secret, deletes (204) with audit entries", async () => {
    receiver = await startReceiver();
    const user = await h.login();
    const res = await h.request("POST", "/api/webhooks", {
      token: user.token,
      body: { url: `${receiver.url}/a`, events: ["router.offline", "router.online"], description: "NOC" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      status: "success",
      data: {
        id: expect.any(String),
        url: `${receiver.url}/a`,
        events: ["router.offline", "router.online"],
        description: "NOC",
        format: "standard",
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
        created_at: expect.stringMatching(/\+00:00$/),
        disabled_at: null,
      },
    });
    const { id, secret } = res.body.data;
    const rows = JSON.stringify(await h.db.query("select * from webhooks"));
    expect(rows).not.toContain(secret.slice(6));
    const list = await h.request("GET", "/api/webhooks", { token: user.token });
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]).not.toHaveProperty("secret");
    expect((await h.request("DELETE", `/api/webhooks/${id}`, { token: user.token })).status).toBe(204);
    expect((await h.request("DELETE", `/api/webhooks/${id}`, { token: user.token })).status).toBe(404);
    const audit = (await h.request("GET", "/api/audit-log", { token: user.token })).body.data;
    expect(audit.map((e: { action: string }) => e.action)).toEqual(["webhook.deleted", "webhook.created"]);
    expect(audit[1]).toMatchObject({ target: { type: "webhook", id }, actor: { type: "user", id: user.userId } });
  });

  it("refuses bad input with 422 and writes nothing", async () => {
    const user = await h.login();
    // Earlier tests' deliveries settle first, so the fingerprint sees only this test's requests.
    await quietQueue();
    const before = await databaseFingerprint(h.db);
    for (const body of [
      { url: "ftp://example.com/x", events: ["*"] },
      { url: "not a url", events: ["*"] },
      { url: "https://user:pw@example.com/", events: ["*"] },
      { url: "https://example.com/", events: [] },
      { url: "https://example.com/", events: ["router.exploded"] },
      { url: "https://example.com/", events: ["*"], format: "teams" },
      { url: "https://example.com/", events: ["*"], description: "x".repeat(501) },
      { url: `https://example.com/${"a".repeat(2048)}`, events: ["*"] },
      { url: "https://example.com/\u0000", events: ["*"] },
    ]) {
      const res = await h.request("POST", "/api/webhooks", { token: user.token, body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(res.body.status).toBe("fail");
    }
    expect(await databaseFingerprint(h.db)).toBe(before);
    const reader = await h.login(undefined, { scope: "routers:read" });
    expect(
      (
        await h.request("POST", "/api/webhooks", {
          token: reader.token,
          body: { url: "https://example.com/", events: ["*"] },
        })
      ).status,
    ).toBe(403);
  });

  it("another organization's webhook answers 404 everywhere and receives nothing of ours", async () => {
    receiver = await startReceiver();
    const a = await h.login();
    const b = await h.login();
    const hookA = await createWebhook(a, { url: `${receiver.url}/a`, events: ["*"] });
    const hookB = await createWebhook(b, { url: `${receiver.url}/b`, events: ["*"] });
    for (const [method, path] of [
      ["DELETE", `/api/webhooks/${hookA.id}`],
      ["POST", `/api/webhooks/${hookA.id}/test`],
      ["GET", `/api/webhooks/${hookA.id}/deliveries`],
      ["POST", "/api/webhooks/not-a-uuid/test"],
    ] as const) {
      expect((await h.request(method, path, { token: b.token })).status, path).toBe(404);
    }
    expect(
      (await h.request("GET", "/api/webhooks", { token: b.token })).body.data.map((w: { id: string }) => w.id),
    ).toEqual([hookB.id]);
    // A's events (its webhook.created and an API key) reach only A's target.
    await h.request("POST", "/v1/api-keys", { token: a.token, body: { name: "k", scopes: ["routers:read"] } });
    await eventually(() => bodiesOf("/a").some((r) => r.json.type === "api_key.created"), "A's delivery");
    await eventually(() => bodiesOf("/b").some((r) => r.json.type === "webhook.created"), "B's own event");
    expect(bodiesOf("/b").map((r) => r.json.type)).toEqual(["webhook.created"]);
    expect(bodiesOf("/b")[0]?.json.data.target.id).toBe(hookB.id);
    expect((await h.request("GET", `/api/webhooks/${hookA.id}/deliveries`, { token: a.token })).status).toBe(200);
  });
});

describe("delivery", () => {
  it("every action reaches a subscribed webhook once, signed per Standard Webhooks (checked with node:crypto)", async () => {
    receiver = await startReceiver();
    const user = await h.login();
    const hook = await createWebhook(user, { url: `${receiver.url}/all`, events: ["*"] });
    const filtered = await createWebhook(user, { url: `${receiver.url}/offline`, events: ["router.offline"] });

    // API actions.
    await makeAccount(h.db, user.organizationId);
    const key = (
      await h.request("POST", "/v1/api-keys", { token: user.token, body: { name: "k", scopes: ["routers:read"] } })
    ).body;
    await h.request("DELETE", `/v1/api-keys/${key.id}`, { token: user.token });
    const enrolled = await h.request("POST", "/api/routers", { token: user.token, body: { name: "r" } });
    const routerId = enrolled.body.data.router.id;
    await h.db.query("update routers set tunnel_ip = '100.64.1.1' where id = $1", [routerId]);
    await h.db.query("insert into router_liveness (router_id, has_pulse) values ($1, true)", [routerId]);
    const forward = async () => {
      const res = await h.request("POST", `/api/routers/${routerId}/transient-forwarding`, {
        token: user.token,
        body: { dst_address: "10.1.1.1", dst_port: 22, allow_from: "8.8.8.8", expire_after_minutes: 10 },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return String(res.body.data?.id ?? res.body.id);
    };
    const revoked = await forward();
    await h.request("DELETE", `/api/routers/${routerId}/transient-forwarding/${revoked}`, { token: user.token });
    const expiring = await forward();
    // The sweep queues removal jobs: the process's job engine (shared with the API's).
    const engine = await acquireJobEngine(h.db);
    try {
      await expireForwards(h.db, engine, new Date(Date.now() + 11 * 60_000));
    } finally {
      await engine.stop();
    }
    // Relay (batched) and heartbeat daemon (fault open/complete) writes.
    await new AuditLogRepository(h.db).recordForwardEvents([
      {
        forwardId: expiring,
        occurredAt: new Date(),
        action: "forward.connection.accepted",
        sourceIp: "8.8.8.8",
        details: { source_ip: "8.8.8.8", bytes_in: 1, bytes_out: 2, duration_s: 0.5 },
      },
      {
        forwardId: expiring,
        occurredAt: new Date(),
        action: "forward.connection.denied",
        sourceIp: "1.1.1.1",
        details: {},
      },
    ]);
    // The heartbeat daemon's fault entries, as its services write them in one batch (apps/heartbeat-daemon/src/faults/fault-audit.ts).
    const fault = { organizationId: user.organizationId, actor: SYSTEM_ORIGIN.actor, routerId, sourceIp: null };
    const faultId = crypto.randomUUID();
    await insertAuditEntries(queryOf(h.db), [
      {
        ...fault,
        occurredAt: new Date(),
        action: "router.offline",
        target: { type: "router", id: routerId },
        details: { fault_id: faultId, message: "down" },
      },
      {
        ...fault,
        occurredAt: new Date(),
        action: "router.online",
        target: { type: "router", id: routerId },
        details: { fault_id: faultId, cause: "Power", duration_s: 0 },
      },
    ]);
    await h.request("DELETE", `/api/routers/${routerId}`, { token: user.token });
    const other = await createWebhook(user, { url: `${receiver.url}/other`, events: ["router.online"] });
    await h.request("DELETE", `/api/webhooks/${other.id}`, { token: user.token });

    const expected = [
      "webhook.created",
      "webhook.created",
      "api_key.created",
      "api_key.revoked",
      "router.enrolled",
      "forward.created",
      "forward.revoked",
      "forward.created",
      "forward.expired",
      "forward.connection.accepted",
      "forward.connection.denied",
      "router.offline",
      "router.online",
      "router.removed",
      "webhook.created",
      "webhook.deleted",
    ];
    await eventually(() => bodiesOf("/all").length >= expected.length || undefined, "all deliveries");
    const all = bodiesOf("/all");
    expect(all.map((r) => r.json.type).sort()).toEqual([...expected].sort());
    const audit = (await h.request("GET", "/api/audit-log?limit=200", { token: user.token })).body.data as Array<{
      id: string;
      action: string;
    }>;
    expect(audit).toHaveLength(expected.length);
    const ids = new Set<string>();
    for (const r of all) {
      expect(verifySignature(hook.secret, r.headers, r.body), r.json.type).toBe(true);
      expect(verifySignature(filtered.secret, r.headers, r.body)).toBe(false);
      expect(r.headers["content-type"]).toBe("application/json");
      expect(String(r.headers["webhook-id"])).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(Math.abs(Number(r.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(600);
      expect(r.json).toEqual({
        type: expect.any(String),
        timestamp: expect.stringMatching(/\+00:00$/),
        data: expect.any(Object),
      });
      // The data is the audit entry as GET /api/audit-log shows it.
      expect(audit.find((e) => e.id === r.json.data.id)).toEqual(r.json.data);
      ids.add(String(r.headers["webhook-id"]));
    }
    expect(ids.size).toBe(expected.length);
    // The filtered webhook got exactly its one action.
    await eventually(() => bodiesOf("/offline").length === 1 || undefined, "filtered delivery");
    expect(bodiesOf("/offline").map((r) => r.json.type)).toEqual(["router.offline"]);
    expect(
      verifySignature(filtered.secret, bodiesOf("/offline")[0]?.headers ?? {}, bodiesOf("/offline")[0]?.body ?? ""),
    ).toBe(true);
  });

  it("retries a 500 with backoff and the same webhook-id; the delivery log shows the attempts", async () => {
    receiver = await startReceiver();
    let calls = 0;
    receiver.setRespond((_req, res) => {
      calls++;
      if (calls <= 2) res.writeHead(500, { "content-type": "text/plain" }).end("boom");
      else res.writeHead(200).end("ok");
    });
    const deliveries = async (result: string) => {
      const text = String((await h.request("GET", "/metrics")).body);
      const line = text.split("\n").find((l) => l.startsWith(`fleet_webhook_deliveries_total{result="${result}"} `));
      return line === undefined ? 0 : Number(line.split(" ")[1]);
    };
    // The counters are the process's: earlier tests' deliveries end first, so only this one's count.
    await quietQueue();
    const before = { delivered: await deliveries("delivered"), failed: await deliveries("failed") };
    const user = await h.login();
    const hook = await createWebhook(user, { url: `${receiver.url}/retry`, events: ["api_key.created"] });
    const test = await h.request("POST", `/api/webhooks/${hook.id}/test`, { token: user.token });
    expect(test.status).toBe(200);
    expect(test.body.data).toMatchObject({ status: "pending", event_type: "webhook.test", attempts: 0 });
    await eventually(() => (calls >= 3 ? true : undefined), "three attempts");
    const attempts = bodiesOf("/retry");
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((a) => a.headers["webhook-id"])).size).toBe(1);
    expect(attempts[0]?.headers["webhook-id"]).toBe(test.body.data.message_id);
    for (const a of attempts) {
      expect(a.body).toBe(attempts[0]?.body);
      expect(verifySignature(hook.secret, a.headers, a.body)).toBe(true);
      expect(a.json).toMatchObject({ type: "webhook.test", data: { webhook_id: hook.id } });
    }
    const log = await eventually(async () => {
      const res = await h.request("GET", `/api/webhooks/${hook.id}/deliveries`, { token: user.token });
      return res.body.data[0]?.status === "succeeded" ? res.body.data : undefined;
    }, "succeeded delivery");
    expect(log).toEqual([
      expect.objectContaining({
        message_id: test.body.data.message_id,
        attempts: 3,
        response_status: 200,
        response_body: "ok",
        error: null,
      }),
    ]);
    // docs/operations.md "Metrics and probes": two failed attempts, then one delivered.
    expect((await deliveries("failed")) - before.failed).toBe(2);
    expect((await deliveries("delivered")) - before.delivered).toBe(1);
  });

  it("a target that never answers holds neither the API nor other webhooks; answers are kept to 1 KiB", async () => {
    receiver = await startReceiver();
    receiver.setRespond((req, res) => {
      if (req.path === "/hang") receiver.held.push(res);
      else res.writeHead(500).end("x".repeat(5_000));
    });
    const user = await h.login();
    const hanging = await createWebhook(user, { url: `${receiver.url}/hang`, events: ["*"] });
    await eventually(() => bodiesOf("/hang").length > 0 || undefined, "hanging request open");
    // The target holds its request open; the API keeps answering and other webhooks keep delivering.
    const big = await createWebhook(user, { url: `${receiver.url}/big`, events: ["*"] });
    expect((await h.request("GET", "/api/audit-log", { token: user.token })).status).toBe(200);
    await eventually(() => bodiesOf("/big").length > 0 || undefined, "other webhook delivered");
    expect(receiver.held.length).toBeGreaterThan(0);
    expect(receiver.held.every((res) => !res.writableEnded)).toBe(true);
    const log = await eventually(async () => {
      const res = await h.request("GET", `/api/webhooks/${big.id}/deliveries`, { token: user.token });
      return res.body.data[0]?.response_status === 500 ? res.body.data : undefined;
    }, "recorded 500");
    expect(log[0].response_body).toHaveLength(1024);
    expect(hanging.id).toBeTruthy();
  });

  it("redirects are not followed", async () => {
    receiver = await startReceiver();
    receiver.setRespond((req, res) => {
      if (req.path === "/moved") res.writeHead(307, { location: `${receiver.url}/elsewhere` }).end();
      else res.writeHead(204).end();
    });
    const user = await h.login();
    const hook = await createWebhook(user, { url: `${receiver.url}/moved`, events: ["api_key.created"] });
    await h.request("POST", `/api/webhooks/${hook.id}/test`, { token: user.token });
    const log = await eventually(async () => {
      const res = await h.request("GET", `/api/webhooks/${hook.id}/deliveries`, { token: user.token });
      return res.body.data[0]?.response_status === 307 ? res.body.data : undefined;
    }, "recorded 307");
    expect(log[0].status).toBe("pending");
    expect(bodiesOf("/elsewhere")).toEqual([]);
  });

  it('"format": "slack" sends one line of text', async () => {
    receiver = await startReceiver();
    const user = await h.login();
    await createWebhook(user, { url: `${receiver.url}/slack`, events: ["api_key.created"], format: "slack" });
    const key = (
      await h.request("POST", "/v1/api-keys", { token: user.token, body: { name: "k", scopes: ["routers:read"] } })
    ).body;
    await eventually(() => bodiesOf("/slack").length > 0 || undefined, "slack delivery");
    const [message] = bodiesOf("/slack");
    expect(Object.keys(message?.json ?? {})).toEqual(["text"]);
    expect(message?.json.text).toContain("*api_key.created*");
    expect(message?.json.text).toContain(key.id);
  });

  it("tRPC webhooks.create/list/test/delete answer the REST bodies", { timeout: 90_000 }, async () => {
    receiver = await startReceiver();
    const user = await h.login();
    const client = createClient({ url: h.api.url, token: user.token });
    const created = await client.webhooks.create.mutate({ url: `${receiver.url}/t`, events: ["*"] });
    expect(created.data.secret).toMatch(/^whsec_/);
    expect((await client.webhooks.list.query()).data.map((w) => w.id)).toEqual([created.data.id]);
    const tested = await client.webhooks.test.mutate({ id: created.data.id });
    expect(tested.data.event_type).toBe("webhook.test");
    await client.webhooks.delete.mutate({ id: created.data.id });
    expect((await client.webhooks.list.query()).data).toEqual([]);
    // The first webhook starts the job engine (pg-boss) lazily, which is slow on a loaded machine.
  });
});

describe("one organization's webhooks against another's", () => {
  // The cap's rules (parallel creates, other organizations, a delete frees a place): webhooks.service.test.ts.
  it("the 21st webhook of an organization is 429 with Retry-After in the /api envelope", async () => {
    const max = EVENT_LIMITS.webhooksPerOrganization;
    expect(max).toBe(20);
    const user = await h.login();
    const body = (i: number) => ({ url: `http://127.0.0.1:9/cap/${i}`, events: ["router.offline"] });
    for (let i = 0; i < max; i++) await createWebhook(user, body(i));
    const over = await h.request("POST", "/api/webhooks", { token: user.token, body: body(999) });
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({
      status: "fail",
      code: "rate_limited",
      message: expect.stringMatching(/20 webhooks/),
    });
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("one organization's receivers that never answer do not delay another organization's delivery", async () => {
    receiver = await startReceiver();
    let deadEnded = 0;
    receiver.setRespond((req, res) => {
      if (!req.path.startsWith("/dead/")) return void res.writeHead(204).end();
      receiver.held.push(res);
      res.on("close", () => {
        deadEnded += 1;
      });
    });
    // Tenant A: 20 webhooks at a receiver that never answers, each subscribed to everything, so
    // creating them alone queues up to 210 deliveries (each creation is an event for those before
    // it). Created at once: made one by one on a loaded machine, the first of A's held attempts
    // could reach their 10 s timeout before B's webhook exists, which is not what is tested here.
    const a = await h.login();
    const dead = (
      await Promise.all(
        Array.from({ length: EVENT_LIMITS.webhooksPerOrganization }, (_, i) =>
          createWebhook(a, { url: `${receiver.url}/dead/${i}`, events: ["*"] }),
        ),
      )
    ).map((created) => created.id);
    try {
      await eventually(
        () => receiver.held.length >= WEBHOOK_CONCURRENCY_PER_ORGANIZATION,
        "A's receivers hold requests",
      );
      // Tenant B's delivery must not wait for A's attempts to time out (10 s): it arrives while
      // every request A's receivers hold is still open, and A never holds more than its share.
      const b = await h.login();
      await createWebhook(b, { url: `${receiver.url}/alive`, events: ["*"] });
      // The causal check is `deadEnded` below: B must not need any of A's attempts to end first.
      await eventually(() => bodiesOf("/alive").length > 0, "B's delivery", 30_000);
      expect(deadEnded).toBe(0);
      expect(receiver.held.length).toBeLessThanOrEqual(WEBHOOK_CONCURRENCY_PER_ORGANIZATION);
      expect(receiver.received.filter((r) => r.path.startsWith("/dead/")).length).toBeLessThan(210);
    } finally {
      // Deleting A's webhooks drops their backlog, so nothing keeps retrying into later tests.
      for (const id of dead) await h.request("DELETE", `/api/webhooks/${id}`, { token: a.token });
    }
  }, 60_000);
});

describe("SSRF rules without WEBHOOK_ALLOW_PRIVATE", () => {
  const lookup = (map: Record<string, string[]>) => async (host: string) => {
    const found = map[host];
    if (!found) throw new Error("ENOTFOUND");
    return found.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };

  it("accepts https to public addresses only", async () => {
    const resolve = lookup({
      "hooks.example.com": ["93.184.215.14"],
      "internal.example.com": ["10.0.0.5"],
      "mixed.example.com": ["93.184.215.14", "127.0.0.1"],
      localhost: ["127.0.0.1", "::1"],
    });
    expect((await checkWebhookUrl("https://hooks.example.com/x", false, resolve)).ok).toBe(true);
    expect((await checkWebhookUrl("https://8.8.8.8/x", false, resolve)).ok).toBe(true);
    for (const url of [
      "http://hooks.example.com/x",
      "https://internal.example.com/",
      "https://mixed.example.com/",
      "https://localhost/",
      "https://127.0.0.1/",
      "https://10.1.2.3/",
      "https://169.254.169.254/latest/meta-data",
      "https://100.64.0.1/",
      "https://192.0.2.1/",
      "https://[::1]/",
      "https://[::ffff:127.0.0.1]/",
      "https://[fd00::1]/",
      "https://unknown.example.com/",
    ]) {
      expect((await checkWebhookUrl(url, false, resolve)).ok, url).toBe(false);
    }
    expect((await checkWebhookUrl("http://127.0.0.1:9/", true, resolve)).ok).toBe(true);
  });

  // docs/api.md "Audit log and webhooks": an IPv6 literal that embeds an IPv4 address is judged by
  // the IPv4 address inside it, at creation (over HTTP, on an API without WEBHOOK_ALLOW_PRIVATE)
  // and at delivery.

  // Refused at creation: webhooks.service.test.ts "refuses %s (a non-public IPv4 address inside) ...".
  it("accepts the same forms around a public IPv4 address", async () => {
    for (const url of ["https://[::ffff:808:808]/", "https://[64:ff9b::8.8.8.8]/", "https://[2002:808:808::1]/"]) {
      expect((await checkWebhookUrl(url, false)).ok, url).toBe(true);
    }
  });

  it("an embedded loopback address is refused at delivery too, before any connection", async () => {
    receiver = await startReceiver();
    const port = new URL(receiver.url).port;
    // ::ffff:127.0.0.1 reaches the IPv4 receiver through the dual-stack socket when not refused.
    for (const url of [`http://[::ffff:127.0.0.1]:${port}/x`, `http://[::127.0.0.1]:${port}/x`]) {
      const result = await sendWebhook({ url, headers: {}, body: "{}" }, { allowPrivate: false, timeoutMs: 2_000 });
      expect([url, result.status]).toEqual([url, null]);
      expect(result.error).toMatch(/refused/);
    }
    expect(receiver.received).toEqual([]);
    for (const url of EMBEDDED_PRIVATE_IPV4_URLS) expect((await checkWebhookUrl(url, false)).ok, url).toBe(false);
  });

  it("checks the resolved address again at delivery: nothing reaches a loopback target", async () => {
    receiver = await startReceiver();
    const port = new URL(receiver.url).port;
    for (const url of [`http://127.0.0.1:${port}/x`, `http://localhost:${port}/x`]) {
      const result = await sendWebhook({ url, headers: {}, body: "{}" }, { allowPrivate: false, timeoutMs: 2_000 });
      expect(result.status, url).toBeNull();
      expect(result.error).toMatch(/refused|non-public/);
    }
    expect(receiver.received).toEqual([]);
  });
});
