/**
 * `npm run bench`: GET /v1/account through REST and tRPC (real token verification, real
 * PostgreSQL) against a bare Express + pg baseline measured in the same run. Prints ratios, and the
 * frameworks' own floor (framework-floor-server.ts: tRPC's adapter and trpc-to-openapi over bare Express).
 * Each round measures every target once; ratios pair a target with the same round's baseline and are
 * printed as min / median / max over the rounds. One more line takes the API's idle CPU (its timers,
 * measured before the rounds) out of its runs: what the requests themselves cost, whatever the throughput.
 * Options: --duration-ms N (per round, default 5000), --concurrency N (default 32), --rounds N (default 3),
 * --log-level L (the API's LOG_LEVEL, default info: one log line per request, as in production),
 * --only <target> (one target, measured after a warm-up run).
 * Then `GET /api/routers?limit=100` on a team of --fleet-routers routers (default 10,000), the first
 * page and one deep in the cursor (docs/api.md "Listing a fleet"; target p99 < 50 ms), at
 * --fleet-concurrency connections (default 4: latency, not throughput); `--only fleet` runs it alone
 * (`--only fleet --pglite`: the API on its embedded PGlite in a scratch DATA_DIR instead of PostgreSQL). `BENCH_NODE_ARGS=--cpu-prof` profiles
 * both servers (`node bench/cpuprofile-top.ts <file>` summarises a profile). Server CPU is user + system time
 * (/proc); the system share is printed too, since loopback socket sends also run the receiving side.
 */
import { createSecretKey } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { openDatabase, RoutersRepository } from "@fleet/db";
import { makeAccount, makeUser } from "@fleet/db/testing";
import { SignJWT } from "jose";
import pg from "pg";
import { formatRow, type LoadResult, runLoad } from "./lib/load.ts";
import { cpuTimesMs, freePort, startProcess, stopProcess } from "./lib/processes.ts";

const { values } = parseArgs({
  options: {
    "duration-ms": { type: "string", default: "5000" },
    concurrency: { type: "string", default: "32" },
    rounds: { type: "string", default: "3" },
    only: { type: "string" },
    // The API as it runs in production writes one log line per request (docs/operations.md).
    "log-level": { type: "string", default: "info" },
    "fleet-routers": { type: "string", default: "10000" },
    "fleet-concurrency": { type: "string", default: "4" },
    pglite: { type: "boolean", default: false },
  },
});
const pglite = values.pglite === true;
if (pglite && values.only !== "fleet") throw new Error("--pglite measures the fleet only: add --only fleet");
const fleetRouters = Number(values["fleet-routers"]);
const fleetConcurrency = Number(values["fleet-concurrency"]);
const durationMs = Number(values["duration-ms"]);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);

const baseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const dbName = `bench_${Date.now().toString(36)}`;
const dbUrl = new URL(baseUrl);
dbUrl.pathname = `/${dbName}`;
/** With --pglite: the API's DATA_DIR, seeded here and then opened by the API process alone. */
const dataDir = pglite ? mkdtempSync(path.join(tmpdir(), "fleet-bench-")) : undefined;
if (!dataDir) {
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`create database "${dbName}"`);
  await admin.end();
}

const db = await openDatabase(dataDir ? { dataDir } : { databaseUrl: dbUrl.toString(), dataDir: "memory" });
await db.migrate();
const user = await makeUser(db);
await makeAccount(db, user.organizationId, { name: "Bench Networks", country: "DE" });
// The fleet: routers with names, identities, models and addresses, a third of them offline.
await db.query(
  `with r as (
     insert into routers (id, organization_id, team_id, name, identity, serial_number, model, heartbeat_token_hash, created_at)
     select gen_random_uuid(), $1, $2, 'site-' || md5(i::text), 'gw-' || i, 'SN' || i, 'RB5009UG+S+', md5('hb' || i) || md5(i::text), now()
     from generate_series(1, $3::int) i returning id
   )
   insert into router_liveness (router_id, has_pulse, last_seen_at, last_seen_from)
   select id, random() > 0.33, now() - random() * interval '1 hour', '203.0.113.' || (1 + floor(random() * 250))::int from r`,
  [user.organizationId, user.teamId, fleetRouters],
);
// What autovacuum does soon after such a load: without statistics the planner misjudges the table.
// PGlite has no autovacuum: the API's 10-minute schedule does it there.
if (!dataDir) await db.query("analyze routers, router_liveness");
else await new RoutersRepository(db).refreshPlannerStatistics();
await db.close();

const secret = `bench-secret-${crypto.randomUUID()}`;
const token = await new SignJWT({ id: user.organizationId, scope: "account:read routers:read" })
  .setProtectedHeader({ alg: "HS256" })
  .setSubject(user.userId)
  .setExpirationTime("2h")
  .sign(createSecretKey(Buffer.from(secret)));

