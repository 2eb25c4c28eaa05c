import { loadAllInOneConfig } from "@fleet/all-in-one";
import { apiClient, type Json } from "../support/api-client.ts";
import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { startHttpReceiver } from "@fleet/api/testing/alert-receivers";
import { startSmtpSink } from "@fleet/api/testing/smtp";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * Alerts that reach people, from outside (docs/api.md "Alerts and maintenance windows"): routers
 * beat over HTTP to the daemon, channels, rules and windows are made over the API, and the
 * messages arrive at a real SMTP server and at one loopback HTTP server standing in for Slack,
 * Teams, Telegram (`TELEGRAM_API_BASE`) and PagerDuty (`PAGERDUTY_EVENTS_URL`). Domain time is a
 * ManualClock; the daemon's sweep is driven by hand; the alert engine and the delivery worker run
 * on their own timers. Each scenario has an organization of its own.
 */
let db: TestDatabase;
let system: TestSystem;
let http: Awaited<ReturnType<typeof startHttpReceiver>>;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
const HOUR = 3_600_000;
// A whole hour ahead of now: every scenario fits in the same UTC day unless run after 20:00.
const clock = new ManualClock(new Date(Math.ceil(Date.now() / HOUR) * HOUR));
const INTERVAL = 30_000;
const MISSED = 2;
/** Silent for this long after its last beat: offline at the next sweep (the sweeper's grace included). */
const SILENT = MISSED * INTERVAL + 5_000;

beforeAll(async () => {
  [db, http, smtp] = await Promise.all([createTestDatabase(), startHttpReceiver(), startSmtpSink()]);
  const config = loadAllInOneConfig(
    testSystemEnv({
      HEARTBEAT_INTERVAL_MS: String(INTERVAL),
      MISSED_HEARTBEATS: String(MISSED),
      ENTRY_POINT_PORTS: "63850-63859",
      TRIAL_ROUTERS: "100",
      WEBHOOK_ALLOW_PRIVATE: "true",
      SMTP_URL: smtp.url,
      MAIL_FROM: "Fleet <alerts@fleet.test.invalid>",
      TELEGRAM_API_BASE: `${http.url}/tg`,
      PAGERDUTY_EVENTS_URL: `${http.url}/pd/v2/enqueue`,
    }),
  );
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db, clock });
}, 120_000);

afterAll(async () => {
  await system?.close();
  await http?.close();
  await smtp?.close();
  await db?.close();
});

const { ok } = apiClient(() => system.api.url);

interface Tenant {
  token: string;
  tag: string;
  /** The organization dev-login made: "<local part>'s organization". */
  organization: string;
  routers: Array<{ id: string; name: string; heartbeatToken: string }>;
  channels: Record<string, string>;
  routingKey: string;
  botToken: string;
  mailbox: string;
  /** What reached each of this tenant's channels. */
  slack(): Json[];
  teams(): Json[];
  telegram(): Json[];
  pagerduty(): Json[];
  mails(): Array<{ text: string }>;
}

