/**
 * `npm run bench:fleet-page -- [--routers 10000] [--repeat 3]`: the console's fleet page on a team of
 * `--routers` routers (issue 34: its first page within 1 s in Chromium), against the all-in-one
 * system in this process (PGlite in memory, or a scratch database with DATABASE_URL). The fleet is
 * seeded with one SQL statement (names, identities, models, addresses, health values, a third of
 * it offline), the operator signs in with dev login as the console e2e tests do, and each repeat
 * times, from the action to the first page of rows rendered:
 *   cold  navigation to the fleet page with the browser's cache emptied (the bundle fetched again);
 *   warm  the same navigation with the bundle cached;
 *   search  typing a `q` until the rows shown are the matches;
 *   sort  a click on "Sort by CPU" until the router with the highest CPU load leads.
 * Prints min/median/max over the repeats (target: under 1,000 ms each), the very first load of the
 * freshly started system apart (its server code not yet warm), and for each the share of the
 * `routers.list` request (the browser's resource timing: request sent to answer received).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { startTestSystem } from "@fleet/all-in-one/testing";
import { ensureConsoleBuilt } from "@fleet/console/build";
import { RoutersRepository } from "@fleet/db";
import { createTestDatabase } from "@fleet/db/testing";
import pino from "pino";
import { chromium } from "playwright-core";

const { values } = parseArgs({
  options: {
    routers: { type: "string", default: "10000" },
    repeat: { type: "string", default: "3" },
    /** Print each load's waterfall: every request the page made (start and duration, ms after navigation). */
    detail: { type: "boolean", default: false },
  },
});
const N = Number(values.routers);
const REPEAT = Number(values.repeat);
/** Rows of the fleet's first page (FLEET_PAGE_SIZE in the console) and the table's header row. */
const PAGE_ROWS = Math.min(100, N) + 1;

const built = await ensureConsoleBuilt({ info: (m) => process.stderr.write(`${m}\n`), warn: (m) => console.warn(m) });
if (built === "failed") throw new Error("the console could not be built");
const db = await createTestDatabase();
const config = loadAllInOneConfig({
  PORT: "0",
  HEARTBEAT_PORT: "0",
  STRIPE_EMULATOR_PORT: "0",
  DATA_DIR: "memory",
  LOG_LEVEL: "silent",
  AUTH_DEV_LOGIN: "true",
  JWT_SECRET: `bench-${crypto.randomUUID()}`,
  RATE_LIMIT_PER_MINUTE: "1000000",
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "1000000",
  ENTRY_POINT_PORTS: "63920-63929",
  TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
  BACKUP_INTERVAL_HOURS: "0",
  // The seeded routers send no heartbeats: nothing may mark them offline while the bench runs.
  MISSED_HEARTBEATS: "1000",
});
const system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });
const base = system.api.url;

// The operator's organization and team: dev login makes them (the browser signs in the same way below).
const email = `bench-${crypto.randomUUID()}@example.com`;
const login = await fetch(`${base}/v1/auth/dev-login`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ email }),
});
const { organization_id: organizationId, team_id: teamId } = (await login.json()) as {
  organization_id: string;
  team_id: string;
};

const seeded = performance.now();
// One statement: routers, their liveness (a third offline) and their latest health values.
await db.query(
  `with r as (
     insert into routers (id, organization_id, team_id, name, identity, serial_number, model, software_version,
       heartbeat_token_hash, created_at)
     select gen_random_uuid(), $1::uuid, $2::uuid, 'site-' || md5(i::text), 'gw-' || i, 'SN' || i, 'RB5009UG+S+',
       '7.16.2', md5('hb' || i) || md5(i::text), now()
     from generate_series(1, $3::int) i returning id
   )
   insert into router_liveness (router_id, has_pulse, last_seen_at, last_seen_from, health_reported_at, cpu_load,
     memory_used_percent, temperature)
   select id, random() > 0.33, now() - random() * interval '1 hour', '203.0.113.' || (1 + floor(random() * 250))::int,
     now(), (random() * 90)::real, (random() * 90)::real, (30 + random() * 40)::real
   from r`,
  [organizationId, teamId, N],
);
// The hottest router, which a CPU sort must put first.
await db.query(
  `update router_liveness set cpu_load = 100 where router_id = (
     select id from routers where team_id = $1 and identity = 'gw-7')`,
  [teamId],
);
// What autovacuum does soon after such a load (PostgreSQL), and PGlite's 10-minute schedule:
// without statistics the planner misjudges the tables.
if (db.url) await db.query("analyze routers, router_liveness");
else await new RoutersRepository(db).refreshPlannerStatistics();
process.stderr.write(`seeded ${N} routers in ${Math.round(performance.now() - seeded)} ms\n`);

