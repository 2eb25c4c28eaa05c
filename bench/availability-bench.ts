/**
 * `node bench/availability-bench.ts`: the availability report at fleet scale (docs/api.md
 * "Availability"). Seeds one team of --routers routers (default 10,000) with --days days (default
 * 400) of hourly downtime, one row per router and day (a router down a few minutes every day: the
 * worst realistic case for the report, which sums every row of the range), plus one fault per router
 * and week, then times the fleet report's query (best of 3) over 400 and 30 days and one router's
 * 400 days. With DATABASE_URL a scratch database is created on that server and dropped; without it
 * runs on PGlite in memory.
 */
import { parseArgs } from "node:util";
import { AvailabilityRepository, queryOf } from "@fleet/db";
import { createTestDatabase } from "@fleet/db/testing";

const { values } = parseArgs({
  options: { routers: { type: "string", default: "10000" }, days: { type: "string", default: "400" } },
});
const ROUTERS = Number(values.routers);
const DAYS = Number(values.days);
const DAY_MS = 86_400_000;
const now = Date.UTC(2026, 10, 25, 12);

const db = await createTestDatabase();
const [org] = await db.query<{ id: string }>(
  "insert into organizations (id, name, created_at) values (gen_random_uuid(), 'bench', now()) returning id",
);
const [team] = await db.query<{ id: string }>(
  "insert into teams (id, organization_id, name, is_default, created_at) values (gen_random_uuid(), $1, 'bench', true, now()) returning id",
  [org?.id],
);
let seeded = Date.now();
await db.query(
  `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
   select gen_random_uuid(), $1, $2, 'bench-' || i, md5(i::text), now() from generate_series(1, $3) as i`,
  [org?.id, team?.id, ROUTERS],
);
// In slices of 50 days, so PGlite's single connection never holds one enormous statement.
for (let from = 1; from <= DAYS; from += 50) {
  await db.query(
    `insert into router_downtime_hours (router_id, hour, seconds_down)
     select r.id, date_trunc('hour', to_timestamp($1::float8 / 1000.0) - make_interval(days => d, hours => (abs(hashtext(r.id::text)) + d) % 24)),
       60 + (abs(hashtext(r.id::text || d)) % 600)
     from routers r, generate_series($2::int, $3::int) as d where r.team_id = $4`,
    [now, from, Math.min(DAYS, from + 49), team?.id],
  );
}
await db.query(
  `insert into router_faults (id, router_id, type, severity, message, cause, status, created_at, resolved_at, duration_seconds)
   select gen_random_uuid(), r.id, 'site', 'error', 'Site Offline', 'Unknown', 'completed',
     to_timestamp($1::float8 / 1000.0) - make_interval(days => w * 7), to_timestamp($1::float8 / 1000.0) - make_interval(days => w * 7) + interval '5 minutes', 300
   from routers r, generate_series(1, $2::int) as w where r.team_id = $3`,
  [now, Math.floor(DAYS / 7), team?.id],
);
// As autovacuum leaves a settled table: the visibility map lets reports read the covering index alone.
await db.query("vacuum analyze");
seeded = Date.now() - seeded;
const [{ n } = { n: 0 }] = await db.query<{ n: number }>("select count(*)::int as n from router_downtime_hours");

const repo = new AvailabilityRepository(queryOf(db));
const best = async (work: () => Promise<unknown>) => {
  let fastest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    await work();
    fastest = Math.min(fastest, performance.now() - t);
  }
  return Math.round(fastest);
};
const end = new Date(now);
const fleet400 = await best(() => repo.fleet(team?.id ?? "", new Date(now - DAYS * DAY_MS), end));
const fleet30 = await best(() => repo.fleet(team?.id ?? "", new Date(now - 30 * DAY_MS), end));
const [one] = await db.query<{ id: string }>("select id from routers where team_id = $1 limit 1", [team?.id]);
const router400 = await best(() => repo.downtimeHours(one?.id ?? "", new Date(now - DAYS * DAY_MS), end));
console.log(
  JSON.stringify({
    database: db.url ? "postgresql" : "pglite",
    routers: ROUTERS,
    days: DAYS,
    downtime_rows: n,
    seed_s: Math.round(seeded / 1000),
    fleet_report_400_days_ms: fleet400,
    fleet_report_30_days_ms: fleet30,
    one_router_400_days_ms: router400,
  }),
);
await db.close();