const root = path.resolve(import.meta.dirname, "..");
const apiPort = await freePort();
const basePort = await freePort();
const api = await startProcess(
  path.join(root, "apps/api/src/main.ts"),
  {
    ...(dataDir ? {} : { DATABASE_URL: dbUrl.toString() }),
    PORT: String(apiPort),
    JWT_SECRET: secret,
    LOG_LEVEL: values["log-level"],
    STRIPE_EMULATOR_PORT: "0",
    DATA_DIR: dataDir ?? "memory",
    // The bench is one credential at full speed: the per-credential limit would answer 429.
    RATE_LIMIT_PER_MINUTE: "1000000",
  },
  `http://127.0.0.1:${apiPort}/healthz`,
);
// With --pglite only the API runs (on its own data directory): no baseline, no floor.
const baseline = dataDir
  ? undefined
  : await startProcess(
      path.join(root, "bench/account-baseline-server.ts"),
      { DATABASE_URL: dbUrl.toString(), PORT: String(basePort), JWT_SECRET: secret },
      `http://127.0.0.1:${basePort}/healthz`,
    );
// The frameworks alone (no database, auth or logging): what tRPC's adapter and trpc-to-openapi's
// handler cost over a bare Express answer, so the ratios above can be read against it.
const floorPort = await freePort();
const floor = dataDir
  ? undefined
  : await startProcess(
      path.join(root, "bench/framework-floor-server.ts"),
      { PORT: String(floorPort) },
      `http://127.0.0.1:${floorPort}/healthz`,
    );

const auth = { authorization: `Bearer ${token}` };
// An API key of the same organization (docs/api.md "Authentication"): verified through its own
// cache, it must cost no more than the cached JWT path.
const writer = await new SignJWT({ id: user.organizationId, scope: "account:read account:write" })
  .setProtectedHeader({ alg: "HS256" })
  .setSubject(user.userId)
  .setExpirationTime("2h")
  .sign(createSecretKey(Buffer.from(secret)));
const keyAnswer = await fetch(`http://127.0.0.1:${apiPort}/v1/api-keys`, {
  method: "POST",
  headers: { authorization: `Bearer ${writer}`, "content-type": "application/json" },
  body: JSON.stringify({ name: "bench", scopes: ["account:read"] }),
});
if (keyAnswer.status !== 201) throw new Error(`creating the bench API key answered ${keyAnswer.status}`);
const apiKey = ((await keyAnswer.json()) as { key: string }).key;
const keyAuth = { authorization: `Bearer ${apiKey}` };
/** Runs a load and adds the server's CPU time per answered request (less sensitive to a busy machine). */
const stats = dataDir ? undefined : new pg.Client({ connectionString: dbUrl.toString() });
await stats?.connect();
/** Transactions committed in the bench database so far (each autocommitted statement is one). */
const commits = async (): Promise<number> => {
  if (!stats) return Number.NaN;
  // The statistics snapshot is per transaction: clear it so each reading is fresh.
  await stats.query("select pg_stat_clear_snapshot()");
  const { rows } = await stats.query<{ n: string }>(
    "select xact_commit::text as n from pg_stat_database where datname = current_database()",
  );
  return Number(rows[0]?.n ?? Number.NaN);
};
/**
 * CPU a server spends per second with no request (the API's job engine, lease and limiter timers),
 * over `ms`: spread over the requests of a run, it would make a slower round look dearer per request.
 */
const idleCpuMsPerSecond = async (pid: number | undefined, ms = 4000): Promise<number> => {
  const before = await cpuTimesMs(pid);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  return ((await cpuTimesMs(pid)).total - before.total) / ((performance.now() - started) / 1000);
};
const measured = async (pid: number | undefined, run: () => Promise<LoadResult>) => {
  const started = performance.now();
  const before = await cpuTimesMs(pid);
  const ioBefore = await syscalls(pid);
  const commitsBefore = await commits();
  const result = await run();
  const after = await cpuTimesMs(pid);
  const ioAfter = await syscalls(pid);
  const per = (n: number) => n / Math.max(1, result.requests);
  return {
    ...result,
    cpuUsPerRequest: per((after.total - before.total) * 1000),
    /** Milliseconds the run lasted: with the idle rate, the CPU the server would have spent anyway. */
    elapsedMs: performance.now() - started,
    // The kernel's share is mostly the loopback sockets (each send also runs the receiver's side).
    systemUsPerRequest: per((after.system - before.system) * 1000),
    userUsPerRequest: per((after.user - before.user) * 1000),
    readsPerRequest: per(ioAfter.reads - ioBefore.reads),
    writesPerRequest: per(ioAfter.writes - ioBefore.writes),
    // PostgreSQL's statistics reach pg_stat_database within about half a second: close enough over a round.
    commitsPerRequest: per((await commits()) - commitsBefore),
  };
};
/** Read and write system calls a process has made so far (/proc/<pid>/io, Linux): socket I/O per request. */
async function syscalls(pid: number | undefined): Promise<{ reads: number; writes: number }> {
  if (pid === undefined) return { reads: Number.NaN, writes: Number.NaN };
  const { readFile } = await import("node:fs/promises");
  const text = await readFile(`/proc/${pid}/io`, "utf8").catch(() => "");
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  return { reads: field("syscr"), writes: field("syscw") };
}
const floorLoad = (label: string, path: string) =>
  measured(floor?.pid, () =>
    runLoad(label, `http://127.0.0.1:${floorPort}${path}`, {}, { concurrency, durationMs, expectStatus: 200 }),
  );
