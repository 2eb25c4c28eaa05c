import {
  acquireJobEngine,
  type AuditOrigin,
  type JobEngine,
  NOTIFICATION_DELIVERY_QUEUE,
  queryOf,
  RoutersRepository,
  WEBHOOK_DELIVERY_QUEUE,
  WebhooksRepository,
} from "@fleet/db";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { DEFAULT_HEALTH_THRESHOLDS, ManualClock } from "@fleet/shared";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { AlertEngine } from "../alerts/alert-engine.ts";
import { AlertRulesService } from "../alerts/alert-rules.service.ts";
import { NotificationChannelsService } from "../alerts/notification-channels.service.ts";
import { SecretBox } from "../webhooks/webhook-secret.ts";
import { WEBHOOK_RETRY_LIMIT } from "../webhooks/webhook-delivery.worker.ts";
import { WebhookDispatcher } from "../webhooks/webhook-dispatcher.ts";
import { WebhooksService } from "../webhooks/webhooks.service.ts";
import { HealthThresholdsService } from "./health-thresholds.service.ts";
import { decide, evaluateResources } from "./resource-evaluator.ts";

// The service tier (docs/contributing.md "Add a test"): thresholds and the resource evaluator on a
// real database with the real migrations and repositories. Domain time is one ManualClock moving
// forward only: every evaluation judges every router of this file's database, so each test reads
// its own routers' faults and entries.

let db: TestDatabase;
let engine: JobEngine;
const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);
const clock = new ManualClock(T0);
const logger = pino({ level: "silent" });
const origin: AuditOrigin = { actor: { type: "system", id: null }, sourceIp: null };
let thresholds: HealthThresholdsService;

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  await engine.defineQueue({ name: WEBHOOK_DELIVERY_QUEUE, retryLimit: WEBHOOK_RETRY_LIMIT });
  await engine.defineQueue({ name: NOTIFICATION_DELIVERY_QUEUE });
  thresholds = new HealthThresholdsService({ db, clock, routers: new RoutersRepository(db) });
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

const setLatest = (
  routerId: string,
  values: { cpu?: number | null; disk?: number | null; temperature?: number | null },
) =>
  db.query(
    `insert into router_liveness (router_id, health_reported_at, cpu_load, disk_used_percent, temperature)
     values ($1, to_timestamp($2::float8 / 1000.0), $3, $4, $5)
     on conflict (router_id) do update set health_reported_at = excluded.health_reported_at, cpu_load = excluded.cpu_load,
       disk_used_percent = excluded.disk_used_percent, temperature = excluded.temperature`,
    [routerId, clock.now().getTime(), values.cpu ?? null, values.disk ?? null, values.temperature ?? null],
  );

const faultsOf = (routerId: string) =>
  db.query<{
    type: string;
    severity: string;
    cause: string;
    status: string;
    message: string;
    created_ms: number;
    duration_seconds: number | null;
  }>(
    `select type, severity, cause, status, message, (extract(epoch from created_at) * 1000)::float8 as created_ms, duration_seconds
     from router_faults where router_id = $1 order by created_at, cause`,
    [routerId],
  );

const entriesOf = (routerId: string) =>
  db.query<{ action: string; details: Record<string, unknown> }>(
    "select action, details from audit_log where router_id = $1 and action = 'router.resource' order by occurred_at, id",
    [routerId],
  );

const evaluate = () => evaluateResources({ db, clock });
const advance = async (seconds: number) => {
  clock.advance(seconds * 1000);
  await evaluate();
};

const hotRouter = async (values: Parameters<typeof setLatest>[1] = { cpu: 97.5 }) => {
  const user = await makeUser(db);
  const router = await makeRouter(db, user, { name: "core-1" });
  await setLatest(router.id, values);
  return { user, router };
};

