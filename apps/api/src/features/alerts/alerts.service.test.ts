import {
  acquireJobEngine,
  insertAuditEntries,
  type JobEngine,
  NotificationsRepository,
  queryOf,
  queueNotificationDelivery,
  SYSTEM_ORIGIN,
} from "@fleet/db";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { ALERT_LIMITS, ManualClock, type TChannel, ZCreateChannelInput } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { SecretBox } from "../webhooks/webhook-secret.ts";
import { AlertEngine } from "./alert-engine.ts";
import { AlertRulesService } from "./alert-rules.service.ts";
import { ChannelSender } from "./channel-sender.ts";
import { MaintenanceWindowsService } from "./maintenance-windows.service.ts";
import { NotificationChannelsService } from "./notification-channels.service.ts";
import { NotificationDeliveryWorker } from "./notification-delivery.worker.ts";
import { closedPort, startSmtpSink } from "../../testing/smtp-sink.ts";
import { type ReceivedRequest, startHttpReceiver } from "./testing/receivers.ts";

// The service tier (docs/contributing.md "Add a test"): channels, rules, windows, the alert engine
// and the delivery worker on a real database with the real job engine; a real SMTP server and
// HTTP receivers on loopback stand in for the mail server, Slack, Teams, Telegram and PagerDuty.
// Domain time is a ManualClock; the engine runs one pass when the test says so.

let db: TestDatabase;
let engine: JobEngine;
let http: Awaited<ReturnType<typeof startHttpReceiver>>;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
let worker: NotificationDeliveryWorker;
let sender: ChannelSender;
const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);
const clock = new ManualClock(T0);
const secrets = new SecretBox("alerts-service-tier-test-key");
const logger = pino({ level: "silent" });
const PUBLIC = "https://fleet.test.invalid";

let channels: NotificationChannelsService;
let rules: AlertRulesService;
let windows: MaintenanceWindowsService;
let alerts: AlertEngine;

beforeAll(async () => {
  [db, http, smtp] = await Promise.all([createTestDatabase(), startHttpReceiver(), startSmtpSink()]);
  engine = await acquireJobEngine(db);
  sender = new ChannelSender({
    allowPrivate: true,
    smtpUrl: smtp.url,
    mailFrom: "Fleet <alerts@fleet.test.invalid>",
    telegramApiBase: `${http.url}/tg`,
    pagerdutyEventsUrl: `${http.url}/pd/v2/enqueue`,
    timeoutMs: 10_000,
  });
  worker = new NotificationDeliveryWorker({
    db,
    secrets,
    sender,
    clock,
    logger,
    retryDelaySeconds: 1,
    pollingIntervalSeconds: 0.5,
  });
  await worker.start(engine);
  channels = new NotificationChannelsService({
    db,
    jobs: engine,
    secrets,
    clock,
    allowPrivate: true,
  });
  rules = new AlertRulesService({ db, clock });
  windows = new MaintenanceWindowsService({ db, clock });
  alerts = new AlertEngine({
    db,
    jobs: engine,
    runtime: { started: true, ensure: async () => engine },
    clock,
    logger,
    publicUrl: () => PUBLIC,
    pollMs: 3_600_000,
  });
});
afterAll(async () => {
  await alerts?.close();
  await worker?.close();
  await engine?.stop();
  sender?.close();
  await http?.close();
  await smtp?.close();
  await db?.close();
});

let sequence = 0;
const unique = () => `${Date.now().toString(36)}${(sequence++).toString(36)}`;

/** A fresh organization with a channel of each HTTP type and one email channel, and a rule over them. */
const setUp = async (rule: Partial<Parameters<AlertRulesService["create"]>[1]> = {}) => {
  const owner = await makeUser(db);
  const tag = unique();
  const made: Record<string, TChannel> = {};
  const create = async (type: string, config: Record<string, unknown>) => {
    const input = ZCreateChannelInput.parse({ name: `${type} ${tag}`, type, config });
    made[type] = await channels.create(owner.organizationId, SYSTEM_ORIGIN, input);
  };
  const routingKey = `R${tag.padEnd(31, "0")}`.slice(0, 32);
  const botToken = `123456:${tag.padEnd(30, "x")}`;
  await create("slack", { webhook_url: `${http.url}/slack/${tag}` });
  await create("teams", { webhook_url: `${http.url}/teams/${tag}` });
  await create("telegram", { bot_token: botToken, chat_id: -1001234 });
  await create("pagerduty", { routing_key: routingKey });
  await create("email", { to: [`noc-${tag}@example.net`] });
  const created = await rules.create(owner.organizationId, {
    name: "down",
    events: ["router.offline", "router.online"],
    channels: Object.values(made).map((c) => c.id),
    ...rule,
  });
  const of = (kind: "slack" | "teams" | "telegram" | "pagerduty"): ReceivedRequest[] =>
    http.requests.filter((r) =>
      kind === "slack"
        ? r.path === `/slack/${tag}`
        : kind === "teams"
          ? r.path === `/teams/${tag}`
          : kind === "telegram"
            ? r.path === `/tg/bot${botToken}/sendMessage`
            : r.path === "/pd/v2/enqueue" && r.body.routing_key === routingKey,
    );
  const mails = () => smtp.received.filter((m) => m.to.includes(`noc-${tag}@example.net`));
  return { owner, channels: made, rule: created, of, mails, routingKey, botToken };
};