/** An organization with a billing account, `routers` enrolled, and one channel of each type. */
const tenant = async (routers: number): Promise<Tenant> => {
  const tag = crypto.randomUUID().slice(0, 8);
  const login = await fetch(`${system.api.url}/v1/auth/dev-login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `alerts-${tag}@example.com` }),
  }).then((r) => r.json() as Promise<{ access_token: string }>);
  const token = login.access_token;
  await ok("POST", "/v1/account", token, {
    name: `Org ${tag}`,
    email: `billing-${tag}@example.com`,
    address: { country: "DE" },
  });
  const enrolled: Tenant["routers"] = [];
  for (let i = 0; i < routers; i++) {
    const name = `gw-${tag}-${String(i).padStart(2, "0")}`;
    const made = await ok("POST", "/api/routers", token, { name });
    enrolled.push({ id: made.data.router.id, name, heartbeatToken: made.data.heartbeat_token });
  }
  const routingKey = `R${tag}`.padEnd(32, "0");
  const botToken = `4242:${tag.padEnd(30, "x")}`;
  const mailbox = `noc-${tag}@example.net`;
  const channels: Record<string, string> = {};
  for (const [type, config] of [
    ["slack", { webhook_url: `${http.url}/slack/${tag}` }],
    ["teams", { webhook_url: `${http.url}/teams/${tag}` }],
    ["telegram", { bot_token: botToken, chat_id: "-100777" }],
    ["pagerduty", { routing_key: routingKey }],
    ["email", { to: [mailbox] }],
  ] as const) {
    channels[type] = (await ok("POST", "/api/notification-channels", token, { name: type, type, config })).data.id;
  }
  const at = (path: string) => () => http.requests.filter((r) => r.path === path).map((r) => r.body);
  return {
    token,
    tag,
    organization: `alerts-${tag}'s organization`,
    routers: enrolled,
    channels,
    routingKey,
    botToken,
    mailbox,
    slack: at(`/slack/${tag}`),
    teams: at(`/teams/${tag}`),
    telegram: at(`/tg/bot${botToken}/sendMessage`),
    pagerduty: () =>
      http.requests.filter((r) => r.path === "/pd/v2/enqueue" && r.body.routing_key === routingKey).map((r) => r.body),
    mails: () => smtp.received.filter((m) => m.to.includes(mailbox)),
  };
};

const rule = (t: Tenant, body: Record<string, unknown> = {}) =>
  ok("POST", "/api/alert-rules", t.token, {
    name: "routers down",
    events: ["router.offline", "router.online"],
    channels: Object.values(t.channels),
    ...body,
  });

/** Heartbeats of these routers at the clock's time, written. */
/**
 * The routers' heartbeats, all in flight at once: sent one after another, a storm's 12 took long
 * enough on a slow machine for the daemon's 250 ms flush to write the first few alone, and the
 * alert engine sent those one by one (fewer than 11 routers are no storm).
 */
const beat = async (routers: Tenant["routers"]) => {
  const answers = await Promise.all(
    routers.map((r) =>
      fetch(`${system.heartbeat.url}/v1/heartbeat`, {
        method: "POST",
        headers: { authorization: `Bearer ${r.heartbeatToken}`, "content-type": "application/json" },
        body: JSON.stringify({ type: "heartbeat", identity: r.name, uptime: 100_000 }),
      }),
    ),
  );
  expect(answers.map((res) => res.status)).toEqual(routers.map(() => 200));
  await system.heartbeat.flush();
};

const advance = async (ms: number) => {
  clock.set(new Date(clock.now().getTime() + ms));
  await system.heartbeat.sweep();
};

/** Every delivery of a channel, through the API. */
const deliveries = async (t: Tenant, channel: string): Promise<Json[]> =>
  (await ok("GET", `/api/notification-channels/${t.channels[channel]}/deliveries?limit=100`, t.token)).data;

/** A channel's log once it holds `n` deliveries (an attempt is recorded after the receiver answered). */
const settled = (t: Tenant, channel: string, n: number): Promise<Json[]> =>
  eventually(async () => {
    const log = await deliveries(t, channel);
    return log.length >= n ? log : null;
  }, `${n} deliveries in the ${channel} log`);

const firstLine = (slack: Json) => String(slack.text).split("\n")[0];