const profile = mkdtempSync(path.join(tmpdir(), "fleet-page-bench-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
  viewport: { width: 1280, height: 900 },
});
const page = context.pages()[0] ?? (await context.newPage());
const problems: string[] = [];
page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
const cdp = await context.newCDPSession(page);

await page.goto(`${base}/console/`);
await page.getByRole("textbox", { name: "Email" }).fill(email);
await page.getByRole("button", { name: "Sign in with email" }).click();
await page.getByRole("heading", { name: "Fleet", level: 1 }).waitFor();

/** The page's table body rows and their row headers, as the browser sees them (expressions run in the page). */
const ROWS = `document.querySelectorAll('table[aria-label="Routers"] tbody tr')`;
const NAMES = `[...document.querySelectorAll('table[aria-label="Routers"] tbody th[scope=row]')].map((th) => th.textContent)`;
const fullPage = `${ROWS}.length >= ${PAGE_ROWS - 1}`;
/**
 * Timing inside the page, on its own clock, before any of its scripts runs: `benchWatch(check, since)`
 * resolves at the first frame after a DOM change makes `check()` true, with the time since `since()`
 * (0: the navigation's start). Each navigation to the console starts watching for the first page of
 * rows (`benchLoaded`); a click or input marks `benchActionAt` (the start of a search or sort).
 */
await context.addInitScript(`{
  window.benchWatch = (check, since) => new Promise((resolve) => {
    const test = () => {
      if (!check()) return;
      observer.disconnect();
      requestAnimationFrame(() => resolve(performance.now() - since()));
    };
    const observer = new MutationObserver(test);
    observer.observe(document, { childList: true, subtree: true, characterData: true });
    test();
  });
  if (location.pathname.startsWith("/console")) window.benchLoaded = window.benchWatch(() => ${fullPage}, () => 0);
  for (const type of ["input", "click"])
    document.addEventListener(type, () => { window.benchActionAt ??= performance.now(); }, { capture: true });
}`);
/** Runs `action` and answers how long after it (ms) `check` (an expression) first held in a frame. */
const renderedAfterAction = async (check: string, action: () => Promise<unknown>): Promise<number> => {
  await page.evaluate("window.benchActionAt = undefined");
  const watched = page.evaluate(`window.benchWatch(() => ${check}, () => window.benchActionAt)`) as Promise<number>;
  await action();
  return watched;
};
/** The latest `routers.list` request's duration in the page (ms), from the browser's resource timing. */
const listRequestMs = async (): Promise<number> => {
  const durations = (await page.evaluate(
    "performance.getEntriesByType('resource').filter((e) => e.name.includes('routers.list')).map((e) => e.duration)",
  )) as number[];
  return durations.at(-1) ?? Number.NaN;
};
const listMs = { cold: [] as number[], warm: [] as number[], search: [] as number[], sort: [] as number[] };
/** Runs `measure`, then keeps what the page's own `routers.list` request took (and the waterfall with --detail). */
const timed = async (what: keyof typeof listMs, measure: () => Promise<number>): Promise<number> => {
  const ms = await measure();
  listMs[what].push(await listRequestMs());
  if (values.detail) {
    const entries = (await page.evaluate(
      "performance.getEntriesByType('resource').map((e) => e.startTime.toFixed(0) + '+' + e.duration.toFixed(0) + ' ' + e.name.replace(location.origin, '').slice(0, 90))",
    )) as string[];
    process.stderr.write(`${what} ${ms.toFixed(0)} ms:\n  ${entries.join("\n  ")}\n`);
  }
  return ms;
};
/** Navigation to the fleet page until its first page of rows is in the DOM, on the page's clock. */
const open = (cold: boolean) =>
  timed(cold ? "cold" : "warm", async () => {
    if (cold) await cdp.send("Network.clearBrowserCache");
    // A blank page first, so the fleet page is rendered from nothing.
    await page.goto("about:blank");
    await page.goto(`${base}/console/`, { waitUntil: "commit" });
    return (await page.evaluate("window.benchLoaded")) as number;
  });