describe("health thresholds (service tier)", () => {
  it("answers the defaults, replaces only the measures a PUT names, and null stops watching one", async () => {
    const user = await makeUser(db);
    expect(await thresholds.get(user.organizationId)).toEqual(DEFAULT_HEALTH_THRESHOLDS);
    await thresholds.update(user.organizationId, { cpu: { above: 80, for_seconds: 60 } });
    const after = await thresholds.update(user.organizationId, { temperature: null });
    expect(after).toEqual({ ...DEFAULT_HEALTH_THRESHOLDS, cpu: { above: 80, for_seconds: 60 }, temperature: null });
    expect(await thresholds.get(user.organizationId)).toEqual(after);
    // Another organization still has the defaults.
    expect(await thresholds.get((await makeUser(db)).organizationId)).toEqual(DEFAULT_HEALTH_THRESHOLDS);
  });

  it("a router's override beats its organization's threshold; the rest follow the organization", async () => {
    const user = await makeUser(db);
    const router = await makeRouter(db, user);
    await thresholds.update(user.organizationId, { cpu: { above: 80, for_seconds: 60 }, disk: null });
    const own = await thresholds.updateRouter(user.teamId, router.id, { cpu: { above: 99, for_seconds: 0 } });
    expect(own).toEqual({
      ...DEFAULT_HEALTH_THRESHOLDS,
      cpu: { above: 99, for_seconds: 0 },
      disk: null,
      overridden: ["cpu"],
    });
    await thresholds.update(user.organizationId, { memory: { above: 50, for_seconds: 5 } });
    expect(await thresholds.getRouter(user.teamId, router.id)).toMatchObject({
      cpu: { above: 99, for_seconds: 0 },
      memory: { above: 50, for_seconds: 5 },
    });
  });

  it("another organization's router, or another team's, is 404 and gets no override", async () => {
    const user = await makeUser(db);
    const other = await makeUser(db);
    const router = await makeRouter(db, other);
    expect((await rejection(thresholds.getRouter(user.teamId, router.id))).code).toBe("not_found");
    const refused = await rejection(thresholds.updateRouter(user.teamId, router.id, { cpu: null }));
    expect(refused.code).toBe("not_found");
    expect((await rejection(thresholds.getRouter(user.teamId, "not-a-uuid"))).code).toBe("not_found");
    expect(await db.query("select 1 from router_health_thresholds where router_id = $1", [router.id])).toEqual([]);
  });

  it("a team-bound credential cannot change the organization's thresholds (403), nothing stored", async () => {
    const user = await makeUser(db);
    const refused = await rejection(thresholds.update(user.organizationId, { cpu: null }, user.teamId));
    expect(refused.code).toBe("forbidden");
    expect(await thresholds.get(user.organizationId)).toEqual(DEFAULT_HEALTH_THRESHOLDS);
  });
});