const targets = {
  baseline: () =>
    measured(baseline?.pid, () =>
      runLoad("baseline (express+pg)", `http://127.0.0.1:${basePort}/v1/account`, auth, {
        concurrency,
        durationMs,
        expectStatus: 200,
      }),
    ),
  rest: () =>
    measured(api.pid, () =>
      runLoad("REST /v1/account", `http://127.0.0.1:${apiPort}/v1/account`, auth, {
        concurrency,
        durationMs,
        expectStatus: 200,
      }),
    ),
  trpc: () =>
    measured(api.pid, () =>
      runLoad("tRPC account.get", `http://127.0.0.1:${apiPort}/trpc/account.get`, auth, {
        concurrency,
        durationMs,
        expectStatus: 200,
      }),
    ),
  "floor-bare": () => floorLoad("floor: bare Express", "/bare"),
  "floor-trpc": () => floorLoad("floor: tRPC adapter", "/trpc/account.get"),
  "floor-rest": () => floorLoad("floor: trpc-to-openapi", "/v1/account"),
  apikey: () =>
    measured(api.pid, () =>
      runLoad("REST /v1/account (API key)", `http://127.0.0.1:${apiPort}/v1/account`, keyAuth, {
        concurrency,
        durationMs,
        expectStatus: 200,
      }),
    ),
};
type Measured = LoadResult & {
  cpuUsPerRequest: number;
  elapsedMs: number;
  systemUsPerRequest: number;
  userUsPerRequest: number;
  readsPerRequest: number;
  writesPerRequest: number;
  commitsPerRequest: number;
};
/** One result line: load figures, then the server's CPU and socket system calls per request. */
const report = (result: Measured) =>
  `${formatRow(result)}   server CPU ${result.cpuUsPerRequest.toFixed(0)} µs/request (system ${result.systemUsPerRequest.toFixed(0)})   syscalls ${result.readsPerRequest.toFixed(2)} r + ${result.writesPerRequest.toFixed(2)} w /request   SQL transactions ${result.commitsPerRequest.toFixed(2)} /request`;