// Each case waits on real sends and sweeps: on a loaded CI machine the storm alone took over 30 s.
describe("alerts from outside", { timeout: 120_000 }, () => {
  it("a router offline and back: one message each on every channel; PagerDuty trigger, then resolve", async () => {
    const t = await tenant(1);
    await rule(t);
    await beat(t.routers);
    await advance(SILENT);
    const every = () => [t.slack(), t.teams(), t.telegram(), t.pagerduty(), t.mails()].map((m) => m.length);
    await eventually(() => every().every((n) => n === 1), "the offline message everywhere", 30_000);
    const name = t.routers[0]?.name ?? "";
    expect(firstLine(t.slack()[0])).toBe(`Router offline: ${name}`);
    expect(String(t.teams()[0].title)).toContain("Router offline");
    expect(String(t.telegram()[0].text)).toContain(name);
    expect(t.mails()[0]?.text).toMatch(/Subject: .*Router offline/);
    const trigger = t.pagerduty()[0];
    expect(trigger).toMatchObject({ event_action: "trigger", dedup_key: expect.any(String) });
    expect(String(t.slack()[0].text)).toContain(`/console/routers/${t.routers[0]?.id}`);

    await advance(5 * 60_000);
    await beat(t.routers);
    await eventually(() => every().every((n) => n === 2), "the recovery everywhere", 30_000);
    expect(firstLine(t.slack()[1])).toBe(`Router recovered: ${name}`);
    expect(t.pagerduty()[1]).toEqual({
      routing_key: t.routingKey,
      event_action: "resolve",
      dedup_key: trigger.dedup_key,
    });
    // The log agrees: two sent deliveries per channel, nothing more.
    for (const channel of Object.keys(t.channels)) {
      const log = await settled(t, channel, 2);
      expect(log.map((d: Json) => [d.event, d.status])).toEqual([
        ["router.online", "sent"],
        ["router.offline", "sent"],
      ]);
    }
  });

  it("a router back within min_offline_seconds notifies nothing; one that stays out notifies", async () => {
    const t = await tenant(2);
    await rule(t, { min_offline_seconds: 300 });
    const [flapping, down] = t.routers;
    if (!flapping || !down) throw new Error("two routers");
    await beat(t.routers);
    await advance(SILENT);
    await advance(60_000);
    await beat([flapping]);
    await advance(300_000);
    await eventually(() => t.slack().length === 1, "the router that stayed out", 30_000);
    expect(t.slack().map(firstLine)).toEqual([`Router offline: ${down.name}`]);
    const log = await settled(t, "pagerduty", 1);
    expect(log.map((d: Json) => d.router_id)).toEqual([down.id]);
  });

  it("more than 10 routers offline within 60 s: one grouped message per channel, one for the recoveries", async () => {
    const t = await tenant(12);
    await rule(t);
    await beat(t.routers);
    await advance(SILENT);
    // The storm's minute: held until it is over.
    await eventually(
      async () =>
        (await db.query<{ n: number }>("select count(*)::int as n from alert_storms where kind = 'offline'"))[0]?.n ===
        1,
      "the storm open",
      30_000,
    );
    await advance(61_000);
    const every = () => [t.slack(), t.teams(), t.telegram(), t.pagerduty(), t.mails()].map((m) => m.length);
    await eventually(() => every().every((n) => n === 1), "one grouped message per channel", 30_000);
    expect(firstLine(t.slack()[0])).toBe(`12 routers offline in ${t.organization}`);
    for (const r of t.routers) expect(String(t.slack()[0].text)).toContain(r.name);
    const trigger = t.pagerduty()[0];
    expect(trigger.event_action).toBe("trigger");

    await advance(60_000);
    await beat(t.routers);
    await eventually(
      async () =>
        (await db.query<{ n: number }>("select count(*)::int as n from alert_storms where kind = 'recovered'"))[0]
          ?.n === 1,
      "the recoveries' storm open",
      30_000,
    );
    await advance(61_000);
    await eventually(() => every().every((n) => n === 2), "one grouped recovery per channel", 30_000);
    expect(firstLine(t.slack()[1])).toBe(`12 routers back online in ${t.organization}`);
    expect(t.pagerduty()[1]).toEqual({
      routing_key: t.routingKey,
      event_action: "resolve",
      dedup_key: trigger.dedup_key,
    });
  });

  it("a maintenance window: deliveries suppressed, faults marked, availability counts it apart", async () => {
    const t = await tenant(1);
    await rule(t);
    const router = t.routers[0];
    if (!router) throw new Error("a router");
    const startsAt = new Date(clock.now().getTime() - 60_000);
    const endsAt = new Date(startsAt.getTime() + 30 * 60_000);
    await ok("POST", "/api/maintenance-windows", t.token, {
      name: "firmware",
      routers: { router_ids: [router.id] },
      starts_at: startsAt.toISOString(),
      ends_at: endsAt.toISOString(),
    });
    await beat(t.routers);
    await advance(SILENT);
    const suppressed = await eventually(async () => {
      const log = await deliveries(t, "slack");
      return log.length > 0 ? log : null;
    }, "the suppressed delivery");
    expect(suppressed).toEqual([
      expect.objectContaining({ event: "router.offline", status: "suppressed", router_id: router.id }),
    ]);
    const faults = (await ok("GET", `/api/routers/${router.id}/faults`, t.token)).data;
    expect(faults[0]).toMatchObject({ status: "ongoing", maintenance: true });
    await advance(10 * 60_000);
    await beat(t.routers);

    const day = (d: Date) => d.toISOString().slice(0, 10);
    const rows = (
      await ok(
        "GET",
        `/api/routers/${router.id}/availability?from=${day(startsAt)}&to=${day(endsAt)}&granularity=day`,
        t.token,
      )
    ).data;
    const sum = (key: string) => rows.reduce((n: number, r: Json) => n + Number(r[key]), 0);
    // Counted up to now, inside the window.
    expect(sum("maintenance_minutes")).toBeCloseTo((clock.now().getTime() - startsAt.getTime()) / 60_000, 1);
    for (const r of rows) {
      expect(r).toMatchObject({
        availability_percent: expect.any(Number),
        availability_percent_including_maintenance: expect.any(Number),
      });
      expect(r.availability_percent).toBeGreaterThanOrEqual(r.availability_percent_including_maintenance);
    }
    // Nothing reached anyone: the offline was suppressed and its recovery has nothing to close.
    expect([t.slack(), t.teams(), t.telegram(), t.pagerduty(), t.mails()].map((m) => m.length)).toEqual([
      0, 0, 0, 0, 0,
    ]);
  });

  it("quiet hours: nothing while they last, then one summary", async () => {
    const t = await tenant(1);
    const now = clock.now();
    const hh = (d: Date) => `${String(d.getUTCHours()).padStart(2, "0")}:00`;
    await rule(t, { quiet_hours: { timezone: "UTC", from: hh(now), to: hh(new Date(now.getTime() + 2 * HOUR)) } });
    await beat(t.routers);
    await advance(SILENT);
    await eventually(
      async () =>
        (
          await db.query<{ n: number }>(
            "select count(*)::int as n from alert_pending where organization_id = (select organization_id from routers where id = $1) and state = 'quiet'",
            [t.routers[0]?.id],
          )
        )[0]?.n === 1,
      "the offline held for the quiet hours",
      30_000,
    );
    expect(t.slack()).toEqual([]);
    await advance(2 * HOUR);
    await eventually(() => t.slack().length === 1 && t.mails().length === 1, "the summary", 30_000);
    expect(firstLine(t.slack()[0])).toBe(`While quiet: 1 alert in ${t.organization}`);
    expect(String(t.slack()[0].text)).toContain(`${t.routers[0]?.name} in ${t.organization} went offline`);
  });

  it("one tenant's dead channel does not hold another tenant's delivery back", async () => {
    const dead = await tenant(0);
    const hung = (
      await ok("POST", "/api/notification-channels", dead.token, {
        name: "hangs",
        type: "slack",
        config: { webhook_url: `${http.url}/hang/${dead.tag}` },
      })
    ).data.id;
    for (let i = 0; i < 20; i++) await ok("POST", `/api/notification-channels/${hung}/test`, dead.token);
    await eventually(() => http.hanging() >= 4, "the dead channel's sends hanging", 30_000);
    const alive = await tenant(0);
    await ok("POST", `/api/notification-channels/${alive.channels.slack}/test`, alive.token);
    // Well inside one send's 10 s timeout: the dead channel holds only its organization's slots.
    await eventually(() => alive.slack().length === 1, "the other tenant's message", 8_000);
    expect(http.hanging()).toBeLessThanOrEqual(4);
  });
});
