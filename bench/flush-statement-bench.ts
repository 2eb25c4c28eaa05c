/**
 * `node bench/flush-statement-bench.ts [--routers 20000] [--rows 200] [--flushes 300] [--rounds 3] [--plan generic|custom]`:
 * the heartbeat flush at the steady cadence on its own PostgreSQL backend (DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres; a fresh database is created and dropped). Every
 * router has a liveness row and reports what `routers` holds, as at the cadence; each flush carries
 * `--rows` heartbeats of consecutive routers. Prints the backend's CPU per heartbeat (Linux /proc),
 * min / median / max over the rounds, the plan of one flush, and the liveness table's HOT share.
 * The cost of the statement alone: the daemon bench (heartbeat-bench.ts) adds the sweep and more.
 */
import { readFile } from "node:fs/promises";
import { HeartbeatsRepository, type HeartbeatWrite, openDatabase } from "@fleet/db";
import { hashHeartbeatToken } from "@fleet/shared";
import pg from "pg";
import { seedBenchFleet } from "./lib/bench-fleet.ts";

const argv = process.argv.slice(2);
const opt = (name: string, fallback: number): number => {
  const i = argv.indexOf(`--${name}`);
  return i < 0 ? fallback : Number(argv[i + 1]);
};
const ROUTERS = opt("routers", 20_000);
const ROWS = opt("rows", 200);
const FLUSHES = opt("flushes", 300);
const ROUNDS = opt("rounds", 3);
/**
 * `--spread 1`: a flush carries routers spread over the table (a stride through it), as in a fleet
 * whose routers beat at phases unrelated to their ids; default 0: consecutive routers, as the daemon
 * bench's load generators send them (each flush then updates whole pages of router_liveness).
 */
const SPREAD = opt("spread", 0) > 0;
// A stride coprime with the router count walks every router once per pass, far apart.
const STRIDE = (() => {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  let s = Math.floor(ROUTERS * 0.618) | 1;
  while (gcd(s, ROUTERS) !== 1) s += 2;
  return s;
})();
/**
 * `--plan generic` or `--plan custom`: the backend's plan_cache_mode (force_generic_plan /
 * force_custom_plan) for the prepared flush. Default: PostgreSQL's choice (auto), which takes the
 * generic plan after five executions whenever its estimate is the lower one. A generic plan cannot
 * see how many rows a flush carries (it assumes 10), so a statement must be cheap under both.
 */
const PLAN = argv.includes("--plan") ? argv[argv.indexOf("--plan") + 1] : undefined;
if (PLAN !== undefined && PLAN !== "generic" && PLAN !== "custom") throw new Error("--plan takes generic or custom");
const BASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const RUN = Date.now().toString(36);
const dbName = `bench_flush_${RUN}`;

