import {
  acquireJobEngine,
  type AuditOrigin,
  type JobEngine,
  queryOf,
  WEBHOOK_DELIVERY_QUEUE,
  WebhooksRepository,
} from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeUser, type TestDatabase } from "@fleet/db/testing";
import { EVENT_LIMITS, ManualClock, type TCreateWebhookInput } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { WEBHOOK_RETRY_LIMIT, WebhookDeliveryWorker } from "./webhook-delivery.worker.ts";
import { WebhookDispatcher } from "./webhook-dispatcher.ts";
import { SecretBox } from "./webhook-secret.ts";
import { WebhooksService } from "./webhooks.service.ts";
import { EMBEDDED_PRIVATE_IPV4_URLS } from "../../testing/webhook-urls.ts";

// The service tier (docs/contributing.md "Add a test"): the service, dispatcher and worker called
// directly on a real database with the real migrations, repositories and job engine; only time and
// the receiving end of a delivery (the HTTP target) are faked.

let db: TestDatabase;
let engine: JobEngine;
const T0 = new Date("2026-11-21T12:00:00Z");
const DAY = 86_400_000;
const secrets = new SecretBox("service-tier-test-key");
const logger = pino({ level: "silent" });
const origin: AuditOrigin = { actor: { type: "system", id: null }, sourceIp: "203.0.113.7" };

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  // As the delivery runtime does before any send (the worker test redefines it with its timing).
  await engine.defineQueue({ name: WEBHOOK_DELIVERY_QUEUE, retryLimit: WEBHOOK_RETRY_LIMIT });
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

const service = (clock = new ManualClock(T0)) => ({
  webhooks: new WebhooksService({ db, jobs: engine, secrets, clock, allowPrivate: true, onChange: () => undefined }),
  clock,
});

const body = (overrides: Partial<TCreateWebhookInput> = {}): TCreateWebhookInput => ({
  url: "http://127.0.0.1:9/hook",
  events: ["*"],
  ...overrides,
});

const auditOf = (targetId: string) =>
  db.query<{ action: string; details: unknown; source_ip: string | null }>(
    "select action, details, source_ip::text as source_ip from audit_log where target_id = $1 order by occurred_at, action",
    [targetId],
  );

const jobsOf = (deliveryId: string) =>
  db.query<{ group_id: string | null }>(
    "select group_id from pgboss.job where name = $1 and data->>'delivery_id' = $2",
    [WEBHOOK_DELIVERY_QUEUE, deliveryId],
  );

const repository = () => new WebhooksRepository(queryOf(db));

