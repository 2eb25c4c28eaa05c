/**
 * `npm run bench:alerts`: an outage of --routers routers (default 1,000) in one organization, the
 * storm case of docs/api.md "Alerts and maintenance windows", through the real alert engine, job
 * engine and delivery worker, to a real SMTP server and a loopback HTTP server standing in for
 * Slack, Teams, Telegram and PagerDuty (one channel of each, one rule over them). Domain time is a
 * ManualClock, so the 60 s grouping window closes when the bench says. Each of --repeat runs
 * (default 3; a fresh organization each) measures:
 *  1. the outage's audit insert (as the daemon's sweep writes it: one statement for every router)
 *     with the rule present, against the same insert in an organization without rules (baseline);
 *  2. the engine's passes that take the outage in and hold it for the storm: statements and
 *     wall time per offline router (all of it database work on PGlite's one connection);
 *  3. from the window closing to every channel's grouped message received, against one test
 *     message to every channel (baseline: the delivery path alone).
 * min / median / max of the runs are printed, and ratios to the same run's baselines. With
 * DATABASE_URL a scratch database is created on that server and dropped; without it runs on PGlite.
 * Timings are printed, never asserted.
 */
import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import {
  AlertEngine,
  ChannelSender,
  NotificationChannelsService,
  NotificationDeliveryWorker,
  SecretBox,
} from "@fleet/api";
import { startHttpReceiver } from "@fleet/api/testing/alert-receivers";
import { startSmtpSink } from "@fleet/api/testing/smtp";
import { acquireJobEngine, type Database, insertAuditEntries, type Query, queryOf, SYSTEM_ORIGIN } from "@fleet/db";
import type { KyselyPlugin } from "kysely";
import { createTestDatabase, makeUser } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import pino from "pino";

const { values } = parseArgs({
  options: { routers: { type: "string", default: "1000" }, repeat: { type: "string", default: "3" } },
});
const ROUTERS = Number(values.routers);
const REPEAT = Math.max(1, Number(values.repeat));
const STORM_WINDOW_MS = 60_000;

const db = await createTestDatabase();
let statements = 0;
// Every statement counts, raw or built with `query.kysely` (a plugin sees each one as it runs).
const counting: KyselyPlugin = {
  transformQuery: ({ node }) => {
    statements++;
    return node;
  },
  transformResult: async ({ result }) => result,
};
const countedQuery = <Q extends Query>(query: Q): Q =>
  Object.assign(
    ((sql: string, params?: readonly unknown[]) => {
      statements++;
      return query(sql, params);
    }) as Q,
    { kysely: query.kysely.withPlugin(counting) },
  );
const counted: Database = {
  ...db,
  query: countedQuery(db.query),
  transaction: ((work: Parameters<Database["transaction"]>[0]) =>
    db.transaction((query) => work(countedQuery(query)))) as Database["transaction"],
};
const [http, smtp] = await Promise.all([startHttpReceiver(), startSmtpSink()]);
const clock = new ManualClock(new Date("2026-12-01T09:00:00Z"));
const logger = pino({ level: "silent" });
const jobs = await acquireJobEngine(db);
const secrets = new SecretBox("alerts-bench-key");
const sender = new ChannelSender({
  allowPrivate: true,
  smtpUrl: smtp.url,
  mailFrom: "Fleet <alerts@bench.invalid>",
  telegramApiBase: `${http.url}/tg`,
  pagerdutyEventsUrl: `${http.url}/pd`,
  timeoutMs: 10_000,
});
const worker = new NotificationDeliveryWorker({ db, secrets, sender, clock, logger, pollingIntervalSeconds: 0.5 });
await worker.start(jobs);
const channels = new NotificationChannelsService({
  db,
  jobs,
  secrets,
  clock,
  allowPrivate: true,
});
// The engine's own timer is an hour: the bench runs its passes.
const engine = new AlertEngine({
  db: counted,
  jobs,
  runtime: { started: true, ensure: async () => jobs },
  clock,
  logger,
  publicUrl: () => "https://fleet.bench.invalid",
  pollMs: 3_600_000,
});

/** An organization with `ROUTERS` routers; with `rule`, one channel of each type and a rule over them. */
const organization = async (tag: string, rule: boolean) => {
  const owner = await makeUser(db);
  await db.query(
    `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
     select gen_random_uuid(), $1, $2, $3 || '-' || i, md5($3 || i::text), now() from generate_series(1, $4::int) as i`,
    [owner.organizationId, owner.teamId, tag, ROUTERS],
  );
  const routerIds = (
    await db.query<{ id: string }>("select id from routers where organization_id = $1", [owner.organizationId])
  ).map((r) => r.id);
  const ids: string[] = [];
  if (rule) {
    for (const [type, config] of [
      ["slack", { webhook_url: `${http.url}/slack/${tag}` }],
      ["teams", { webhook_url: `${http.url}/teams/${tag}` }],
      ["telegram", { bot_token: `4242:${tag.padEnd(30, "x")}`, chat_id: "-100" }],
      ["pagerduty", { routing_key: `R${tag}`.padEnd(32, "0") }],
      ["email", { to: [`noc-${tag}@bench.invalid`] }],
    ] as const) {
      ids.push((await channels.create(owner.organizationId, SYSTEM_ORIGIN, { name: type, type, config } as never)).id);
    }
    const ruleId = crypto.randomUUID();
    await db.query(
      `insert into alert_rules (id, organization_id, name, events, routers, created_at)
       values ($1, $2, 'down', '["router.offline","router.online"]', '{}', now())`,
      [ruleId, owner.organizationId],
    );
    for (const id of ids)
      await db.query("insert into alert_rule_channels (rule_id, channel_id) values ($1, $2)", [ruleId, id]);
  }
  return { owner, routerIds, channelIds: ids, tag };
};