describe("resource evaluator (service tier)", () => {
  it("opens a warning fault after for_seconds above, not a second before, dated when it went above", async () => {
    const { router } = await hotRouter({ cpu: 97.5 });
    const wentAbove = clock.now().getTime();
    await evaluate();
    await advance(599);
    expect(await faultsOf(router.id)).toEqual([]);
    await advance(1);
    expect(await faultsOf(router.id)).toEqual([
      {
        type: "resource",
        severity: "warning",
        cause: "cpu",
        status: "ongoing",
        message: "CPU load above 90 %: core-1",
        created_ms: wentAbove,
        duration_seconds: null,
      },
    ]);
    expect(await entriesOf(router.id)).toEqual([
      {
        action: "router.resource",
        details: expect.objectContaining({ measure: "cpu", value: 97.5, threshold: 90, state: "above" }),
      },
    ]);
    // Evaluated again: still one fault, one entry.
    await advance(30);
    expect(await faultsOf(router.id)).toHaveLength(1);
    expect(await entriesOf(router.id)).toHaveLength(1);
  });

  it("a dip before for_seconds starts the count again; the threshold itself is not above", async () => {
    const { router } = await hotRouter({ cpu: 95 });
    await evaluate();
    await advance(500);
    await setLatest(router.id, { cpu: 90 });
    await advance(10);
    await setLatest(router.id, { cpu: 95 });
    await advance(10);
    await advance(599);
    expect(await faultsOf(router.id)).toEqual([]);
    await advance(1);
    expect(await faultsOf(router.id)).toMatchObject([{ cause: "cpu", status: "ongoing" }]);
  });

  it("completes after the same duration below, and a shorter dip keeps it open (no flapping)", async () => {
    const { router } = await hotRouter({ temperature: 80 });
    await evaluate();
    await advance(300);
    expect(await faultsOf(router.id)).toMatchObject([{ cause: "temperature", status: "ongoing" }]);
    // 299 s below, then above again: still the same open fault.
    await setLatest(router.id, { temperature: 70 });
    await advance(1);
    await advance(299);
    await setLatest(router.id, { temperature: 76 });
    await advance(1);
    expect(await faultsOf(router.id)).toMatchObject([{ status: "ongoing" }]);
    // Below for 300 s: completed once, 300 s after it went below.
    await setLatest(router.id, { temperature: 60 });
    await advance(1);
    const below = clock.now().getTime();
    await advance(299);
    expect(await faultsOf(router.id)).toMatchObject([{ status: "ongoing" }]);
    await advance(1);
    const [fault] = await faultsOf(router.id);
    expect(fault).toMatchObject({ status: "completed" });
    expect(fault?.duration_seconds).toBe(Math.floor((below + 300_000 - (fault?.created_ms ?? 0)) / 1000));
    expect((await entriesOf(router.id)).map((e) => e.details.state)).toEqual(["above", "below"]);
    expect(await db.query("select 1 from router_health_states where router_id = $1", [router.id])).toEqual([]);
  });

  it("for_seconds 0 (disk) opens at the first evaluation above", async () => {
    const { router } = await hotRouter({ disk: 96 });
    await evaluate();
    expect(await faultsOf(router.id)).toMatchObject([
      { cause: "disk", status: "ongoing", message: "Disk used above 95 %: core-1" },
    ]);
  });

  it("a router's override beats the organization's default; null stops watching and completes an open fault", async () => {
    const { user, router } = await hotRouter({ cpu: 85 });
    const quiet = await makeRouter(db, user, { name: "edge" });
    await setLatest(quiet.id, { cpu: 85 });
    await thresholds.updateRouter(user.teamId, router.id, { cpu: { above: 80, for_seconds: 0 } });
    await evaluate();
    expect(await faultsOf(router.id)).toMatchObject([{ cause: "cpu", status: "ongoing" }]);
    expect(await faultsOf(quiet.id)).toEqual([]);
    await thresholds.updateRouter(user.teamId, router.id, { cpu: null });
    await advance(1);
    expect(await faultsOf(router.id)).toMatchObject([{ cause: "cpu", status: "completed" }]);
    expect((await entriesOf(router.id)).map((e) => e.details.state)).toEqual(["above", "unwatched"]);
    // The organization stops watching cpu: nothing opens on its other router either.
    await thresholds.update(user.organizationId, { cpu: null });
    await setLatest(quiet.id, { cpu: 100 });
    await advance(3_600);
    expect(await faultsOf(quiet.id)).toEqual([]);
  });

  it("a router without a pulse is not judged, and a resource fault coexists with a site fault", async () => {
    const { router } = await hotRouter({ disk: 99 });
    await db.query(
      "insert into router_faults (id, router_id, type, severity, message, cause, status, created_at) values (gen_random_uuid(), $1, 'site', 'error', 'Site Offline: core-1', 'Unknown', 'ongoing', now())",
      [router.id],
    );
    await db.query("update router_liveness set has_pulse = false where router_id = $1", [router.id]);
    await evaluate();
    expect((await faultsOf(router.id)).map((f) => f.type)).toEqual(["site"]);
    await db.query("update router_liveness set has_pulse = true where router_id = $1", [router.id]);
    await evaluate();
    expect((await faultsOf(router.id)).map((f) => `${f.type}:${f.status}`).sort()).toEqual([
      "resource:ongoing",
      "site:ongoing",
    ]);
  });

  it("router.resource reaches a subscribed webhook and the alert rules' outbox", async () => {
    const { user, router } = await hotRouter({ disk: 97 });
    const secrets = new SecretBox("health-service-tier-test-key");
    const webhooks = new WebhooksService({
      db,
      jobs: engine,
      secrets,
      clock,
      allowPrivate: true,
      onChange: () => undefined,
    });
    const hook = await webhooks.create(user.organizationId, origin, {
      url: "http://127.0.0.1:9/hook",
      events: ["router.resource"],
    });
    const channel = await new NotificationChannelsService({
      db,
      jobs: engine,
      secrets,
      clock,
      allowPrivate: true,
    }).create(user.organizationId, origin, { name: "noc", type: "email", config: { to: ["noc@example.net"] } });
    await new AlertRulesService({ db, clock }).create(user.organizationId, {
      name: "hot",
      events: ["router.resource"],
      channels: [channel.id],
    });
    await evaluate();
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
    } finally {
      await dispatcher.close();
    }
    const deliveries = await new WebhooksRepository(queryOf(db)).deliveries(hook.id, 10);
    expect(deliveries.map((d) => d.eventType)).toEqual(["router.resource"]);
    expect(
      await db.query("select action, details->>'measure' as measure from alert_events where router_id = $1", [
        router.id,
      ]),
    ).toEqual([{ action: "router.resource", measure: "disk" }]);
    // The alert engine turns it into a message naming the measure, the value and the threshold.
    const alerts = new AlertEngine({
      db,
      jobs: engine,
      runtime: { started: true, ensure: async () => undefined },
      clock,
      logger,
      publicUrl: () => "https://fleet.test.invalid",
      pollMs: 3_600_000,
    });
    try {
      await alerts.run();
    } finally {
      await alerts.close();
    }
    const [sent] = await db.query<{ event: string; message: { title: string; lines: Array<{ text: string }> } }>(
      "select event, message from notification_deliveries where router_id = $1",
      [router.id],
    );
    expect(sent?.event).toBe("router.resource");
    expect(sent?.message.title).toBe("Disk used high: core-1");
    expect(sent?.message.lines[0]?.text).toMatch(/^Disk used on core-1 in .+ is 97 %, above 95 %, at /);
  });
});