describe("WebhooksService (service tier)", () => {
  it("stores a webhook with its webhook.created entry in one transaction; the secret is only sealed", async () => {
    const { webhooks } = service();
    const o = await makeUser(db);
    const created = await webhooks.create(
      o.organizationId,
      origin,
      body({ events: ["router.enrolled", "router.enrolled"] }),
    );
    expect(created).toMatchObject({ url: "http://127.0.0.1:9/hook", events: ["router.enrolled"], format: "standard" });
    expect(created.secret).toMatch(/^whsec_/);
    const [stored] = await repository().list(o.organizationId);
    expect(stored?.id).toBe(created.id);
    expect(stored?.secretCiphertext).not.toContain(created.secret);
    expect(secrets.open(stored?.secretCiphertext ?? "")).toBe(created.secret);
    expect(await auditOf(created.id)).toMatchObject([
      {
        action: "webhook.created",
        details: { url: "http://127.0.0.1:9/hook", events: ["router.enrolled"], format: "standard" },
      },
    ]);
  });

  it(`holds at most ${EVENT_LIMITS.webhooksPerOrganization} per organization, also under parallel creates; a refusal changes nothing`, async () => {
    const { webhooks } = service();
    const max = EVENT_LIMITS.webhooksPerOrganization;
    const o = await makeUser(db);
    for (let i = 0; i < max - 2; i++) await webhooks.create(o.organizationId, origin, body());
    // n-2 held, five at once: exactly two fit.
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => webhooks.create(o.organizationId, origin, body())),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(2);
    expect(await repository().countForOrganization(o.organizationId)).toBe(max);
    const before = await databaseFingerprint(db);
    const refused = await rejection(webhooks.create(o.organizationId, origin, body()));
    expect(refused).toMatchObject({ code: "rate_limited", retryAfterSeconds: 60 });
    expect(await databaseFingerprint(db)).toBe(before);
    // Another organization is not held by this one's cap.
    const other = await makeUser(db);
    await webhooks.create(other.organizationId, origin, body());
    // Deleting one frees exactly one place.
    const [first] = await repository().list(o.organizationId);
    await webhooks.delete(o.organizationId, first?.id ?? "", origin);
    await webhooks.create(o.organizationId, origin, body());
    expect((await rejection(webhooks.create(o.organizationId, origin, body()))).code).toBe("rate_limited");
  });

  // docs/api.md "Audit log and webhooks": an IPv6 literal that embeds an IPv4 address is judged by
  // the IPv4 address inside it (without WEBHOOK_ALLOW_PRIVATE).
  it.each(EMBEDDED_PRIVATE_IPV4_URLS)(
    "refuses %s (a non-public IPv4 address inside) naming url, changing nothing",
    async (url) => {
      const webhooks = new WebhooksService({
        db,
        jobs: engine,
        secrets,
        clock: new ManualClock(T0),
        allowPrivate: false,
        onChange: () => undefined,
      });
      const o = await makeUser(db);
      const before = await databaseFingerprint(db);
      const refused = await rejection(webhooks.create(o.organizationId, origin, body({ url })));
      expect(refused.code).toBe("validation_failed");
      expect(Object.keys(refused.fields ?? {})).toEqual(["url"]);
      expect(await databaseFingerprint(db)).toBe(before);
    },
  );

  it("deletes with a webhook.deleted entry; another organization's, unknown and malformed ids are 404 and change nothing", async () => {
    const { webhooks } = service();
    const [a, b] = [await makeUser(db), await makeUser(db)];
    const hook = await webhooks.create(a.organizationId, origin, body());
    const before = await databaseFingerprint(db);
    for (const [team, id] of [
      [b.organizationId, hook.id],
      [a.organizationId, crypto.randomUUID()],
      [a.organizationId, "not-a-uuid"],
    ] as const) {
      expect((await rejection(webhooks.delete(team, id, origin))).code).toBe("not_found");
      expect((await rejection(webhooks.test(team, id))).code).toBe("not_found");
      expect((await rejection(webhooks.deliveries(team, id))).code).toBe("not_found");
    }
    expect(await databaseFingerprint(db)).toBe(before);
    await webhooks.test(a.organizationId, hook.id);
    await webhooks.delete(a.organizationId, hook.id, origin);
    expect(await repository().get(a.organizationId, hook.id)).toBeNull();
    expect(await repository().deliveries(hook.id, 10)).toEqual([]);
    expect((await auditOf(hook.id)).map((row) => [row.action, row.details, row.source_ip])).toEqual([
      ["webhook.created", expect.anything(), "203.0.113.7"],
      ["webhook.deleted", { url: "http://127.0.0.1:9/hook" }, "203.0.113.7"],
    ]);
  });

  it("test queues one pending delivery and its job (grouped by organization) in one transaction; a disabled webhook is 409 and changes nothing", async () => {
    const { webhooks, clock } = service();
    const o = await makeUser(db);
    const hook = await webhooks.create(o.organizationId, origin, body());
    const delivery = await webhooks.test(o.organizationId, hook.id);
    expect(delivery).toMatchObject({ event_type: "webhook.test", status: "pending", attempts: 0 });
    expect(await jobsOf(delivery.id)).toEqual([{ group_id: o.organizationId }]);
    expect((await webhooks.deliveries(o.organizationId, hook.id)).map((d) => d.id)).toEqual([delivery.id]);

    await repository().disable(hook.id, clock.now());
    const before = await databaseFingerprint(db);
    expect((await rejection(webhooks.test(o.organizationId, hook.id))).code).toBe("conflict");
    expect(await databaseFingerprint(db)).toBe(before);
  });
});