/** Requests and mails of one organization's channels so far. */
const arrived = (tag: string) =>
  http.requests.filter(
    (r) =>
      r.path.endsWith(`/${tag}`) ||
      r.path.includes(`/bot4242:${tag}`) ||
      (r.path === "/pd" && String(r.body.routing_key).startsWith(`R${tag}`)),
  ).length + smtp.received.filter((m) => m.to.includes(`noc-${tag}@bench.invalid`)).length;

const waitFor = async (check: () => boolean) => {
  const deadline = Date.now() + 120_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for deliveries");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
};

const offline = (organizationId: string, routerIds: string[], at: Date) =>
  insertAuditEntries(
    queryOf(db),
    routerIds.map((routerId) => ({
      organizationId,
      occurredAt: at,
      action: "router.offline",
      actor: SYSTEM_ORIGIN.actor,
      target: { type: "router", id: routerId },
      routerId,
    })),
  );

interface Run {
  insertBaselineMs: number;
  insertMs: number;
  enginePerRouterMs: number;
  statementsPerRouter: number;
  deliveryBaselineMs: number;
  stormMs: number;
}

const runOnce = async (i: number): Promise<Run> => {
  const n = i < 0 ? "w" : String(i);
  const quiet = await organization(`b${n}x`, false);
  const watched = await organization(`a${n}x`, true);
  const at = clock.now();
  // The two inserts take turns going first, so neither always meets a colder cache.
  const timed = async (org: typeof quiet) => {
    const started = performance.now();
    await offline(org.owner.organizationId, org.routerIds, at);
    return performance.now() - started;
  };
  let insertBaselineMs: number;
  let insertMs: number;
  if (i % 2 !== 1) {
    insertBaselineMs = await timed(quiet);
    insertMs = await timed(watched);
  } else {
    insertMs = await timed(watched);
    insertBaselineMs = await timed(quiet);
  }
  let t = performance.now();

  // The passes that take the outage in: events to pending, then held in the storm.
  statements = 0;
  await engine.run();
  await engine.run();
  const engineMs = performance.now() - t;
  const engineStatements = statements;
  const held = await db.query<{ n: number }>(
    "select count(*)::int as n from alert_pending where organization_id = $1 and state = 'storm'",
    [watched.owner.organizationId],
  );
  if (held[0]?.n !== ROUTERS) throw new Error(`expected ${ROUTERS} held in the storm, found ${held[0]?.n}`);

  // Baseline: one test message to every channel, the delivery path alone.
  const before = arrived(watched.tag);
  t = performance.now();
  for (const id of watched.channelIds) await channels.test(watched.owner.organizationId, id);
  await waitFor(() => arrived(watched.tag) >= before + watched.channelIds.length);
  const deliveryBaselineMs = performance.now() - t;

  // The window closes: every channel's one grouped message.
  clock.set(new Date(at.getTime() + STORM_WINDOW_MS + 1_000));
  const beforeStorm = arrived(watched.tag);
  t = performance.now();
  await engine.run();
  await waitFor(() => arrived(watched.tag) >= beforeStorm + watched.channelIds.length);
  const stormMs = performance.now() - t;
  clock.set(new Date(clock.now().getTime() + 3_600_000));
  return {
    insertBaselineMs,
    insertMs,
    enginePerRouterMs: engineMs / ROUTERS,
    statementsPerRouter: engineStatements / ROUTERS,
    deliveryBaselineMs,
    stormMs,
  };
};

// One run first to warm the caches and the JIT, not counted.
await runOnce(-1);
const runs: Run[] = [];
for (let i = 0; i < REPEAT; i++) runs.push(await runOnce(i));

const stats = (pick: (r: Run) => number, digits = 1) => {
  const xs = runs.map(pick).sort((a, b) => a - b);
  const median = xs[Math.floor(xs.length / 2)] ?? Number.NaN;
  return `min ${xs[0]?.toFixed(digits)} / median ${median.toFixed(digits)} / max ${xs.at(-1)?.toFixed(digits)}`;
};
console.log(`engine: ${db.url ? "postgresql" : "pglite"}; ${ROUTERS} routers offline at once; ${REPEAT} runs`);
console.log(`outage audit insert, no rules (baseline): ${stats((r) => r.insertBaselineMs)} ms`);
console.log(`outage audit insert, one rule:            ${stats((r) => r.insertMs)} ms`);
console.log(
  `  extra per offline router:               ${stats((r) => (r.insertMs - r.insertBaselineMs) / ROUTERS, 4)} ms (ratio ${stats((r) => r.insertMs / r.insertBaselineMs, 2)})`,
);
console.log(`engine intake to the storm, per router:   ${stats((r) => r.enginePerRouterMs, 4)} ms`);
console.log(`  statements per router:                  ${stats((r) => r.statementsPerRouter, 3)}`);
console.log(`test message to 5 channels (baseline):    ${stats((r) => r.deliveryBaselineMs)} ms`);
console.log(
  `window closed -> 5 grouped messages:      ${stats((r) => r.stormMs)} ms (ratio ${stats((r) => r.stormMs / r.deliveryBaselineMs, 2)})`,
);

await engine.close();
await worker.close();
await jobs.stop();
sender.close();
await http.close();
await smtp.close();
await db.close();