const admin = new pg.Client({ connectionString: BASE_URL });
await admin.connect();
await admin.query(`create database "${dbName}"`);
const url = new URL(BASE_URL);
url.pathname = `/${dbName}`;
const db = await openDatabase({ databaseUrl: url.toString(), dataDir: "memory", poolSize: 1 });
try {
  await db.migrate();
  await seedBenchFleet(db, ROUTERS, `flush_${RUN}`);
  const hashes = Array.from({ length: ROUTERS }, (_, i) => hashHeartbeatToken(`hb_flush_${RUN}_${i}`));
  const write = (i: number, at: number): HeartbeatWrite => ({
    routerId: `${i.toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`,
    tokenHash: hashes[i] as string,
    seenAt: new Date(at),
    peer: "127.3.0.1",
    identity: `bench-${i}`,
    serialNumber: `BENCH${i}`,
    softwareVersion: "7.16.2",
    softwareId: "BNCH-0001",
    model: "RB5009UG+S+",
    boardName: "RB5009UG+S+",
    hardwareboard: true,
    uptimeSeconds: 86_400 + Math.floor(at / 1000),
  });
  const repo = new HeartbeatsRepository(db);
  const quietGapMs = 60_000;
  // First heartbeats: every router gets its liveness row and its reported facts.
  for (let i = 0; i < ROUTERS; i += 5_000) {
    const batch = Array.from({ length: Math.min(5_000, ROUTERS - i) }, (_, k) => write(i + k, Date.now()));
    await repo.applyHeartbeats(batch, quietGapMs);
  }
  await db.query("vacuum (analyze)");
  const pid = (await db.query<{ pid: number }>("select pg_backend_pid() as pid"))[0]?.pid;
  const ticks = async () => {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  };
  let next = 0;
  const flush = async () => {
    const at = Date.now();
    const batch = Array.from({ length: ROWS }, () => {
      const w = write(next, at);
      next = (next + (SPREAD ? STRIDE : 1)) % ROUTERS;
      return w;
    });
    const applied = await repo.applyHeartbeats(batch, quietGapMs);
    if (applied.gone.length + applied.replaced.length > 0) throw new Error("a heartbeat was not written");
  };
  if (PLAN) await db.query(`set plan_cache_mode = force_${PLAN}_plan`);
  for (let k = 0; k < 50; k++) await flush(); // the prepared statements' plans settle
  const hot0 = await db.query<{ upd: string; hot: string }>(
    "select n_tup_upd as upd, n_tup_hot_upd as hot from pg_stat_user_tables where relname = 'router_liveness'",
  );
  const perRow: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = await ticks();
    for (let k = 0; k < FLUSHES; k++) await flush();
    const t1 = await ticks();
    perRow.push(((t1 - t0) * 10_000) / (FLUSHES * ROWS));
    // Dead row versions are pruned by the next update on the page or by vacuum (autovacuum on a server).
    await db.query("vacuum router_liveness");
  }
  if (argv.includes("--explain")) {
    // The plan of one flush with its timings, in the server's log (auto_explain, superuser only).
    await db.query("load 'auto_explain'");
    await db.query("set auto_explain.log_min_duration = 0");
    await db.query("set auto_explain.log_analyze = on");
    await db.query("set auto_explain.log_buffers = on");
    await flush();
    await db.query("set auto_explain.log_min_duration = -1");
    process.stdout.write("the plan of one flush is in the server's log (auto_explain)\n");
  }
  // Which plans the prepared flush ran with (PostgreSQL's choice under `auto`): a custom plan is
  // planned again at every execution's bind.
  const plans = await db.query<{ name: string; generic_plans: string; custom_plans: string }>(
    "select name, generic_plans, custom_plans from pg_prepared_statements where name like 'heartbeats_%'",
  );
  for (const p of plans)
    process.stdout.write(`${p.name}: ${p.generic_plans} generic, ${p.custom_plans} custom plans\n`);
  await new Promise((resolve) => setTimeout(resolve, 1_500)); // the backend's statistics are flushed
  const hot1 = await db.query<{ upd: string; hot: string }>(
    "select n_tup_upd as upd, n_tup_hot_upd as hot from pg_stat_user_tables where relname = 'router_liveness'",
  );
  const updates = Number(hot1[0]?.upd) - Number(hot0[0]?.upd);
  const hotShare = (Number(hot1[0]?.hot) - Number(hot0[0]?.hot)) / Math.max(1, updates);
  // The plan of one flush, run with the statement's own text (EXPLAIN cannot take a prepared name).
  const sorted = [...perRow].sort((a, b) => a - b);
  const f = (n: number | undefined) => (n ?? Number.NaN).toFixed(1);
  process.stdout.write(
    `flush of ${ROWS} ${SPREAD ? "spread" : "consecutive"} heartbeats, ${ROUTERS} routers, ${PLAN ?? "auto"} plan, ${FLUSHES} flushes x ${ROUNDS} rounds: PostgreSQL backend CPU per heartbeat ${f(sorted[0])} / **${f(sorted[Math.floor(sorted.length / 2)])}** / ${f(sorted[sorted.length - 1])} µs; HOT updates of router_liveness ${(hotShare * 100).toFixed(0)}% of ${updates}\n`,
  );
} finally {
  await db.close();
  await admin.query(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
}