// How busy the fresh system still is (its first sweeps of the new fleet): one probe just before.
const probeStarted = performance.now();
await fetch(`${base}/healthz`);
const probeMs = performance.now() - probeStarted;
const firstLoad = await open(true);
const firstList = listMs.cold.pop() ?? Number.NaN;
const times = { cold: [] as number[], warm: [] as number[], search: [] as number[], sort: [] as number[] };
const search = page.getByRole("searchbox", { name: "Search routers" });
for (let run = 1; run <= REPEAT; run++) {
  times.cold.push(await open(true));
  times.warm.push(await open(false));
  // A search matching 111 routers (gw-12, gw-120..129, gw-1200..1299 for run 1).
  const q = `gw-${run}2`;
  times.search.push(
    await timed("search", () =>
      renderedAfterAction(`${NAMES}.length > 0 && ${NAMES}.every((name) => name.includes(${JSON.stringify(q)}))`, () =>
        search.fill(q),
      ),
    ),
  );
  await renderedAfterAction(`${fullPage} && !${NAMES}.every((name) => name.includes(${JSON.stringify(q)}))`, () =>
    search.fill(""),
  );
  times.sort.push(
    await timed("sort", () =>
      renderedAfterAction(`${NAMES}[0] === "gw-7" && ${fullPage}`, () =>
        page.getByRole("button", { name: "Sort by CPU, highest first" }).click(),
      ),
    ),
  );
  process.stderr.write(
    `run ${run}/${REPEAT}: cold ${times.cold.at(-1)?.toFixed(0)} ms, warm ${times.warm.at(-1)?.toFixed(0)} ms, search ${times.search.at(-1)?.toFixed(0)} ms, sort ${times.sort.at(-1)?.toFixed(0)} ms\n`,
  );
}

const range = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const median = s[Math.floor((s.length - 1) / 2)] ?? Number.NaN;
  return `min ${(s[0] ?? Number.NaN).toFixed(0)}  median ${median.toFixed(0)}  max ${(s.at(-1) ?? Number.NaN).toFixed(0)}`;
};
process.stdout.write(
  [
    `fleet page, ${N} routers in one team, ${db.url ? "PostgreSQL" : "PGlite"}, ${REPEAT} repeats (ms; target < 1000)`,
    `  first load of the fresh system: ${firstLoad.toFixed(0)}   (routers.list request ${firstList.toFixed(0)}; /healthz just before ${probeMs.toFixed(0)})`,
    `  first page, cold cache: ${range(times.cold)}   (routers.list request ${range(listMs.cold)})`,
    `  first page, warm cache: ${range(times.warm)}   (routers.list request ${range(listMs.warm)})`,
    `  search (q):             ${range(times.search)}   (routers.list request ${range(listMs.search)})`,
    `  sort by CPU (click):    ${range(times.sort)}   (routers.list request ${range(listMs.sort)})`,
    ...(problems.length > 0 ? [`page problems: ${problems.join("; ")}`] : []),
    "",
  ].join("\n"),
);
await context.close();
rmSync(profile, { recursive: true, force: true });
await system.close();
await db.close();
process.exit(0);