describe("resource evaluator at scale", () => {
  it("runs at most one statement of each kind for 2 routers as for 40: set-based, not per router", async () => {
    const statements = async (n: number) => {
      const user = await makeUser(db);
      for (let i = 0; i < n; i++) {
        const router = await makeRouter(db, user);
        await setLatest(router.id, { disk: 99, cpu: 99 });
      }
      let count = 0;
      const counting: Pick<TestDatabase, "transaction"> = {
        transaction: (work) =>
          db.transaction((query) =>
            work(
              Object.assign(
                <T>(sql: string, params?: readonly unknown[]) => {
                  count++;
                  return query<T>(sql, params);
                },
                { kysely: query.kysely },
              ),
            ),
          ),
      };
      clock.advance(1_000);
      await evaluateResources({ db: counting, clock });
      return count;
    };
    // Lock, candidates, open, complete, save, forget, audit: at most once each, whatever the count.
    expect(await statements(2)).toBeLessThanOrEqual(7);
    expect(await statements(40)).toBeLessThanOrEqual(7);
  });
});

describe("decide", () => {
  const base = {
    routerId: "r",
    organizationId: "o",
    name: "",
    identity: null,
    measure: "cpu",
    threshold: { above: 90, forSeconds: 10 },
    aboveSince: null,
    belowSince: null,
    faultId: null,
  };
  const now = new Date(T0);
  it("keeps state unchanged when the value is not reported", () => {
    const c = { ...base, value: null, aboveSince: new Date(T0 - 5_000) };
    expect(decide(c, now)).toMatchObject({ state: { aboveSince: c.aboveSince }, open: false, complete: false });
  });
  it("forgets a count that dipped before its fault opened", () => {
    expect(decide({ ...base, value: 50, aboveSince: new Date(T0 - 5_000) }, now)).toMatchObject({
      state: null,
      open: false,
    });
  });
});