/** `GET /api/routers?limit=100`, first page and deep page, each a warm-up and then `rounds` measured runs. */
async function runFleet() {
  const page = (cursor?: string) =>
    `http://127.0.0.1:${apiPort}/api/routers?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
  // The cursor after 90 pages: 9,000 routers in.
  let cursor: string | undefined;
  for (let i = 0; i < Math.floor((fleetRouters * 0.9) / 100); i++) {
    const answer = (await (await fetch(page(cursor), { headers: auth })).json()) as { next_cursor: string | null };
    cursor = answer.next_cursor ?? undefined;
  }
  const options = { concurrency: fleetConcurrency, durationMs, expectStatus: 200 };
  console.log(
    `\nGET /api/routers?limit=100 on ${fleetRouters} routers (${dataDir ? "PGlite" : "PostgreSQL"}), ${fleetConcurrency} connections (target p99 < 50 ms)`,
  );
  for (const [label, url] of [
    ["first page", page()],
    ["deep page (9,000 in)", page(cursor)],
    // Orders no index serves (docs/api.md "Listing a fleet"), and a search.
    ["last_seen, first page", `${page()}&sort=last_seen`],
    ["q=gw-12, first page", `${page()}&q=gw-12`],
  ] as const) {
    await runLoad(label, url, auth, options);
    for (let round = 0; round < rounds; round++)
      console.log(`  ${report(await measured(api.pid, () => runLoad(label, url, auth, options)))}`);
  }
}

try {
  // Warm-up round: JIT, connection pools, token cache.
  if (values.only === "fleet") await runFleet();
  else if (values.only) {
    const run = targets[values.only as keyof typeof targets];
    await run();
    const result = await run();
    console.log(report(result));
    process.exitCode = 0;
  } else {
    await runAll();
    await runFleet();
  }
} finally {
  await stopProcess(api);
  if (baseline) await stopProcess(baseline);
  if (floor) await stopProcess(floor);
  await stats?.end();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  else {
    const cleanup = new pg.Client({ connectionString: baseUrl });
    await cleanup.connect();
    await cleanup.query(`drop database if exists "${dbName}" with (force)`);
    await cleanup.end();
  }
}

async function runAll() {
  for (const run of Object.values(targets)) await run();
  const apiIdle = await idleCpuMsPerSecond(api.pid);
  // Every round measures the targets one after the other, so each ratio pairs a target with the
  // baseline measured moments before it: on a shared machine the load changes between rounds, and
  // a ratio of two rounds measured apart says more about the machine than about the API.
  const all: Record<string, Measured[]> = {};
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of Object.entries(targets)) {
      const result = await run();
      all[name] = [...(all[name] ?? []), result];
    }
  }
  const of = (name: string) => all[name] ?? [];
  const spread = (values: number[]) => {
    const sorted = [...values].sort((x, y) => x - y);
    const median = sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
    return `${(sorted[0] ?? Number.NaN).toFixed(2)} / ${median.toFixed(2)} / ${(sorted.at(-1) ?? Number.NaN).toFixed(2)}`;
  };
  const ratios = (name: string, key: "cpuUsPerRequest" | "userUsPerRequest" | "rps" | "p99", over = "baseline") =>
    of(name).map((x, i) => x[key] / ((of(over)[i] as Measured)[key] || Number.NaN));
  console.log(`\nGET /v1/account, ${concurrency} connections, ${rounds} rounds of ${durationMs} ms\n`);
  for (let round = 0; round < rounds; round++) {
    console.log(`round ${round + 1}`);
    for (const name of Object.keys(targets)) console.log(`  ${report(of(name)[round] as Measured)}`);
  }
  const line = (name: string, target: string, throughput: number) =>
    `${name.padEnd(6)} CPU/request ${spread(ratios(target, "cpuUsPerRequest"))}x baseline (target <= 1.5; user CPU alone ${spread(ratios(target, "userUsPerRequest"))}x)   throughput ${spread(ratios(target, "rps"))} of baseline (target >= ${throughput})   p99 ${spread(ratios(target, "p99"))}x baseline (target <= 2)`;
  console.log("\nRatios to the same round's baseline, min / median / max over the rounds:");
  console.log(`${line("REST", "rest", 0.65)}\n${line("tRPC", "trpc", 0.6)}`);
  console.log(
    `Framework floor (no database, auth or logging), CPU/request over bare Express: tRPC adapter ${spread(ratios("floor-trpc", "cpuUsPerRequest", "floor-bare"))}x, trpc-to-openapi ${spread(ratios("floor-rest", "cpuUsPerRequest", "floor-bare"))}x`,
  );
  // The API's own cost with each framework's floor (over bare Express, same round) added to the baseline:
  // the share of the ratios above that the API's code, not the framework as shipped, accounts for.
  const overFloor = (name: string, floor: string) =>
    of(name).map(
      (x, i) =>
        x.cpuUsPerRequest /
        ((of("baseline")[i] as Measured).cpuUsPerRequest +
          (of(floor)[i] as Measured).cpuUsPerRequest -
          (of("floor-bare")[i] as Measured).cpuUsPerRequest),
    );
  console.log(
    `CPU/request over baseline + that framework's floor: REST ${spread(overFloor("rest", "floor-rest"))}x, tRPC ${spread(overFloor("trpc", "floor-trpc"))}x`,
  );
  // The same, with the API's idle CPU (measured before the rounds) taken out of its runs: what the
  // requests themselves cost, whatever the round's throughput.
  const net = (x: Measured) => x.cpuUsPerRequest - (apiIdle * x.elapsedMs) / Math.max(1, x.requests);
  const netOverFloor = (name: string, floor: string) =>
    of(name).map(
      (x, i) =>
        net(x) /
        ((of("baseline")[i] as Measured).cpuUsPerRequest +
          (of(floor)[i] as Measured).cpuUsPerRequest -
          (of("floor-bare")[i] as Measured).cpuUsPerRequest),
    );
  const netOverBaseline = (name: string) =>
    of(name).map((x, i) => net(x) / (of("baseline")[i] as Measured).cpuUsPerRequest);
  console.log(
    `Without the API's idle CPU (${apiIdle.toFixed(1)} ms/s): REST ${spread(netOverBaseline("rest"))}x baseline, ${spread(netOverFloor("rest", "floor-rest"))}x baseline + floor; tRPC ${spread(netOverBaseline("trpc"))}x, ${spread(netOverFloor("trpc", "floor-trpc"))}x`,
  );
  console.log(
    `API key vs JWT (REST): CPU/request ${spread(ratios("apikey", "cpuUsPerRequest", "rest"))}x   throughput ${spread(ratios("apikey", "rps", "rest"))} (target: about 1)`,
  );
}