const event = async (
  organizationId: string,
  routerId: string,
  action: "router.offline" | "router.online",
  at: number,
) => {
  await insertAuditEntries(queryOf(db), [
    {
      organizationId,
      occurredAt: new Date(at),
      action,
      actor: SYSTEM_ORIGIN.actor,
      target: { type: "router", id: routerId },
      routerId,
    },
  ]);
};

const settle = async (deliveries: () => Promise<number>) => {
  // Sends happen on the worker, off the engine's pass: wait for the queue to drain.
  await eventually(
    async () =>
      (
        await db.query<{ n: number }>("select count(*)::int as n from notification_deliveries where status = 'pending'")
      )[0]?.n === 0,
    "deliveries sent",
    30_000,
  );
  return deliveries();
};

describe("notification channels (service tier)", () => {
  it("seals secrets, answers them masked, and a test send reaches each service in its published format", async () => {
    const s = await setUp();
    expect(s.channels.telegram?.config).toEqual({ bot_token: `****${s.botToken.slice(-4)}`, chat_id: "-1001234" });
    expect(s.channels.pagerduty?.config).toEqual({ routing_key: `****${s.routingKey.slice(-4)}` });
    expect(String(s.channels.slack?.config.webhook_url)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\*\*\*\*/);
    const dump = await db.query<{ d: string }>(
      "select string_agg(t::text, '|') as d from notification_channels t where organization_id = $1",
      [s.owner.organizationId],
    );
    expect(dump[0]?.d).not.toContain(s.botToken);
    expect(dump[0]?.d).not.toContain(s.routingKey);

    for (const channel of Object.values(s.channels)) await channels.test(s.owner.organizationId, channel.id);
    await eventually(
      () =>
        s.of("slack").length &&
        s.of("teams").length &&
        s.of("telegram").length &&
        s.of("pagerduty").length &&
        s.mails().length,
      "every test message",
      30_000,
    );
    expect(s.of("slack")[0]?.body).toMatchObject({
      text: expect.stringContaining("Test message"),
      blocks: [{ type: "section", text: { type: "mrkdwn", text: expect.any(String) } }],
    });
    expect(s.of("teams")[0]?.body).toMatchObject({
      "@type": "MessageCard",
      "@context": "https://schema.org/extensions",
      summary: expect.stringContaining("Test message"),
      text: expect.any(String),
    });
    expect(s.of("telegram")[0]?.body).toMatchObject({
      chat_id: "-1001234",
      parse_mode: "HTML",
      text: expect.any(String),
    });
    expect(s.of("pagerduty")[0]?.body).toMatchObject({
      routing_key: s.routingKey,
      event_action: "trigger",
      dedup_key: expect.any(String),
      payload: { summary: expect.any(String), source: expect.any(String), severity: "info" },
    });
    expect(s.mails()[0]?.text).toMatch(/Subject: .*Test message/);
    // The attempt is recorded once the receiver answered.
    const log = await eventually(async () => {
      const page = await channels.deliveries(s.owner.organizationId, { id: s.channels.slack?.id ?? "" });
      return page.data[0]?.status === "sent" ? page : null;
    });
    expect(log.data).toEqual([
      expect.objectContaining({ event: "notification.test", status: "sent", attempts: 1, error: null }),
    ]);
  });

  it("pages the delivery log newest first through next_cursor, each delivery once", async () => {
    const s = await setUp();
    const channelId = s.channels.slack?.id ?? "";
    const repo = new NotificationsRepository(queryOf(db));
    // Suppressed deliveries are listed without an attempt; two share a time, so their ids order them.
    const stored: string[] = [];
    for (const at of [T0 - 3000, T0 - 2000, T0 - 2000]) {
      const delivery = {
        id: crypto.randomUUID(),
        channelId,
        organizationId: s.owner.organizationId,
        event: "router.offline",
        routerId: null,
        status: "suppressed" as const,
        message: {},
        idempotencyKey: null,
      };
      stored.push(...(await repo.insertDeliveries([delivery], new Date(at))));
    }
    const [oldest, ...tied] = stored;
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await channels.deliveries(s.owner.organizationId, { id: channelId, limit: 1, cursor });
      seen.push(...page.data.map((d) => d.id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined && seen.length <= stored.length);
    expect(seen).toEqual([...tied.sort().reverse(), oldest]);
  });

  it("a job run again for a delivery already sent (a worker restarted after sending) sends nothing more", async () => {
    const s = await setUp();
    const delivery = await channels.test(s.owner.organizationId, s.channels.slack?.id ?? "");
    await eventually(async () => (await settle(async () => s.of("slack").length)) === 1, "sent once", 30_000);
    // The queue hands the same delivery out again, as after a lease that ran out mid-send.
    await queueNotificationDelivery(engine, { id: delivery.id, organizationId: s.owner.organizationId }, queryOf(db));
    await eventually(
      async () =>
        (
          await db.query<{ n: number }>(
            "select count(*)::int as n from pgboss.job where name = 'notification.deliver' and data->>'delivery_id' = $1 and state = 'completed'",
            [delivery.id],
          )
        )[0]?.n === 2,
      "the repeated job done",
      30_000,
    );
    expect(s.of("slack")).toHaveLength(1);
  });

  it("lists a delivery once attempted: failed with its attempts and error while retried, never pending", async () => {
    const owner = await makeUser(db);
    const down = await channels.create(
      owner.organizationId,
      SYSTEM_ORIGIN,
      ZCreateChannelInput.parse({
        name: "down",
        type: "slack",
        config: { webhook_url: `http://127.0.0.1:${await closedPort()}/hook` },
      }),
    );
    const queued = await channels.test(owner.organizationId, down.id);
    expect(queued).toEqual({ id: expect.any(String), event: "notification.test", created_at: expect.any(String) });
    const seen = await eventually(async () => {
      const page = await channels.deliveries(owner.organizationId, { id: down.id });
      return page.data.length > 0 ? page : null;
    }, "the first attempt");
    expect(seen.data).toEqual([
      expect.objectContaining({ id: queued.id, status: "failed", attempts: 1, error: expect.any(String) }),
    ]);
    // Still retried by the queue, and still `failed` (with more attempts) meanwhile.
    const retried = await eventually(
      async () => {
        const page = await channels.deliveries(owner.organizationId, { id: down.id });
        return (page.data[0]?.attempts ?? 0) >= 2 ? page : null;
      },
      "a retry",
      30_000,
    );
    expect(retried.data[0]?.status).toBe("failed");
    await channels.delete(owner.organizationId, down.id);
  });

  it("holds 50 channels and refuses the 51st (429); another organization's channel is 404", async () => {
    const owner = await makeUser(db);
    const input = ZCreateChannelInput.parse({ name: "x", type: "pagerduty", config: { routing_key: "A".repeat(32) } });
    for (let i = 0; i < ALERT_LIMITS.channelsPerOrganization; i++) {
      await channels.create(owner.organizationId, SYSTEM_ORIGIN, input);
    }
    expect((await rejection(channels.create(owner.organizationId, SYSTEM_ORIGIN, input))).code).toBe("rate_limited");
    const [first] = await channels.list(owner.organizationId);
    const other = await makeUser(db);
    expect((await rejection(channels.get(other.organizationId, first?.id ?? ""))).code).toBe("not_found");
    expect((await rejection(channels.test(other.organizationId, first?.id ?? ""))).code).toBe("not_found");
  });

  it("refuses private and loopback URLs without WEBHOOK_ALLOW_PRIVATE, at creation and again at send time", async () => {
    const strict = new NotificationChannelsService({
      db,
      jobs: engine,
      secrets,
      clock,
      allowPrivate: false,
    });
    const owner = await makeUser(db);
    for (const url of [
      "http://127.0.0.1/x",
      "https://10.1.2.3/x",
      "https://[::ffff:192.168.0.1]/x",
      "https://localhost/x",
    ]) {
      const error = await rejection(
        strict.create(
          owner.organizationId,
          SYSTEM_ORIGIN,
          ZCreateChannelInput.parse({ name: "s", type: "slack", config: { webhook_url: url } }),
        ),
      );
      expect(error.code).toBe("validation_failed");
      expect(Object.keys(error.fields ?? {})).toEqual(["config.webhook_url"]);
    }
    // Without SMTP_URL an email channel is kept; its sends fail, saying why (below).
    const mail = await strict.create(
      owner.organizationId,
      SYSTEM_ORIGIN,
      ZCreateChannelInput.parse({ name: "m", type: "email", config: { to: ["a@b.example"] } }),
    );
    expect(mail.type).toBe("email");
    // DNS rebinding: a name that resolved publicly at creation resolves to loopback when sent.
    const strictSender = new ChannelSender({
      allowPrivate: false,
      smtpUrl: undefined,
      mailFrom: "a@b.example",
      telegramApiBase: http.url,
      pagerdutyEventsUrl: http.url,
      timeoutMs: 5_000,
    });
    const sent = await strictSender.send(
      "slack",
      {},
      { webhook_url: `http://localhost:${new URL(http.url).port}/slack/rebind` },
      { kind: "test", title: "t", organization: "o", lines: [], at: new Date(T0).toISOString() },
    );
    expect(sent.ok).toBe(false);
    expect(sent.error).toMatch(/non-public|refused/);
    expect(http.requests.some((r) => r.path === "/slack/rebind")).toBe(false);
    const unsent = await strictSender.send(
      "email",
      { to: ["a@b.example"] },
      {},
      { kind: "test", title: "t", organization: "o", lines: [], at: new Date(T0).toISOString() },
    );
    expect(unsent).toMatchObject({ ok: false, error: "SMTP_URL is not set" });
  });
});

describe("the alert engine (service tier)", () => {
  it("a router offline and back: one message each, PagerDuty trigger then resolve with one dedup_key, names escaped", async () => {
    const s = await setUp();
    const router = await makeRouter(db, s.owner, { name: "<b>Paris & *core*</b>_" });
    clock.set(T0 + 60_000);
    await event(s.owner.organizationId, router.id, "router.offline", T0);
    await alerts.run();
    await alerts.run();
    await eventually(
      () =>
        s.of("slack").length &&
        s.of("teams").length &&
        s.of("telegram").length &&
        s.of("pagerduty").length &&
        s.mails().length,
      "offline messages",
      15_000,
    );
    const trigger = s.of("pagerduty")[0]?.body;
    expect(trigger).toMatchObject({
      event_action: "trigger",
      dedup_key: `fleet-${router.id}-offline`,
      payload: { severity: "critical", summary: expect.stringContaining("<b>Paris & *core*</b>_") },
      links: [{ href: `${PUBLIC}/console/routers/${router.id}` }],
    });
    const blocks = (s.of("slack")[0]?.body.blocks ?? []) as Array<{ text: { text: string } }>;
    const slack = String(blocks[0]?.text.text);
    expect(slack).toContain("&lt;b&gt;Paris &amp; *core*&lt;/b&gt;_");
    expect(slack).toContain(`<${PUBLIC}/console/routers/${router.id}|open>`);
    expect(slack).toContain("2026-12-01 09:00 UTC");
    expect(String(s.of("telegram")[0]?.body.text)).toContain("&lt;b&gt;Paris &amp; *core*&lt;/b&gt;_");
    expect(String(s.of("teams")[0]?.body.title)).toBe("Router offline: &lt;b&gt;Paris &amp; \\*core\\*&lt;/b&gt;\\_");
    expect(s.mails()[0]?.text).toContain("Router offline");

    clock.set(T0 + 600_000);
    await event(s.owner.organizationId, router.id, "router.online", T0 + 600_000);
    await alerts.run();
    await eventually(() => s.of("pagerduty").length === 2 && s.of("slack").length === 2, "recovery", 30_000);
    expect(s.of("pagerduty")[1]?.body).toEqual({
      routing_key: s.routingKey,
      event_action: "resolve",
      dedup_key: `fleet-${router.id}-offline`,
    });
    expect(String(s.of("slack")[1]?.body.text)).toContain("Router recovered");
    // Nothing more: a second pass sends nothing again.
    await alerts.run();
    expect(await settle(async () => s.of("slack").length)).toBe(2);
  });

  it("router.resource and change.* events: one line each from their audit details", async () => {
    const s = await setUp({ events: ["router.resource", "change.router.failed", "change.completed"] });
    const router = await makeRouter(db, s.owner, { name: "edge-7" });
    const at = T0 + 7_200_000;
    clock.set(at);
    const base = { organizationId: s.owner.organizationId, occurredAt: new Date(at), actor: SYSTEM_ORIGIN.actor };
    await insertAuditEntries(queryOf(db), [
      {
        ...base,
        action: "router.resource",
        target: { type: "router", id: router.id },
        routerId: router.id,
        details: { measure: "cpu", value: 97, threshold: 90, state: "above" },
      },
      {
        ...base,
        action: "change.router.failed",
        target: { type: "change", id: crypto.randomUUID() },
        routerId: router.id,
        details: { name: "NTP\r\nservers", error: "expected end of command" },
      },
      {
        ...base,
        action: "change.completed",
        target: { type: "change", id: crypto.randomUUID() },
        details: { name: "NTP servers", counts: { succeeded: 9, failed: 1 } },
      },
      // Not subscribed to: nothing.
      { ...base, action: "change.created", target: { type: "change", id: crypto.randomUUID() }, details: {} },
    ]);
    await alerts.run();
    await eventually(() => s.of("slack").length === 3, "three messages", 30_000);
    expect(s.of("slack").map((r) => String(r.body.text).split("\n")[0])).toEqual(
      expect.arrayContaining([
        "CPU load high: edge-7",
        'Change "NTP servers" failed on edge-7: expected end of command',
        'Change "NTP servers" completed (9 succeeded, 1 failed)',
      ]),
    );
    await alerts.run();
    expect(await settle(async () => s.of("slack").length)).toBe(3);
  });

  it("a router back within min_offline_seconds notifies nothing; one that stays out notifies once it passed", async () => {
    const s = await setUp({ min_offline_seconds: 300 });
    const flapping = await makeRouter(db, s.owner);
    const down = await makeRouter(db, s.owner);
    const start = T0 + 3_600_000;
    clock.set(start);
    await event(s.owner.organizationId, flapping.id, "router.offline", start);
    await event(s.owner.organizationId, down.id, "router.offline", start);
    await alerts.run();
    clock.set(start + 120_000);
    await event(s.owner.organizationId, flapping.id, "router.online", start + 120_000);
    await alerts.run();
    clock.set(start + 301_000);
    await alerts.run();
    await eventually(() => s.of("slack").length, "the one that stayed out", 30_000);
    await settle(async () => 0);
    expect(s.of("slack").map((r) => String(r.body.text))).toEqual([expect.stringContaining("Router offline")]);
    expect(s.of("pagerduty").map((r) => r.body.dedup_key)).toEqual([`fleet-${down.id}-offline`]);
  });

  it("more than 10 routers offline within 60 s: one grouped message per channel, and one for their recoveries", async () => {
    const s = await setUp();
    const fleet = await Promise.all(
      Array.from({ length: 23 }, (_, i) => makeRouter(db, s.owner, { name: `site-${i}` })),
    );
    const start = T0 + 2 * 3_600_000;
    clock.set(start);
    for (const r of fleet) await event(s.owner.organizationId, r.id, "router.offline", start);
    await alerts.run();
    await alerts.run();
    clock.set(start + 61_000);
    await alerts.run();
    await eventually(() => s.of("slack").length && s.of("pagerduty").length && s.mails().length, "grouped", 30_000);
    await settle(async () => 0);
    expect(s.of("slack")).toHaveLength(1);
    expect(s.of("teams")).toHaveLength(1);
    expect(s.of("telegram")).toHaveLength(1);
    expect(s.of("pagerduty")).toHaveLength(1);
    expect(s.mails()).toHaveLength(1);
    const text = String(s.of("slack")[0]?.body.text);
    expect(text).toMatch(/^23 routers offline in /);
    expect(text).toContain("and 3 more");

    clock.set(start + 600_000);
    for (const r of fleet) await event(s.owner.organizationId, r.id, "router.online", start + 600_000);
    await alerts.run();
    clock.set(start + 661_000);
    await alerts.run();
    await eventually(() => s.of("slack").length === 2, "grouped recovery", 30_000);
    await settle(async () => 0);
    expect(String(s.of("slack")[1]?.body.text)).toMatch(/^23 routers back online in /);
    expect(s.of("pagerduty").map((r) => r.body.event_action)).toEqual(["trigger", "resolve"]);
    expect(s.of("pagerduty")[1]?.body.dedup_key).toBe(s.of("pagerduty")[0]?.body.dedup_key);
  });

  it("quiet hours: nothing while they last, then one summary", async () => {
    const s = await setUp({ quiet_hours: { timezone: "Europe/Paris", from: "22:00", to: "07:00" } });
    const router = await makeRouter(db, s.owner, { name: "night" });
    const night = Date.UTC(2026, 11, 2, 23, 30); // 00:30 in Paris
    clock.set(night);
    await event(s.owner.organizationId, router.id, "router.offline", night);
    await alerts.run();
    await alerts.run();
    await settle(async () => 0);
    expect(s.of("slack")).toHaveLength(0);
    clock.set(Date.UTC(2026, 11, 3, 6, 0, 1)); // 07:00:01 in Paris
    await alerts.run();
    await eventually(() => s.of("slack").length && s.of("pagerduty").length, "summary", 30_000);
    await settle(async () => 0);
    expect(s.of("slack")).toHaveLength(1);
    expect(String(s.of("slack")[0]?.body.text)).toMatch(/While quiet: 1 alert/);
    expect(String(s.of("slack")[0]?.body.text)).toContain("2026-12-03 00:30 Europe/Paris");
    expect(s.of("pagerduty")[0]?.body).toMatchObject({
      event_action: "trigger",
      dedup_key: `fleet-${router.id}-offline`,
    });
  });

  it("quiet hours: a router down and back while they last is in the summary, both ways; no page", async () => {
    const s = await setUp({ quiet_hours: { timezone: "Europe/Paris", from: "22:00", to: "07:00" } });
    const router = await makeRouter(db, s.owner, { name: "blip" });
    const night = Date.UTC(2026, 11, 3, 23, 30); // 00:30 in Paris
    clock.set(night);
    await event(s.owner.organizationId, router.id, "router.offline", night);
    await alerts.run();
    await alerts.run();
    clock.set(night + 600_000);
    await event(s.owner.organizationId, router.id, "router.online", night + 600_000);
    await alerts.run();
    await alerts.run();
    await settle(async () => 0);
    expect(s.of("slack")).toHaveLength(0);
    clock.set(Date.UTC(2026, 11, 4, 6, 0, 1)); // 07:00:01 in Paris
    await alerts.run();
    await eventually(() => s.of("slack").length, "summary", 30_000);
    await settle(async () => 0);
    expect(s.of("slack")).toHaveLength(1);
    const text = String(s.of("slack")[0]?.body.text);
    expect(text).toMatch(/While quiet: 2 alerts/);
    // In the order it happened.
    expect(text).toMatch(/went offline at 2026-12-04 00:30 Europe\/Paris[\s\S]*back online since 2026-12-04 00:40/);
    // An incident opened and closed while quiet pages nobody.
    expect(s.of("pagerduty")).toEqual([]);
    // Over: a later return of the router tells nothing more.
    clock.set(Date.UTC(2026, 11, 4, 9, 0));
    await event(s.owner.organizationId, router.id, "router.online", Date.UTC(2026, 11, 4, 9, 0));
    await alerts.run();
    await settle(async () => 0);
    expect(s.of("slack")).toHaveLength(1);
  });

  it("a maintenance window suppresses, and one that ends with the router still offline notifies then", async () => {
    const s = await setUp();
    const router = await makeRouter(db, s.owner, { hasPulse: false });
    const start = Date.UTC(2026, 11, 5, 1, 0);
    await windows.create(s.owner.organizationId, SYSTEM_ORIGIN, {
      name: "upgrade",
      routers: { router_ids: [router.id] },
      starts_at: new Date(start).toISOString(),
      ends_at: new Date(start + 3_600_000).toISOString(),
    });
    clock.set(start + 60_000);
    await event(s.owner.organizationId, router.id, "router.offline", start + 60_000);
    await alerts.run();
    await alerts.run();
    const suppressed = await channels.deliveries(s.owner.organizationId, { id: s.channels.slack?.id ?? "" });
    expect(suppressed.data).toEqual([
      expect.objectContaining({ status: "suppressed", event: "router.offline", router_id: router.id }),
    ]);
    await settle(async () => 0);
    expect(s.of("slack")).toHaveLength(0);
    clock.set(start + 3_600_000 + 1_000);
    await alerts.run();
    await eventually(() => s.of("slack").length, "notified at the window's end", 30_000);
    expect(String(s.of("slack")[0]?.body.text)).toContain("Router offline");
  });

  it("a recovery inside a window is suppressed, but still resolves PagerDuty's incident", async () => {
    const s = await setUp();
    const router = await makeRouter(db, s.owner, { hasPulse: false });
    const at = Date.UTC(2026, 11, 6, 1, 0);
    clock.set(at + 60_000);
    await event(s.owner.organizationId, router.id, "router.offline", at);
    await alerts.run();
    await alerts.run();
    await eventually(() => s.of("slack").length && s.of("pagerduty").length, "offline told", 15_000);
    // A window opened while it is down covers its return.
    await windows.create(s.owner.organizationId, SYSTEM_ORIGIN, {
      name: "fix",
      routers: { router_ids: [router.id] },
      starts_at: new Date(at + 120_000).toISOString(),
      ends_at: new Date(at + 3_600_000).toISOString(),
    });
    clock.set(at + 600_000);
    await event(s.owner.organizationId, router.id, "router.online", at + 600_000);
    await alerts.run();
    await alerts.run();
    await eventually(() => s.of("pagerduty").length === 2, "the resolve", 15_000);
    expect(s.of("pagerduty")[1]?.body).toMatchObject({
      event_action: "resolve",
      dedup_key: `fleet-${router.id}-offline`,
    });
    const slack = await channels.deliveries(s.owner.organizationId, { id: s.channels.slack?.id ?? "" });
    expect(slack.data.map((d) => [d.event, d.status])).toEqual([
      ["router.online", "suppressed"],
      ["router.offline", "sent"],
    ]);
    await settle(async () => 0);
    expect(s.of("slack")).toHaveLength(1);
  });

  it("rules refuse another organization's channel, router or team (404) and hold 100 rules, not 101", async () => {
    const s = await setUp();
    const other = await makeUser(db);
    const foreignRouter = await makeRouter(db, other);
    const channelIds = [s.channels.slack?.id ?? ""];
    const base = { name: "r", events: ["*" as const], channels: channelIds };
    expect((await rejection(rules.create(other.organizationId, base))).code).toBe("not_found");
    expect(
      (await rejection(rules.create(s.owner.organizationId, { ...base, routers: { router_ids: [foreignRouter.id] } })))
        .code,
    ).toBe("not_found");
    expect(
      (await rejection(rules.create(s.owner.organizationId, { ...base, routers: { team_id: other.teamId } }))).code,
    ).toBe("not_found");
    for (let i = 1; i < ALERT_LIMITS.rulesPerOrganization; i++) await rules.create(s.owner.organizationId, base);
    expect((await rules.list(s.owner.organizationId)).length).toBe(ALERT_LIMITS.rulesPerOrganization);
    expect((await rejection(rules.create(s.owner.organizationId, base))).code).toBe("rate_limited");
  });

  it("holds 100 maintenance windows and refuses the 101st (429); another organization's router is 404", async () => {
    const owner = await makeUser(db);
    const other = await makeUser(db);
    const foreign = await makeRouter(db, other);
    const window = { name: "w", starts_at: "2026-12-01T22:00:00Z", ends_at: "2026-12-01T23:00:00Z" };
    expect(
      (
        await rejection(
          windows.create(owner.organizationId, SYSTEM_ORIGIN, { ...window, routers: { router_ids: [foreign.id] } }),
        )
      ).code,
    ).toBe("not_found");
    for (let i = 0; i < ALERT_LIMITS.windowsPerOrganization; i++)
      await windows.create(owner.organizationId, SYSTEM_ORIGIN, window);
    expect((await rejection(windows.create(owner.organizationId, SYSTEM_ORIGIN, window))).code).toBe("rate_limited");
    expect(await windows.list(owner.organizationId)).toHaveLength(ALERT_LIMITS.windowsPerOrganization);
  });

  it("one organization's dead channel does not delay another's", async () => {
    const dead = await makeUser(db);
    const hung = await channels.create(
      dead.organizationId,
      SYSTEM_ORIGIN,
      ZCreateChannelInput.parse({
        name: "dead",
        type: "slack",
        config: { webhook_url: `${http.url}/hang/${unique()}` },
      }),
    );
    for (let i = 0; i < 20; i++) await channels.test(dead.organizationId, hung.id);
    await eventually(() => http.hanging() >= 4, "the dead channel's sends hanging", 30_000);
    const alive = await setUp();
    await channels.test(alive.owner.organizationId, alive.channels.slack?.id ?? "");
    await eventually(() => alive.of("slack").length, "the other organization's message", 30_000);
    // The dead channel holds at most its organization's share of the worker's slots.
    expect(http.hanging()).toBeLessThanOrEqual(4);
  });
});

describe("team-bound credentials (service tier)", () => {
  /** An organization with a second team (the bound credential's) and a router in each team. */
  const teams = async () => {
    const owner = await makeUser(db);
    const second = crypto.randomUUID();
    await db.query(
      "insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, 'Second', false, now())",
      [second, owner.organizationId],
    );
    const defaultRouter = await makeRouter(db, owner);
    const teamRouter = await makeRouter(db, { organizationId: owner.organizationId, teamId: second });
    const tag = unique();
    const slack = (name: string) =>
      ZCreateChannelInput.parse({ name, type: "slack", config: { webhook_url: `${http.url}/slack/${tag}-${name}` } });
    return { owner, org: owner.organizationId, second, defaultRouter, teamRouter, slack, tag };
  };
  const count = async (table: string, organizationId: string) =>
    (
      await db.query<{ n: number }>(`select count(*)::int as n from ${table} where organization_id = $1`, [
        organizationId,
      ])
    )[0]?.n;

  it("the caps are the organization's, whichever team made what: 50 channels and 100 rules in all", async () => {
    const t = await teams();
    const input = ZCreateChannelInput.parse({ name: "x", type: "pagerduty", config: { routing_key: "B".repeat(32) } });
    const made: string[] = [];
    for (let i = 0; i < ALERT_LIMITS.channelsPerOrganization - 1; i++) {
      made.push((await channels.create(t.org, SYSTEM_ORIGIN, input)).id);
    }
    // The team's first channel is the organization's 50th; its second (the 51st) is refused.
    const teamChannel = await channels.create(t.org, SYSTEM_ORIGIN, input, t.second);
    expect((await rejection(channels.create(t.org, SYSTEM_ORIGIN, input, t.second))).code).toBe("rate_limited");
    expect((await rejection(channels.create(t.org, SYSTEM_ORIGIN, input))).code).toBe("rate_limited");
    expect(await count("notification_channels", t.org)).toBe(ALERT_LIMITS.channelsPerOrganization);

    const rule = { name: "r", events: ["*" as const], channels: [made[0] ?? ""] };
    for (let i = 0; i < ALERT_LIMITS.rulesPerOrganization - 1; i++) await rules.create(t.org, rule);
    await rules.create(t.org, { ...rule, channels: [teamChannel.id] }, t.second);
    expect((await rejection(rules.create(t.org, { ...rule, channels: [teamChannel.id] }, t.second))).code).toBe(
      "rate_limited",
    );
    expect((await rejection(rules.create(t.org, rule))).code).toBe("rate_limited");
    expect(await count("alert_rules", t.org)).toBe(ALERT_LIMITS.rulesPerOrganization);
  });

  it("channels: sees, tests and changes only its team's; another's is 404 and changes nothing", async () => {
    const t = await teams();
    const orgChannel = await channels.create(t.org, SYSTEM_ORIGIN, t.slack("org"));
    const teamChannel = await channels.create(t.org, SYSTEM_ORIGIN, t.slack("team"), t.second);
    expect((await channels.list(t.org, t.second)).map((c) => c.id)).toEqual([teamChannel.id]);
    expect((await channels.list(t.org)).map((c) => c.id).sort()).toEqual([orgChannel.id, teamChannel.id].sort());

    for (const attempt of [
      () => channels.get(t.org, orgChannel.id, t.second),
      () => channels.update(t.org, { id: orgChannel.id, name: "taken" }, t.second),
      () => channels.test(t.org, orgChannel.id, t.second),
      () => channels.deliveries(t.org, { id: orgChannel.id }, t.second),
      () => channels.delete(t.org, orgChannel.id, t.second),
    ]) {
      expect((await rejection(attempt())).code).toBe("not_found");
    }
    expect((await channels.get(t.org, orgChannel.id)).name).toBe("org");
    expect(await db.query("select 1 from notification_deliveries where channel_id = $1", [orgChannel.id])).toEqual([]);

    expect((await channels.update(t.org, { id: teamChannel.id, name: "renamed" }, t.second)).name).toBe("renamed");
    await channels.test(t.org, teamChannel.id, t.second);
    // Listed once attempted.
    await eventually(
      async () => (await channels.deliveries(t.org, { id: teamChannel.id }, t.second)).data.length === 1,
      "the team's test delivery in its log",
      30_000,
    );
    await channels.delete(t.org, teamChannel.id, t.second);
    // The organization-wide credential changes any of them.
    await channels.delete(t.org, orgChannel.id);
    expect(await channels.list(t.org)).toEqual([]);
  });

  it("rules: name only its team's channels and routers (another team's id 404), select only its team", async () => {
    const t = await teams();
    const orgChannel = await channels.create(t.org, SYSTEM_ORIGIN, t.slack("org"));
    const teamChannel = await channels.create(t.org, SYSTEM_ORIGIN, t.slack("team"), t.second);
    const orgRule = await rules.create(t.org, { name: "org", events: ["*"], channels: [orgChannel.id] });
    const base = { name: "team", events: ["router.offline" as const], channels: [teamChannel.id] };

    for (const input of [
      { ...base, channels: [orgChannel.id] },
      { ...base, routers: { team_id: t.owner.teamId } },
      { ...base, routers: { router_ids: [t.defaultRouter.id] } },
      { ...base, routers: { router_ids: [t.teamRouter.id, t.defaultRouter.id] } },
    ]) {
      expect((await rejection(rules.create(t.org, input, t.second))).code).toBe("not_found");
    }
    expect(await count("alert_rules", t.org)).toBe(1);

    // Narrowed to its team: no selector, or its own team's router, is stored with its team.
    const teamRule = await rules.create(t.org, base, t.second);
    expect(teamRule.routers).toEqual({ team_id: t.second });
    const byId = await rules.create(t.org, { ...base, routers: { router_ids: [t.teamRouter.id] } }, t.second);
    expect(byId.routers).toEqual({ router_ids: [t.teamRouter.id], team_id: t.second });

    expect((await rules.list(t.org, t.second)).map((r) => r.id).sort()).toEqual([teamRule.id, byId.id].sort());
    expect(await rules.list(t.org)).toHaveLength(3);
    for (const attempt of [
      () => rules.get(t.org, orgRule.id, t.second),
      () => rules.update(t.org, { id: orgRule.id, name: "taken" }, t.second),
      () => rules.delete(t.org, orgRule.id, t.second),
      () => rules.update(t.org, { id: teamRule.id, routers: { team_id: t.owner.teamId } }, t.second),
      // Even an organization-wide credential cannot point a team's rule at another team.
      () => rules.update(t.org, { id: teamRule.id, routers: { router_ids: [t.defaultRouter.id] } }),
    ]) {
      expect((await rejection(attempt())).code).toBe("not_found");
    }
    expect(await rules.get(t.org, orgRule.id)).toEqual(orgRule);
    expect(await rules.get(t.org, teamRule.id)).toEqual(teamRule);
    // Widening with an empty selector stays inside the team.
    expect((await rules.update(t.org, { id: teamRule.id, routers: {} }, t.second)).routers).toEqual({
      team_id: t.second,
    });

    // Only the team's router reaches the team's channel.
    clock.set(T0 + 60_000);
    await event(t.org, t.defaultRouter.id, "router.offline", T0);
    await event(t.org, t.teamRouter.id, "router.offline", T0);
    await alerts.run();
    await alerts.run();
    const routersOf = async (channelId: string) =>
      (
        await db.query<{ router_id: string }>(
          "select distinct router_id::text as router_id from notification_deliveries where channel_id = $1",
          [channelId],
        )
      ).map((r) => r.router_id);
    await eventually(async () => (await routersOf(orgChannel.id)).length === 2, "the organization's rule", 15_000);
    expect(await routersOf(teamChannel.id)).toEqual([t.teamRouter.id]);
  });

  it("maintenance windows: see and delete only its team's, cover only its team's routers", async () => {
    const t = await teams();
    const window = { name: "w", starts_at: "2026-12-01T22:00:00Z", ends_at: "2026-12-01T23:00:00Z" };
    const orgWindow = await windows.create(t.org, SYSTEM_ORIGIN, window);
    for (const routers of [{ team_id: t.owner.teamId }, { router_ids: [t.defaultRouter.id] }]) {
      expect((await rejection(windows.create(t.org, SYSTEM_ORIGIN, { ...window, routers }, t.second))).code).toBe(
        "not_found",
      );
    }
    expect(await count("maintenance_windows", t.org)).toBe(1);
    const teamWindow = await windows.create(t.org, SYSTEM_ORIGIN, window, t.second);
    expect(teamWindow.routers).toEqual({ team_id: t.second });
    expect((await windows.list(t.org, t.second)).map((w) => w.id)).toEqual([teamWindow.id]);
    expect((await rejection(windows.get(t.org, orgWindow.id, t.second))).code).toBe("not_found");
    expect((await rejection(windows.delete(t.org, orgWindow.id, SYSTEM_ORIGIN, t.second))).code).toBe("not_found");
    expect(await windows.get(t.org, orgWindow.id)).toEqual(orgWindow);
    const audited = await db.query<{ team_id: string | null }>(
      "select team_id::text as team_id from audit_log where action = 'maintenance.created' and target_id = $1",
      [teamWindow.id],
    );
    expect(audited).toEqual([{ team_id: t.second }]);
    await windows.delete(t.org, teamWindow.id, SYSTEM_ORIGIN, t.second);
    expect((await windows.list(t.org)).map((w) => w.id)).toEqual([orgWindow.id]);
  });
});