describe("WebhookDispatcher (service tier)", () => {
  it("turns each audit entry into one delivery and job per enabled, subscribed webhook of its organization, once", async () => {
    const { webhooks, clock } = service();
    const [a, b] = [await makeUser(db), await makeUser(db)];
    const all = await webhooks.create(a.organizationId, origin, body());
    const deletions = await webhooks.create(a.organizationId, origin, body({ events: ["webhook.deleted"] }));
    const disabled = await webhooks.create(a.organizationId, origin, body());
    const foreign = await webhooks.create(b.organizationId, origin, body());
    await repository().disable(disabled.id, clock.now());
    const gone = await webhooks.create(a.organizationId, origin, body());
    await webhooks.delete(a.organizationId, gone.id, origin);

    const dispatcher = new WebhookDispatcher({
      db,
      jobs: engine,
      runtime: { started: true, ensure: async () => undefined },
      clock,
      logger,
      onQueued: () => undefined,
      pollMs: 3_600_000,
    });
    try {
      await dispatcher.run();
      const events = async (id: string) => (await repository().deliveries(id, 50)).map((d) => d.eventType).sort();
      // Every entry of A after each webhook's creation (the dispatcher ran once, after all of them).
      expect(await events(all.id)).toEqual([
        "webhook.created",
        "webhook.created",
        "webhook.created",
        "webhook.created",
        "webhook.deleted",
      ]);
      expect(await events(deletions.id)).toEqual(["webhook.deleted"]);
      expect(await events(disabled.id)).toEqual([]);
      expect(await events(foreign.id)).toEqual(["webhook.created"]);
      for (const d of await repository().deliveries(all.id, 50)) {
        expect(await jobsOf(d.id)).toEqual([{ group_id: a.organizationId }]);
      }
      expect(await repository().hasUndispatched()).toBe(false);
      // A second pass finds the outbox empty: nothing is queued twice.
      await dispatcher.run();
      expect(await repository().deliveries(all.id, 50)).toHaveLength(5);
    } finally {
      await dispatcher.close();
    }
  });
});

describe("WebhookDeliveryWorker (service tier)", () => {
  it("disables a webhook failing for exactly three days (not a millisecond less) with one webhook.disabled entry and abandons the delivery", async () => {
    // Deliveries the tests above queued would be worked first: the queue is emptied of them.
    await db.query("delete from pgboss.job where name = $1", [WEBHOOK_DELIVERY_QUEUE]);
    const clock = new ManualClock(T0);
    const { webhooks } = service(clock);
    const o = await makeUser(db);
    const hook = await webhooks.create(o.organizationId, origin, body());
    // The webhook's run of failures began 1 ms short of three days before T0 (planted, so two
    // attempts suffice: each retry waits for real time): attempt 1 at T0 fails and leaves it
    // enabled (or there would be no attempt 2); attempt 2, 1 ms later, fails exactly three days
    // into the run and disables it.
    const FAILING_SINCE = new Date(T0.getTime() - 3 * DAY + 1);
    expect(await repository().updateFailingSince(hook.id, false, FAILING_SINCE)).toEqual(FAILING_SINCE);
    let attempts = 0;
    const advances = [1];
    const worker = new WebhookDeliveryWorker({
      db,
      secrets,
      clock,
      logger,
      allowPrivate: true,
      retryDelaySeconds: 1,
      pollingIntervalSeconds: 0.5,
      // The receiving end answers 500; time moves between attempts as `advances` says.
      send: async () => {
        clock.advance(advances[attempts] ?? 0);
        attempts++;
        return { status: 500, body: "down", error: null };
      },
    });
    await worker.start(engine);
    try {
      const delivery = await webhooks.test(o.organizationId, hook.id);
      await eventually(
        async () => (await repository().get(o.organizationId, hook.id))?.disabledAt,
        "the webhook to be disabled",
        30_000,
      );
      const [stored] = await repository().deliveries(hook.id, 10);
      expect(stored).toMatchObject({ id: delivery.id, status: "failed", attempts: 2, responseStatus: 500 });
      expect(attempts).toBe(2);
      expect((await repository().get(o.organizationId, hook.id))?.disabledAt).toEqual(new Date(T0.getTime() + 1));
      const entries = await auditOf(hook.id);
      expect(entries.map((row) => row.action)).toEqual(["webhook.created", "webhook.disabled"]);
      expect(entries[1]?.details).toMatchObject({ url: "http://127.0.0.1:9/hook", failing_since: expect.any(String) });
    } finally {
      await worker.close();
    }
  });
});
