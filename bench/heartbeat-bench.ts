/**
 * `npm run bench:heartbeat`: the heartbeat daemon against a no-op `ws` baseline, in one run, on
 * PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres; a fresh database
 * is created and dropped). Defaults finish in a few minutes; `--routers 100000` is the full run.
 *
 * Each measured phase runs `--repeat N` times (default 3; daemon and baseline alternate) and prints
 * min / median / max, so a regression can be told from the noise of a shared machine. Beside
 * throughput and latency (which the load generators disturb, as they share the cores) it prints
 * server CPU time per heartbeat: the server processes' user + system CPU over the heartbeats they
 * answered, daemon vs baseline (the method of `npm run bench`), the figure that repeats best.
 * PostgreSQL CPU per heartbeat comes twice: the bench database's backends over the window, and the
 * same net of the daemon's fixed work (its sweeps, its mark, the coverage record: the backends' CPU a
 * second with the daemon running and no router beating, `--fixed-s` right after each daemon window),
 * which does not grow with the fleet and swamps the cost per heartbeat at the bench's few hundred
 * heartbeats a second.
 *
 * Reports (issues 4, 10 and 14):
 *  1. WebSocket: ack latency p50/p99/p99.9 and CPU per heartbeat at the cadence (N routers every
 *     --interval-ms), daemon vs the no-op `ws` baseline;
 *  2. WebSocket saturation heartbeats/s and CPU per heartbeat, one server process, closed loop;
 *  3. HTTP: N routers POSTing at the cadence over a pool of --http-pool keep-alive connections (as a
 *     load balancer would) to one server process, then saturation on that pool, against a bare
 *     `node:http` baseline (same token check, same parse, same ack); SQL statements/s at N/4 and N;
 *  3. RSS-after-GC slope per connected router;
 *  4. SQL statements/s at N/4 and N routers (pg_stat_database), and the flush vs a hand-written
 *     `pg` UNNEST upsert of the same rows (once);
 *  5. silence 10% of routers, restart the daemon: fault lateness p99, false faults, downtime error (once);
 *  6. reconnect storm (after 1, on the same sockets): every server process restarts; time until all
 *     N routers are back, and faults opened meanwhile (none may: the threshold is 5 minutes).
 *  --alert-rules N: the same with N alert rules on the organization (the alert path must add nothing).
 *  7. with --processes 1,2,4: N HTTP routers at the cadence on 1, 2, 4 daemon processes sharing one
 *     PostgreSQL: the database's CPU and statements per heartbeat as processes are added.
 * Timings are printed, never asserted.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HealthSeriesRepository, HeartbeatsRepository, openDatabase, queryOf, RoutersRepository } from "@fleet/db";
import { HEARTBEAT_NODE_FLAGS } from "@fleet/heartbeat-daemon";
import { downtimeBetween, effectiveLastSeen, hashHeartbeatToken, splitByUtcHour } from "@fleet/shared";
import pg from "pg";
import { seedBenchFleet } from "./lib/bench-fleet.ts";

const here = path.dirname(fileURLToPath(import.meta.url));

// ---- options -------------------------------------------------------------------------------
const argv = process.argv.slice(2);
const opt = (name: string, fallback: number): number => {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const value = Number(argv[i + 1]);
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} needs a number`);
  return value;
};
const ROUTERS = opt("routers", 10_000);
const PER_PROCESS = opt("per-process", 14_000); // under the 20,000 file descriptors of a process
const INTERVAL = opt("interval-ms", 30_000);
const MEASURE_MS = opt("measure-s", INTERVAL / 1000) * 1000;
const SAT_SOCKETS = opt("saturation-sockets", 8_000);
const SAT_MS = opt("saturation-s", 10) * 1000;
const FAULT_ROUTERS = Math.min(ROUTERS, opt("fault-routers", 4_000));
const FAULT_INTERVAL = opt("fault-interval-ms", 1_000);
const FAULT_MISSED = opt("fault-missed", 20);
/** Quiet time before a memory reading, so V8's memory reducer has given back what it will. */
const SETTLE_MS = opt("settle-s", 8) * 1000;
const FLUSH_ROWS = Math.min(ROUTERS, opt("flush-rows", 10_000));
const WORKERS = Math.max(1, Math.ceil(ROUTERS / PER_PROCESS));
const LOADERS = Math.max(1, Math.ceil(ROUTERS / PER_PROCESS));
/** Each measured phase runs this many times (daemon and baseline alternating); min / median / max are printed. */
const REPEAT = Math.max(1, opt("repeat", 3));
/** Keep-alive connections between the load balancer (the load generators) and one server process. */
const HTTP_POOL = Math.max(2, opt("http-pool", 128));
const HTTP_MEASURE_MS = opt("http-measure-s", 15) * 1000;
/** The idle window after each daemon window (`fixedBackendUsPerS`): well inside the fault threshold (10 intervals). */
const FIXED_MS = Math.min(opt("fixed-s", 10) * 1000, 4 * INTERVAL);
const STORM_TIMEOUT_MS = opt("storm-timeout-s", 300) * 1000;
const phasesArg = argv.includes("--phases") ? argv[argv.indexOf("--phases") + 1] : undefined;
/**
 * Which parts to run: 1 (WebSocket cadence: latency, CPU, memory, statements), 2 (WebSocket
 * saturation), 3 (HTTP: cadence and saturation), 4 (flush), 5 (faults), 6 (reconnect storm, after 1).
 */
const processesArg = argv.includes("--processes") ? argv[argv.indexOf("--processes") + 1] : undefined;
/**
 * Phase 7 (`--processes 1,2,4`): N routers POSTing at the cadence to that many daemon processes on
 * one PostgreSQL, one count after the other: the database's CPU and statements per heartbeat should
 * stay flat as processes are added (docs/scale.md). Given alone, it runs only phase 7.
 */
const PROCESS_COUNTS = (processesArg ?? "")
  .split(",")
  .filter((x) => x !== "")
  .map((x) => {
    const n = Number(x);
    if (!Number.isInteger(n) || n < 1) throw new Error("--processes needs counts like 1,2,4");
    return n;
  });
const PHASES = new Set((phasesArg ?? (processesArg ? "7" : "1,2,3,4,5,6,8")).split(","));
// Phase 8 (docs/scale.md "Health samples"): one health sample per 10 heartbeats, as in production
// (300 s / 30 s), whatever --interval-ms the bench runs at.
process.env.RESOURCE_SAMPLE_SECONDS ??= String(Math.max(1, Math.round((INTERVAL * 10) / 1000)));
const STORAGE_ROUTERS = opt("storage-routers", 200);
/**
 * `--health-transports ws|http|ws,http` (default both): the transports phase 8 runs. One of them
 * halves a run at the 30 s cadence (each side of it measures whole 300 s sample periods).
 */
const HEALTH_TRANSPORTS = new Set(
  (argv.includes("--health-transports") ? argv[argv.indexOf("--health-transports") + 1] : "ws,http")?.split(","),
);
const SAMPLE_MS = Number(process.env.RESOURCE_SAMPLE_SECONDS) * 1000;
/**
 * Phase 8 measures whole sample periods: every router's period closes at the same boundary (the
 * clock's, as in production), so a shorter window holds all of a boundary's sample writes or none
 * of them, not their share per heartbeat. Set for both sides (plain and with health) of phase 8.
 */
let wholePeriods = false;
const wholePeriodsOf = (ms: number) => (SAMPLE_MS > 0 ? Math.ceil(ms / SAMPLE_MS) * SAMPLE_MS : ms);
const measured = (ms: number) => (wholePeriods ? wholePeriodsOf(ms) : ms);
const BASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const RUN = Date.now().toString(36);

const log = (line: string) => process.stderr.write(`${line}\n`);

// ---- child processes -----------------------------------------------------------------------
interface Child {
  proc: ChildProcess;
  call<T = Record<string, unknown>>(message: object): Promise<T>;
}

/** BENCH_CPU_PROF=<dir>: server processes write a V8 CPU profile there when they exit (bench/cpuprofile-top.ts reads it). */
const CPU_PROF = process.env.BENCH_CPU_PROF;
const spawn = (file: string, gc: boolean): Child => {
  const profile = CPU_PROF && gc ? ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF}`] : [];
  // BENCH_NODE_ARGS="--trace-gc ...": more flags for the server processes (what the profile does not show).
  const extra = gc ? (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "") : [];
  // The server processes start as production starts the daemon (its flags); the baselines alike.
  const proc = fork(path.join(here, file), [], {
    execArgv: gc ? ["--expose-gc", ...HEARTBEAT_NODE_FLAGS, ...profile, ...extra] : [],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let chain: Promise<unknown> = Promise.resolve();
  return {
    proc,
    call: <T>(message: object) => {
      const run = chain.then(
        () =>
          new Promise<T>((resolve, reject) => {
            proc.once("message", (answer: { ok: boolean; error?: string } & T) => {
              if (answer.ok) resolve(answer);
              else reject(new Error(answer.error));
            });
            proc.send(message);
          }),
      );
      chain = run.catch(() => {});
      return run;
    },
  };
};

const freePort = async (): Promise<number> => {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  server.close();
  return port;
};

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const fmt = (n: number, digits = 1) => n.toFixed(digits);

// ---- database ------------------------------------------------------------------------------
const dbName = `bench_hb_${RUN}`;
const admin = new pg.Client({ connectionString: BASE_URL });
await admin.connect();
await admin.query(`create database "${dbName}"`);
// BENCH_LOG_STATEMENTS=1: the server's log gets every statement on the bench database (without
// parameter values), to count statements by kind and time (needs a superuser; log_statement).
if (process.env.BENCH_LOG_STATEMENTS) {
  await admin.query(`alter database "${dbName}" set log_statement = 'all'`);
  await admin.query(`alter database "${dbName}" set log_parameter_max_length = 0`);
  await admin.query(`alter database "${dbName}" set log_duration = on`);
}
// BENCH_LOG_DURATIONS=1: one log line per statement with its duration (log_min_duration_statement
// = 0); the measured windows' times are printed, and bench/statement-log-summary.ts sums the
// statements of a window by kind from the server's log.
if (process.env.BENCH_LOG_DURATIONS) {
  await admin.query(`alter database "${dbName}" set log_min_duration_statement = 0`);
  await admin.query(`alter database "${dbName}" set log_parameter_max_length = 0`);
}
const url = new URL(BASE_URL);
url.pathname = `/${dbName}`;
const databaseUrl = url.toString();
const setupDb = await openDatabase({ databaseUrl, dataDir: "memory", poolSize: 4 });
await setupDb.migrate();
// Router i has id uuid(i) and token hb_bench_<run>_<i>; the hash is computed by PostgreSQL.
const { organizationId: orgId } = await seedBenchFleet(setupDb, ROUTERS, `bench_${RUN}`);
const routerId = (i: number) => `${i.toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
// `--alert-rules N` (docs/api.md "Alerts and maintenance windows"): the organization has N alert
// rules ("*", every router) over one channel. A heartbeat never touches them (only the offline and
// online audit entries reach the alert outbox), so every figure must read as without them.
const ALERT_RULES = opt("alert-rules", 0);
if (ALERT_RULES > 0) {
  const channelId = crypto.randomUUID();
  await setupDb.query(
    `insert into notification_channels (id, organization_id, name, type, config, created_at, updated_at)
     values ($1, $2, 'bench', 'email', '{"to":["noc@bench.invalid"]}', now(), now())`,
    [channelId, orgId],
  );
  await setupDb.query(
    `with r as (insert into alert_rules (id, organization_id, name, events, routers, created_at)
       select gen_random_uuid(), $1, 'bench ' || i, '["*"]', '{}', now() from generate_series(1, $2::int) as i returning id)
     insert into alert_rule_channels (rule_id, channel_id) select id, $3 from r`,
    [orgId, ALERT_RULES, channelId],
  );
  log(`${ALERT_RULES} alert rules on the organization`);
}
// Production PostgreSQL vacuums by itself (autovacuum is on by default). With autovacuum off (as
// on this repository's test machines) every heartbeat's dead row version and index entries would
// pile up for the whole bench, a cost production never pays and one that grows run after run. The
// bench then does autovacuum's work itself once a minute (autovacuum's default naptime), by
// autovacuum's default rules: a table is vacuumed once its dead rows pass 50 + 20% of its rows (or
// its inserts since the last vacuum 1,000 + 20%), analyzed once its changed rows pass 50 + 10%.
// Its CPU counts in the bench database's backends, as autovacuum's would in the database's. (It
// used to vacuum and analyze the whole database, catalogs included, every minute: 1-1.5 s of CPU
// that autovacuum never spends, which made a 300 s window read 40-60 us per heartbeat.)
const autovacuumOn = (await admin.query<{ autovacuum: string }>("show autovacuum")).rows[0]?.autovacuum === "on";
/**
 * One autovacuum round on a connection of its own, closed after it. A backend reports its
 * transactions to pg_stat_database lazily (while idle, up to 10 s later) and at exit; the
 * connection's exit reports them at once, and the next window starts after it.
 */
const vacuumOnce = async () => {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const pid = (await client.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]?.pid;
  try {
    const due = await client.query<{ name: string; vacuum: boolean; analyze: boolean }>(
      `select format('%I.%I', s.schemaname, s.relname) as name,
              s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0)
                or s.n_ins_since_vacuum > 1000 + 0.2 * greatest(c.reltuples, 0) as vacuum,
              s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0) as analyze
       from pg_stat_user_tables s join pg_class c on c.oid = s.relid`,
    );
    for (const table of due.rows) {
      if (table.vacuum) await client.query(`vacuum ${table.analyze ? "(analyze) " : ""}${table.name}`);
      else if (table.analyze) await client.query(`analyze ${table.name}`);
    }
  } finally {
    await client.end();
  }
  while ((await admin.query("select 1 from pg_stat_activity where pid = $1", [pid])).rowCount) await sleep(10);
};
let vacuuming: Promise<unknown> = Promise.resolve();
const vacuum = () => {
  vacuuming = vacuuming.then(vacuumOnce).catch((error: Error) => log(`vacuum failed: ${error.message}`));
  return vacuuming;
};
const startVacuumer = () => (autovacuumOn ? undefined : setInterval(() => void vacuum(), 60_000));
let vacuumer = startVacuumer();
if (!autovacuumOn) log("autovacuum is off on this server: the bench does its work once a minute, by its rules");
/**
 * Before a measured window: the statistics autovacuum's ANALYZE would have gathered by then (it
 * analyzes a table once a tenth of it changed, and every router's first heartbeat just filled
 * router_liveness). Without them the planner costs the liveness table as it was at the start,
 * empty, and the flush's plan is not the one a running system has. One vacuum at a time (a second
 * one would wait on the first table by table), and the next periodic one a minute later.
 */
const settleStatistics = async () => {
  if (autovacuumOn) return;
  clearInterval(vacuumer);
  await vacuum();
  vacuumer = startVacuumer();
};
log(`database ${dbName}: ${ROUTERS} routers; ${WORKERS} server process(es), ${LOADERS} load process(es)`);

const xacts = async () =>
  Number(
    (await admin.query("select xact_commit + xact_rollback as n from pg_stat_database where datname = $1", [dbName]))
      .rows[0]?.n ?? 0,
  );

// ---- one phase: servers + loaders ----------------------------------------------------------
const startServers = async (
  mode: "daemon" | "baseline",
  count: number,
  port: number,
  intervalMs: number,
  missed: number,
  parallel = false,
) => {
  const servers = Array.from({ length: count }, () => spawn("heartbeat-bench-server.ts", true));
  const start = (s: Child) => s.call({ cmd: "start", mode, port, databaseUrl, intervalMs, missed });
  // In parallel after a restart, so no single process takes the whole storm while its siblings start.
  if (parallel) await Promise.all(servers.map(start));
  else for (const s of servers) await start(s);
  return servers;
};
const rss = async (servers: Child[]) => {
  let total = 0;
  for (const s of servers) total += (await s.call<{ rss: number }>({ cmd: "rss" })).rss;
  return total;
};
/** CPU time (user + system, µs) the server processes have used so far: the figure the shared cores disturb least. */
const cpu = async (servers: Child[]) => {
  const { user, system } = await cpuSplit(servers);
  return user + system;
};
/** User and system CPU (µs) of the server processes so far. */
const cpuSplit = async (servers: Child[]) => {
  let user = 0;
  let system = 0;
  for (const s of servers) {
    const r = await s.call<{ userUs: number; systemUs: number }>({ cmd: "cpu" });
    user += r.userUs;
    system += r.systemUs;
  }
  return { user, system };
};
/**
 * Waits until every daemon process has cached `tokens` tokens (each router's first heartbeat
 * reached it), at most `limitMs`: on a loaded machine the first-time lookups can take several
 * intervals, and a window that still holds them measures a restart, not the cadence. `spread`
 * (WebSocket routers: each socket lands on one process, SO_REUSEPORT decides which): the processes
 * together hold `tokens`. Asking each for its even share instead waited out `limitMs` (300 s at a
 * 30 s interval) in every run, since the kernel never splits the sockets exactly evenly.
 */
const untilTokensCached = async (servers: Child[], tokens: number, limitMs: number, spread = false) => {
  const deadline = Date.now() + limitMs;
  for (;;) {
    let least = Number.POSITIVE_INFINITY;
    let total = 0;
    for (const s of servers) {
      const { stats } = await s.call<{ stats: { tokensCached?: number } }>({ cmd: "stats" });
      least = Math.min(least, stats.tokensCached ?? Number.POSITIVE_INFINITY);
      total += stats.tokensCached ?? Number.POSITIVE_INFINITY;
    }
    const held = spread ? total : least;
    if (held >= tokens) return;
    if (Date.now() > deadline) {
      log(
        `  warm-up: ${spread ? "the daemon processes hold" : "a daemon process holds"} ${held} of ${tokens} tokens after ${limitMs / 1000} s; measuring anyway`,
      );
      return;
    }
    await sleep(500);
  }
};
const closeAll = async (children: Child[]) => {
  await Promise.all(children.map((c) => c.call({ cmd: "close" }).catch(() => {})));
  await Promise.all(children.map((c) => (c.proc.exitCode === null ? once(c.proc, "exit") : undefined)));
};
const slices = (total: number, parts: number) =>
  Array.from(
    { length: parts },
    (_, k) => [Math.floor((k * total) / parts), Math.floor(((k + 1) * total) / parts)] as const,
  );
/** Routers with an open socket, and failed connection attempts so far by cause, over every loader. */
const loaderCounts = async (loaders: Child[]) => {
  let open = 0;
  const failures: Record<string, number> = {};
  for (const l of loaders) {
    const part = await l.call<{ open: number; failures: Record<string, number> }>({ cmd: "counts" });
    open += part.open;
    for (const [cause, n] of Object.entries(part.failures)) failures[cause] = (failures[cause] ?? 0) + n;
  }
  return { open, failures };
};
const openCount = async (loaders: Child[]) => (await loaderCounts(loaders)).open;
const ongoingFaults = async () =>
  Number(
    (await setupDb.query<{ n: number }>("select count(*)::int as n from router_faults where status = 'ongoing'"))[0]
      ?.n ?? 0,
  );

/** The kernel's count of connections dropped because an accept queue was full (Linux; NaN elsewhere). */
const listenOverflows = async () => {
  try {
    const text = await (await import("node:fs/promises")).readFile("/proc/net/netstat", "utf8");
    const [names, values] = text.split("\n").filter((l) => l.startsWith("TcpExt:"));
    const at = names?.split(" ").indexOf("ListenOverflows") ?? -1;
    return Number(values?.split(" ")[at]);
  } catch {
    return Number.NaN;
  }
};

/**
 * CPU time (µs) used so far by the processes named `postgres` on this machine (Linux /proc; NaN
 * elsewhere): the database's share of the heartbeats when it runs on the same cores.
 */
const databaseCpuUs = async () => {
  const { readdir, readFile } = await import("node:fs/promises");
  try {
    let ticks = 0;
    for (const pid of await readdir("/proc")) {
      if (!/^[0-9]+$/.test(pid)) continue;
      const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
      const close = stat.lastIndexOf(")");
      if (close < 0 || !stat.slice(0, close).endsWith("(postgres")) continue;
      const fields = stat.slice(close + 2).split(" ");
      // utime, stime, and cutime, cstime: the postmaster's reaped backends, so a backend that exits
      // between two readings does not take its CPU time with it (fields 14-17 of stat).
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    }
    return (ticks * 1e6) / 100; // USER_HZ is 100 on Linux
  } catch {
    return Number.NaN;
  }
};

/**
 * CPU time (µs) so far of each PostgreSQL backend connected to the bench's database
 * (pg_stat_activity, Linux /proc): the database's cost of the heartbeats without the other work on
 * a shared server (other databases' tests, other clients). Background processes (WAL writer,
 * checkpointer) are not in it; `databaseCpuUs` has them, and everything else the server does. Read
 * from `schedstat` (nanoseconds; the 10 ms ticks of `stat` are too coarse for the few ms a second
 * of the daemon's fixed work, see `fixedBackendUsPerS`), else from `stat`.
 */
const ownBackendCpu = async (): Promise<Map<number, number>> => {
  const { readFile } = await import("node:fs/promises");
  const rows = await admin.query<{ pid: number }>("select pid from pg_stat_activity where datname = $1", [dbName]);
  const us = new Map<number, number>();
  for (const { pid } of rows.rows) {
    const schedstat = await readFile(`/proc/${pid}/schedstat`, "utf8").catch(() => "");
    if (schedstat !== "") {
      us.set(pid, Number(schedstat.split(" ")[0]) / 1000);
      continue;
    }
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    const close = stat.lastIndexOf(")");
    if (close < 0) continue;
    const fields = stat.slice(close + 2).split(" ");
    us.set(pid, ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100);
  }
  return us;
};
/**
 * BENCH_DEBUG: what each of the bench database's backends did in a window (its CPU, in ms, and
 * the last statement it ran, which tells the daemon's pool from the status feed's LISTEN and the
 * bench's own connections).
 */
const backendBreakdown = async (before: Map<number, number>, after: Map<number, number>) => {
  const rows = await admin.query<{ pid: number; query: string; backend_start: Date }>(
    "select pid, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) as query, backend_start from pg_stat_activity where datname = $1",
    [dbName],
  );
  const what = new Map(rows.rows.map((r) => [r.pid, r.query]));
  return [...after]
    .map(([pid, t]) => ({
      pid,
      ms: (t - (before.get(pid) ?? 0)) / 1000,
      new: !before.has(pid),
      last: what.get(pid) ?? "?",
    }))
    .sort((a, b) => b.ms - a.ms);
};
/**
 * BENCH_PGSS=1 (a cluster with pg_stat_statements loaded and created in DATABASE_URL's database):
 * the bench database's statements over each window, by total execution time.
 */
const PGSS = process.env.BENCH_PGSS === "1";
const statementsBreakdown = async (label: string) => {
  const rows = await admin.query<{ calls: string; total_ms: number; rows: string; query: string }>(
    `select calls, total_exec_time as total_ms, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) as query
       from pg_stat_statements s join pg_database d on d.oid = s.dbid
      where d.datname = $1 order by total_exec_time desc limit 20`,
    [dbName],
  );
  log(`    ${label}: statements by total time over the window (pg_stat_statements)`);
  for (const r of rows.rows)
    log(
      `      ${String(r.calls).padStart(7)} calls ${r.total_ms.toFixed(0).padStart(6)} ms ${String(r.rows).padStart(8)} rows  ${r.query}`,
    );
};
/** CPU ticks (user + system) of one process so far (Linux /proc; 0 when unreadable). */
const processTicks = async (pid: number | undefined) => {
  const { readFile } = await import("node:fs/promises");
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return stat === "" ? 0 : Number(fields[11]) + Number(fields[12]);
};
/** The machine's CPU ticks by kind (/proc/stat's first line), for BENCH_DEBUG. */
const machineTicks = async () => {
  const { readFile } = await import("node:fs/promises");
  const [user, nice, system, idle, iowait, irq, softirq, steal] = (await readFile("/proc/stat", "utf8"))
    .split("\n")[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number) as number[];
  return { busy: user! + nice! + system! + irq! + softirq!, idle: idle! + iowait!, steal: steal! };
};
/** Every process's name and CPU ticks so far (Linux /proc), for BENCH_DEBUG's list of who else used the cores. */
const processTable = async () => {
  const { readdir, readFile } = await import("node:fs/promises");
  const table = new Map<number, { name: string; ticks: number }>();
  for (const pid of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^[0-9]+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    const close = stat.lastIndexOf(")");
    if (close < 0) continue;
    const fields = stat.slice(close + 2).split(" ");
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0").join(" ").trim();
    table.set(Number(pid), {
      name: cmdline || stat.slice(stat.indexOf("(") + 1, close),
      ticks: Number(fields[11]) + Number(fields[12]),
    });
  }
  return table;
};
interface CpuShares {
  at: number;
  table: Map<number, { name: string; ticks: number }>;
  server: number;
  loaders: number;
  postgres: number;
  machine: { busy: number; idle: number; steal: number };
}
/** BENCH_DEBUG: where the cores go (server, load generators, every postgres process, the machine). */
const cpuShares = async (servers: Child[], loaders: Child[]): Promise<CpuShares> => {
  let server = 0;
  for (const s of servers) server += await processTicks(s.proc.pid);
  let load = 0;
  for (const l of loaders) load += await processTicks(l.proc.pid);
  return {
    at: Date.now(),
    table: await processTable(),
    server,
    loaders: load,
    postgres: (await databaseCpuUs()) / 1e4,
    machine: await machineTicks(),
  };
};
const describeShares = (a: CpuShares, b: CpuShares) => {
  const seconds = (b.at - a.at) / 1000;
  const cores = (ticks: number) => fmt(ticks / 100 / seconds, 2);
  const busy = b.machine.busy - a.machine.busy;
  const others = busy - (b.server - a.server) - (b.loaders - a.loaders) - (b.postgres - a.postgres);
  const busiest = [...b.table]
    .filter(
      ([pid, p]) => pid !== process.pid && !p.name.includes("bench/heartbeat-bench") && !p.name.startsWith("postgres"),
    )
    .map(([pid, p]) => ({ name: p.name, ticks: p.ticks - (a.table.get(pid)?.ticks ?? 0) }))
    .filter((p) => p.ticks > 0)
    .sort((x, y) => y.ticks - x.ticks)
    .slice(0, 3)
    .map((p) => `${cores(p.ticks)} ${p.name.slice(0, 80)}`)
    .join("; ");
  return `server ${cores(b.server - a.server)}, load generators ${cores(b.loaders - a.loaders)}, postgres ${cores(b.postgres - a.postgres)}, everything else ${cores(others)}, idle ${cores(b.machine.idle - a.machine.idle)}, steal ${cores(b.machine.steal - a.machine.steal)}; busiest others: ${busiest}`;
};
/** µs of CPU the bench database's backends used between two readings (a backend new since `before` counts whole). */
/**
 * The bench database's backends' CPU through a window, read every second until the returned
 * function is called: a backend that exits meanwhile (the pool closes idle connections) keeps what
 * it used until its last reading, instead of dropping out of the sum with all of it.
 */
const watchBackends = () => {
  const seen = new Map<number, number>();
  const read = async () => {
    for (const [pid, t] of await ownBackendCpu()) seen.set(pid, Math.max(t, seen.get(pid) ?? 0));
  };
  let busy = read();
  const timer = setInterval(() => {
    busy = busy.then(read);
  }, 1000);
  return async () => {
    clearInterval(timer);
    await busy;
    await read();
    return seen;
  };
};
const ownBackendUs = (before: Map<number, number>, after: Map<number, number>) => {
  let us = 0;
  for (const [pid, t] of after) us += t - (before.get(pid) ?? 0);
  return us;
};

/**
 * The daemon's fixed work on the database (µs of the bench database's backends' CPU a second): its
 * sweeps, its mark in heartbeat_daemons and the coverage record, which do not grow with the fleet.
 * Read right after a measured window with the daemon still running and no router beating (none is
 * due yet: `--fixed-s` stays well under the fault threshold), once the last flush has landed. At
 * the bench's few hundred heartbeats a second it is a large share of the window's figure; at a real
 * fleet (thousands of heartbeats a second per process) a negligible one.
 */
const fixedBackendUsPerS = async () => {
  await sleep(1_500);
  const before = await ownBackendCpu();
  const until = watchBackends();
  const started = Date.now();
  await sleep(FIXED_MS);
  const after = await until();
  return ownBackendUs(before, after) / ((Date.now() - started) / 1000);
};
/** A window's backend CPU per heartbeat without the daemon's fixed work over its length. */
const netUsPerHb = (windowUs: number, seconds: number, fixedUsPerS: number, heartbeats: number) =>
  (windowUs - fixedUsPerS * seconds) / Math.max(1, heartbeats);

interface PhaseResult {
  p50: number;
  /** PostgreSQL CPU per heartbeat at the cadence: every postgres process on the machine, and the bench database's backends. */
  pgUsPerHb: number;
  pgOwnUsPerHb: number;
  /** The daemon's fixed work on the database, µs a second (`fixedBackendUsPerS`; NaN for the baseline). */
  pgFixedUsPerS: number;
  /** `pgOwnUsPerHb` without the fixed work over the window. */
  pgNetUsPerHb: number;
  p99: number;
  p999: number;
  samples: number;
  rate: number;
  cpuUsPerHb: number;
  slopeBytes: number;
  xactsQuarter: number;
  xactsFull: number;
  /** Reconnect storm: from the restarted servers listening until every router is back (ms). */
  reconnectMs: number;
  /** ... until 99% are back: the last 1% is the loaders' noise (TCP SYN backoff, a busy load generator). */
  reconnect99Ms: number;
  reconnectMissing: number;
  falseFaults: number;
}

const runPhase = async (mode: "daemon" | "baseline"): Promise<PhaseResult> => {
  const port = await freePort();
  let servers = await startServers(mode, WORKERS, port, INTERVAL, 10);
  const wsUrl = `ws://127.0.0.1:${port}/v1/heartbeat`;
  await sleep(1_000);
  const loaders = Array.from({ length: LOADERS }, () => spawn("heartbeat-bench-load.ts", false));
  const parts = slices(ROUTERS, LOADERS);
  const started = Date.now();
  // A quarter first: SQL statements per second at N/4, then at N.
  await Promise.all(
    loaders.map((l, k) => {
      const [from, to] = parts[k] ?? [0, 0];
      return l.call({
        cmd: "connect",
        url: wsUrl,
        runId: RUN,
        from,
        to: from + Math.floor((to - from) / 4),
        perSource: 4_000,
        concurrency: 250,
      });
    }),
  );
  for (const l of loaders) await l.call({ cmd: "cadence", intervalMs: INTERVAL });
  await sleep(Math.min(INTERVAL, 10_000));
  if (mode === "daemon") await settleStatistics(); // no periodic vacuum in the window either
  const q0 = await xacts();
  const qStart = Date.now();
  await sleep(Math.min(INTERVAL, 10_000));
  const xactsQuarter = ((await xacts()) - q0) / ((Date.now() - qStart) / 1000);
  // Memory is compared between N/4 and N connected routers, both warmed up, so what every
  // process pays once (JIT code, pool connections, caches sized at start) stays out of the slope.
  const quarter = parts.reduce((n, [from, to]) => n + Math.floor((to - from) / 4), 0);
  await sleep(SETTLE_MS);
  const rss0 = await rss(servers);
  const results = await Promise.all(
    loaders.map((l, k) => {
      const [from, to] = parts[k] ?? [0, 0];
      return l.call<{ connected: number; failed: number }>({
        cmd: "connect",
        url: wsUrl,
        runId: RUN,
        from: from + Math.floor((to - from) / 4),
        to,
        perSource: 4_000,
        concurrency: 250,
      });
    }),
  );
  const failed = results.reduce((n, r) => n + r.failed, 0);
  log(`  ${mode}: connected ${ROUTERS - failed}/${ROUTERS} in ${fmt((Date.now() - started) / 1000)} s`);
  // Still only the first quarter beats: the same traffic as at rss0, so V8's young generation
  // (sized by allocation rate) is the same in both readings and only the connections differ.
  await sleep(SETTLE_MS);
  const rss1 = await rss(servers);
  for (const l of loaders) await l.call({ cmd: "cadence", intervalMs: INTERVAL });
  // One whole interval before measuring: every router has sent its first heartbeat (a router's
  // first heartbeat flips its pulse and publishes an event, work a steady cadence does not do).
  await sleep(INTERVAL + 2_000);
  if (mode === "daemon") {
    await untilTokensCached(servers, ROUTERS, 10 * INTERVAL, true);
    await settleStatistics();
  }
  for (const srv of servers) await srv.call({ cmd: "stats" }); // resets the event-loop delay histogram
  for (const l of loaders) await l.call({ cmd: "record", on: true });
  const x0 = await xacts();
  const d0 = await databaseCpuUs();
  const o0 = await ownBackendCpu();
  const backendsUntil = watchBackends();
  const split0 = await cpuSplit(servers);
  const c0 = split0.user + split0.system;
  const m0 = Date.now();
  const window0 = new Date().toISOString();
  if (PGSS) await admin.query("select pg_stat_statements_reset()");
  await sleep(measured(MEASURE_MS));
  if (PGSS) await statementsBreakdown(`${mode}${process.env.BENCH_HEALTH ? " with health" : ""}`);
  const split1 = await cpuSplit(servers);
  const c1 = split1.user + split1.system;
  const d1 = await databaseCpuUs();
  const o1 = await backendsUntil();
  const windowS = (Date.now() - m0) / 1000;
  if (process.env.BENCH_DEBUG && mode === "daemon") {
    log(`    ${mode} window ${window0} .. ${new Date().toISOString()}`);
    for (const b of await backendBreakdown(o0, o1)) log(`    backend ${JSON.stringify(b)}`);
  }
  const latencies: number[] = [];
  for (const l of loaders)
    latencies.push(...(await l.call<{ latencies: number[] }>({ cmd: "record", on: false })).latencies);
  const elapsed = (Date.now() - m0) / 1000;
  const xactsFull = ((await xacts()) - x0) / elapsed;
  if (process.env.BENCH_DEBUG) {
    for (const srv of servers) log(`    ${mode} stats: ${JSON.stringify(await srv.call({ cmd: "stats" }))}`);
  }
  let pgFixedUsPerS = Number.NaN;
  if (mode === "daemon") {
    for (const l of loaders) await l.call({ cmd: "cadence", intervalMs: 0 });
    pgFixedUsPerS = await fixedBackendUsPerS();
    for (const l of loaders) await l.call({ cmd: "cadence", intervalMs: INTERVAL });
  }
  const pgNetUsPerHb = netUsPerHb(ownBackendUs(o0, o1), windowS, pgFixedUsPerS, latencies.length);
  const perHb = (us: number) => fmt(us / Math.max(1, latencies.length), 1);
  log(
    `  ${mode}: CPU per heartbeat at the cadence: user ${perHb(split1.user - split0.user)} µs, system ${perHb(split1.system - split0.system)} µs; local PostgreSQL ${perHb(d1 - d0)} µs (the bench database's backends ${perHb(ownBackendUs(o0, o1))} µs, ${fmt(pgNetUsPerHb, 1)} µs net of the daemon's fixed ${fmt(pgFixedUsPerS / 1000, 2)} ms a second)`,
  );
  latencies.sort((a, b) => a - b);

  // Reconnect storm: every server process goes away and comes back on the same port; the routers
  // reconnect on their own (100-600 ms, then every 200-500 ms). Timed from the new servers listening.
  let reconnectMs = Number.NaN;
  let reconnect99Ms = Number.NaN;
  let reconnectMissing = 0;
  let falseFaults = 0;
  if (PHASES.has("6")) {
    const connected = await openCount(loaders);
    const failures0 = (await loaderCounts(loaders)).failures;
    const overflows0 = await listenOverflows();
    for (const l of loaders) await l.call({ cmd: "beat" });
    await sleep(1_500); // written, so every router's last heartbeat is fresh before the restart
    const faults0 = mode === "daemon" ? await ongoingFaults() : 0;
    const down = Date.now();
    await closeAll(servers);
    const stopped = Date.now();
    servers = await startServers(mode, WORKERS, port, INTERVAL, 10, true);
    const up = Date.now();
    if (process.env.BENCH_DEBUG)
      log(`    ${mode} storm: servers stopped in ${stopped - down} ms, started in ${up - stopped} ms`);
    let open = 0;
    const progress: string[] = [];
    while (Date.now() - up < STORM_TIMEOUT_MS) {
      open = await openCount(loaders);
      if (Number.isNaN(reconnect99Ms) && open >= 0.99 * connected) reconnect99Ms = Date.now() - up;
      if (open >= connected) break;
      if (process.env.BENCH_DEBUG && progress.length < Math.floor((Date.now() - up) / 1000))
        progress.push(`${((Date.now() - up) / 1000).toFixed(1)}s:${open}`);
      await sleep(100);
    }
    if (process.env.BENCH_DEBUG) {
      log(`    ${mode} storm: routers back after ${progress.join(" ")}`);
      for (const srv of servers) log(`    ${mode} storm stats: ${JSON.stringify(await srv.call({ cmd: "stats" }))}`);
    }
    reconnectMs = Date.now() - up;
    if (process.env.BENCH_DEBUG) {
      const failures1 = (await loaderCounts(loaders)).failures;
      const during = Object.fromEntries(Object.entries(failures1).map(([k, n]) => [k, n - (failures0[k] ?? 0)]));
      log(
        `    ${mode} storm: failed attempts by cause ${JSON.stringify(during)}, listen queue overflows ${(await listenOverflows()) - overflows0}`,
      );
    }
    reconnectMissing = Math.max(0, connected - open);
    await sleep(2_000); // the reconnect heartbeats are written and a sweep has run
    falseFaults = mode === "daemon" ? (await ongoingFaults()) - faults0 : 0;
    log(
      `  ${mode}: reconnect storm: ${connected - reconnectMissing}/${connected} back in ${fmt(reconnectMs / 1000, 2)} s, ${falseFaults} fault(s) opened`,
    );
  }
  await closeAll(loaders);
  await closeAll(servers);
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    p999: percentile(latencies, 99.9),
    samples: latencies.length,
    rate: latencies.length / elapsed,
    cpuUsPerHb: (c1 - c0) / Math.max(1, latencies.length),
    pgUsPerHb: (d1 - d0) / Math.max(1, latencies.length),
    pgOwnUsPerHb: ownBackendUs(o0, o1) / Math.max(1, latencies.length),
    pgFixedUsPerS,
    pgNetUsPerHb,
    slopeBytes: (rss1 - rss0) / (ROUTERS - quarter),
    xactsQuarter,
    xactsFull,
    reconnectMs,
    reconnect99Ms,
    reconnectMissing,
    falseFaults,
  };
};

interface SaturationResult {
  rate: number;
  cpuUsPerHb: number;
}

const saturation = async (mode: "daemon" | "baseline"): Promise<SaturationResult> => {
  const port = await freePort();
  const servers = await startServers(mode, 1, port, INTERVAL, 10);
  const loaders = [spawn("heartbeat-bench-load.ts", false), spawn("heartbeat-bench-load.ts", false)];
  const sockets = Math.min(SAT_SOCKETS, ROUTERS);
  const parts = slices(sockets, loaders.length);
  await Promise.all(
    loaders.map((l, k) =>
      l.call({
        cmd: "connect",
        url: `ws://127.0.0.1:${port}/v1/heartbeat`,
        runId: RUN,
        from: parts[k]?.[0],
        to: parts[k]?.[1],
        perSource: 4_000,
        concurrency: 250,
      }),
    ),
  );
  await sleep(1_000);
  const c0 = await cpu(servers);
  const counts = await Promise.all(
    loaders.map((l) => l.call<{ acks: number }>({ cmd: "saturate", durationMs: SAT_MS, perSocketHz: 10 })),
  );
  const c1 = await cpu(servers);
  await closeAll(loaders);
  await closeAll(servers);
  const acks = counts.reduce((n, c) => n + c.acks, 0);
  return { rate: acks / (SAT_MS / 1000), cpuUsPerHb: (c1 - c0) / Math.max(1, acks) };
};

// ---- 3: the HTTP path: POST /v1/heartbeat through a load balancer's keep-alive pool ---------
interface HttpResult {
  p50: number;
  p99: number;
  p999: number;
  rate: number;
  errors: number;
  cpuUsPerHb: number;
  xactsQuarter: number;
  xactsFull: number;
  satRate: number;
  satCpuUsPerHb: number;
  pgUsPerHb: number;
  pgOwnUsPerHb: number;
  pgFixedUsPerS: number;
  pgNetUsPerHb: number;
}

const httpPhase = async (mode: "daemon" | "baseline"): Promise<HttpSide> => {
  const port = await freePort();
  const servers = await startServers(mode, 1, port, INTERVAL, 10);
  const url = `http://127.0.0.1:${port}/v1/heartbeat`;
  const loaders = [spawn("heartbeat-bench-load.ts", false), spawn("heartbeat-bench-load.ts", false)];
  const pool = Math.max(1, Math.floor(HTTP_POOL / loaders.length));
  const cadence = async (routers: number) => {
    const parts = slices(routers, loaders.length);
    for (const [k, l] of loaders.entries())
      await l.call({
        cmd: "http-cadence",
        url,
        runId: RUN,
        from: parts[k]?.[0],
        to: parts[k]?.[1],
        intervalMs: INTERVAL,
        pool,
      });
  };
  // N/4 routers, then N: SQL statements per second should not follow the router count. The daemon
  // is measured in its steady state, one interval after each step (every router has been seen, so
  // first-time token lookups are over); the baseline has no state to warm.
  const warm = mode === "daemon" ? INTERVAL + 1_000 : 3_000;
  await cadence(Math.floor(ROUTERS / 4));
  await sleep(warm);
  if (mode === "daemon") await settleStatistics(); // no periodic vacuum in the window either
  const q0 = await xacts();
  const qStart = Date.now();
  await sleep(HTTP_MEASURE_MS);
  const xactsQuarter = ((await xacts()) - q0) / ((Date.now() - qStart) / 1000);
  await cadence(ROUTERS);
  await sleep(warm);
  if (mode === "daemon") {
    await untilTokensCached(servers, ROUTERS, 10 * INTERVAL);
    await settleStatistics();
  }
  for (const l of loaders) await l.call({ cmd: "record", on: true });
  const x0 = await xacts();
  const d0 = await databaseCpuUs();
  const o0 = await ownBackendCpu();
  const backendsUntil = watchBackends();
  const c0 = await cpu(servers);
  const m0 = Date.now();
  const window0 = new Date().toISOString();
  await sleep(measured(HTTP_MEASURE_MS));
  const c1 = await cpu(servers);
  const d1 = await databaseCpuUs();
  const o1 = await backendsUntil();
  const windowS = (Date.now() - m0) / 1000;
  if (process.env.BENCH_DEBUG && mode === "daemon") {
    log(`    ${mode} window ${window0} .. ${new Date().toISOString()}`);
    for (const b of await backendBreakdown(o0, o1)) log(`    backend ${JSON.stringify(b)}`);
    for (const srv of servers) log(`    ${mode} stats: ${JSON.stringify(await srv.call({ cmd: "stats" }))}`);
  }
  const latencies: number[] = [];
  for (const l of loaders)
    latencies.push(...(await l.call<{ latencies: number[] }>({ cmd: "record", on: false })).latencies);
  const elapsed = (Date.now() - m0) / 1000;
  const xactsFull = ((await xacts()) - x0) / elapsed;
  let errors = 0;
  for (const l of loaders) errors += (await l.call<{ errors: number }>({ cmd: "http-stop" })).errors;
  const pgFixedUsPerS = mode === "daemon" ? await fixedBackendUsPerS() : Number.NaN;
  const pgNetUsPerHb = netUsPerHb(ownBackendUs(o0, o1), windowS, pgFixedUsPerS, latencies.length);
  if (mode === "daemon")
    log(
      `  ${mode} HTTP: the bench database's backends ${fmt(ownBackendUs(o0, o1) / Math.max(1, latencies.length), 1)} µs per heartbeat, ${fmt(pgNetUsPerHb, 1)} µs net of the daemon's fixed ${fmt(pgFixedUsPerS / 1000, 2)} ms a second`,
    );
  latencies.sort((a, b) => a - b);
  return {
    servers,
    loaders,
    url,
    pool,
    result: {
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      p999: percentile(latencies, 99.9),
      rate: latencies.length / elapsed,
      errors,
      cpuUsPerHb: (c1 - c0) / Math.max(1, latencies.length),
      xactsQuarter,
      xactsFull,
      satRate: Number.NaN,
      satCpuUsPerHb: Number.NaN,
      pgUsPerHb: (d1 - d0) / Math.max(1, latencies.length),
      pgOwnUsPerHb: ownBackendUs(o0, o1) / Math.max(1, latencies.length),
      pgFixedUsPerS,
      pgNetUsPerHb,
    },
  };
};

interface HttpSide {
  servers: Child[];
  loaders: Child[];
  url: string;
  pool: number;
  result: HttpResult;
}

/** Saturation slices per server (--http-saturation-slices): the two servers take turns, ABBA. */
const SAT_SLICES = Math.max(1, opt("http-saturation-slices", 5));

/**
 * HTTP saturation, both servers at once: a closed loop on the pool (each connection posts the next
 * router's heartbeat when the last is answered) against one server process, the baseline and the
 * daemon taking turns in short slices (ABBA: b d d b b d ...), driven by the same load generators.
 * The server is not what limits this loop: on the bench's 2 cores the load generators use about 1.6
 * times the server's CPU per request, and the others' work on a shared machine takes the rest, so
 * heartbeats/s is the server's share of the cores over its CPU per heartbeat. Measured one after
 * the other (10 s of baseline, minutes later 10 s of daemon), the two windows met different loads
 * from the rest of the machine (BENCH_DEBUG: 0.64 vs 1.05 cores, and 1.29 vs 1.02 in another run),
 * and the ratio swung 0.73-1.45 with the same code. Turns of a few seconds put both servers under
 * the same outside load. Each server's CPU counts from the start of its slice to the start of the
 * next one, so what its slice leaves behind (the daemon's last flush) is its own.
 */
const httpSaturation = async (baseline: HttpSide, daemon: HttpSide) => {
  const loaders = daemon.loaders;
  const satRouters = Math.min(SAT_SOCKETS, ROUTERS);
  const parts = slices(satRouters, loaders.length);
  const sliceMs = Math.max(500, Math.round(SAT_MS / SAT_SLICES));
  const sides = { baseline, daemon };
  const tally = {
    baseline: { acks: 0, errors: 0, cpuUs: 0, ms: 0, statuses: {} as Record<string, number>, shares: [] as string[] },
    daemon: { acks: 0, errors: 0, cpuUs: 0, ms: 0, statuses: {} as Record<string, number>, shares: [] as string[] },
  };
  const order: Array<"baseline" | "daemon"> = [];
  for (let k = 0; k < SAT_SLICES; k++)
    order.push(...(k % 2 === 0 ? (["baseline", "daemon"] as const) : (["daemon", "baseline"] as const)));
  await sleep(1_000);
  let open: { mode: "baseline" | "daemon"; c0: number; split0?: CpuShares } | undefined;
  const closeSlice = async () => {
    if (!open) return;
    const side = sides[open.mode];
    const t = tally[open.mode];
    t.cpuUs += (await cpu(side.servers)) - open.c0;
    if (open.split0) t.shares.push(describeShares(open.split0, await cpuShares(side.servers, loaders)));
    open = undefined;
  };
  for (const mode of order) {
    await closeSlice();
    const side = sides[mode];
    const split0 = process.env.BENCH_DEBUG ? await cpuShares(side.servers, loaders) : undefined;
    open = { mode, c0: await cpu(side.servers), ...(split0 ? { split0 } : {}) };
    const started = Date.now();
    const counts = await Promise.all(
      loaders.map((l, k) =>
        l.call<{ acks: number; errors: number; statuses: Record<string, number> }>({
          cmd: "http-saturate",
          url: side.url,
          runId: RUN,
          from: parts[k]?.[0],
          to: parts[k]?.[1],
          pool: side.pool,
          durationMs: sliceMs,
        }),
      ),
    );
    const t = tally[mode];
    t.ms += Date.now() - started;
    for (const c of counts) {
      t.acks += c.acks;
      t.errors += c.errors;
      for (const [k, n] of Object.entries(c.statuses)) t.statuses[k] = (t.statuses[k] ?? 0) + n;
    }
  }
  await sleep(500);
  await closeSlice();
  for (const mode of ["baseline", "daemon"] as const) {
    const t = tally[mode];
    const r = sides[mode].result;
    r.satRate = t.acks / (t.ms / 1000);
    r.satCpuUsPerHb = t.cpuUs / Math.max(1, t.acks);
    r.errors += t.errors;
    if (process.env.BENCH_DEBUG) {
      log(`  ${mode} HTTP saturation: ${t.acks} acks in ${t.ms} ms, answers by status ${JSON.stringify(t.statuses)}`);
      for (const share of t.shares) log(`    ${mode} slice, cores used: ${share}`);
    }
  }
};

// ---- 7: several daemon processes on one PostgreSQL ------------------------------------------
interface ProcessesResult {
  processes: number;
  rate: number;
  /** Daemon CPU per heartbeat, all processes together (µs). */
  daemonUsPerHb: number;
  /** The bench database's backends, and every postgres process (µs per heartbeat). */
  pgOwnUsPerHb: number;
  pgUsPerHb: number;
  /** Transactions per second, and per 1,000 heartbeats. */
  xacts: number;
  xactsPerKHb: number;
  /** Connections the daemons hold to the bench database. */
  connections: number;
}

const processesPhase = async (processes: number): Promise<ProcessesResult> => {
  const port = await freePort();
  const servers = await startServers("daemon", processes, port, INTERVAL, 10);
  const url = `http://127.0.0.1:${port}/v1/heartbeat`;
  const loaders = [spawn("heartbeat-bench-load.ts", false), spawn("heartbeat-bench-load.ts", false)];
  // A load balancer's pool per process: the same keep-alive connections per process at every count.
  const pool = Math.max(1, Math.floor((HTTP_POOL * processes) / loaders.length));
  const parts = slices(ROUTERS, loaders.length);
  for (const [k, l] of loaders.entries())
    await l.call({
      cmd: "http-cadence",
      url,
      runId: RUN,
      from: parts[k]?.[0],
      to: parts[k]?.[1],
      intervalMs: INTERVAL,
      pool,
    });
  // Every router's first heartbeat flips its pulse, and each process looks a token up the first
  // time that router reaches it (a pooled connection may carry any router to any process, so with
  // P processes a router has reached all of them after about 4P heartbeats): the warm-up lasts 4P
  // intervals, so those one-time lookups are over before measuring (use a short --interval-ms).
  await sleep(INTERVAL * 4 * processes + 2_000);
  await untilTokensCached(servers, ROUTERS, 10 * INTERVAL);
  await settleStatistics();
  for (const l of loaders) await l.call({ cmd: "record", on: true });
  const x0 = await xacts();
  const d0 = await databaseCpuUs();
  const o0 = await ownBackendCpu();
  const c0 = await cpu(servers);
  const m0 = Date.now();
  await sleep(HTTP_MEASURE_MS);
  const c1 = await cpu(servers);
  const o1 = await ownBackendCpu();
  const d1 = await databaseCpuUs();
  const x1 = await xacts();
  const elapsed = (Date.now() - m0) / 1000;
  let acked = 0;
  for (const l of loaders)
    acked += (await l.call<{ latencies: number[] }>({ cmd: "record", on: false })).latencies.length;
  const connections = o1.size;
  for (const l of loaders) await l.call({ cmd: "http-stop" });
  await closeAll(loaders);
  await closeAll(servers);
  const n = Math.max(1, acked);
  return {
    processes,
    rate: acked / elapsed,
    daemonUsPerHb: (c1 - c0) / n,
    pgOwnUsPerHb: ownBackendUs(o0, o1) / n,
    pgUsPerHb: (d1 - d0) / n,
    xacts: (x1 - x0) / elapsed,
    xactsPerKHb: ((x1 - x0) * 1000) / n,
    connections,
  };
};

// ---- 4b: the flush against a hand-written pg UNNEST upsert ---------------------------------
const flushComparison = async () => {
  const repo = new HeartbeatsRepository(setupDb);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const rows = Array.from({ length: FLUSH_ROWS }, (_, i) => ({
    routerId: routerId(i),
    tokenHash: hashHeartbeatToken(`hb_bench_${RUN}_${i}`),
    seenAt: new Date(),
    peer: "127.3.0.1",
    identity: `bench-${i}`,
    serialNumber: `BENCH${i}`,
    softwareVersion: "7.16.2",
    softwareId: "BNCH-0001",
    model: "RB5009UG+S+",
    boardName: "RB5009UG+S+",
    hardwareboard: true,
    uptimeSeconds: 86_400,
    metadata: null,
  }));
  // The least a flush must do in the liveness shape: one UNNEST upsert of the narrow liveness rows
  // (reported facts that did not change write nothing, in ours as here).
  const HAND = `insert into router_liveness as l (router_id, has_pulse, last_seen_at, last_seen_from, uptime_seconds)
    select v.id, true, v.t, v.p, v.u from unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::bigint[]) as v(id, t, p, u)
    on conflict (router_id) do update set has_pulse = true, last_seen_at = excluded.last_seen_at,
      last_seen_from = excluded.last_seen_from, uptime_seconds = excluded.uptime_seconds`;
  const hand = async () => {
    const started = performance.now();
    await client.query(HAND, [
      rows.map((r) => r.routerId),
      rows.map((r) => r.seenAt),
      rows.map((r) => r.peer),
      rows.map((r) => r.uptimeSeconds),
    ]);
    return performance.now() - started;
  };
  const ours = async () => {
    const started = performance.now();
    await repo.applyHeartbeats(rows, INTERVAL + INTERVAL / 2);
    return performance.now() - started;
  };
  const handTimes: number[] = [];
  const ourTimes: number[] = [];
  for (let i = 0; i < 7; i++) {
    handTimes.push(await hand());
    ourTimes.push(await ours());
  }
  await client.end();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  return { rows: FLUSH_ROWS, handMs: median(handTimes), oursMs: median(ourTimes) };
};

// ---- 5: silence 10%, restart the daemon ----------------------------------------------------
const faultsAndRestart = async () => {
  if (FAULT_MISSED * FAULT_INTERVAL < 15_000) {
    log(
      "  note: the threshold ends while every daemon is stopped (about 9 s after the silence); those faults can only open after the restart",
    );
  }
  await setupDb.query("delete from router_liveness");
  await setupDb.query("delete from router_faults");
  await setupDb.query("delete from router_downtime_hours");
  await setupDb.query("delete from heartbeat_coverage");
  const listener = new pg.Client({ connectionString: databaseUrl });
  await listener.connect();
  const heard = new Map<string, { receivedAt: number; createdAt: number }>();
  listener.on("notification", (message) => {
    const receivedAt = Date.now();
    for (const event of JSON.parse(message.payload ?? "[]")) {
      if (event.type === "fault" && event.fault.status === "ongoing" && !heard.has(event.router_id)) {
        heard.set(event.router_id, { receivedAt, createdAt: Date.parse(event.fault.created_at) });
      }
    }
  });
  await listener.query("listen fleet_router_status");

  const workers = Math.max(1, Math.ceil(FAULT_ROUTERS / PER_PROCESS));
  const port = await freePort();
  let servers = await startServers("daemon", workers, port, FAULT_INTERVAL, FAULT_MISSED);
  const loaders = Array.from({ length: Math.max(1, Math.ceil(FAULT_ROUTERS / PER_PROCESS)) }, () =>
    spawn("heartbeat-bench-load.ts", false),
  );
  const parts = slices(FAULT_ROUTERS, loaders.length);
  await Promise.all(
    loaders.map((l, k) =>
      l.call({
        cmd: "connect",
        url: `ws://127.0.0.1:${port}/v1/heartbeat`,
        runId: RUN,
        from: parts[k]?.[0],
        to: parts[k]?.[1],
        perSource: 4_000,
        concurrency: 250,
      }),
    ),
  );
  for (const l of loaders) await l.call({ cmd: "cadence", intervalMs: FAULT_INTERVAL });
  await sleep(3 * FAULT_INTERVAL + 1_000);

  const silencedCount = Math.floor(FAULT_ROUTERS / 10);
  const lastSent = new Map<number, number>();
  for (const l of loaders) {
    const { last } = await l.call<{ last: Record<string, number> }>({ cmd: "silence", from: 0, to: silencedCount });
    for (const [i, t] of Object.entries(last)) lastSent.set(Number(i), t);
  }
  await sleep(2 * FAULT_INTERVAL);
  // Every daemon goes away for longer than the coverage gap, then comes back.
  const down = Date.now();
  await closeAll(servers);
  await sleep(6_000);
  servers = await startServers("daemon", workers, port, FAULT_INTERVAL, FAULT_MISSED);
  log(`  restart: daemons away ${fmt((Date.now() - down) / 1000)} s`);
  const lastSilence = Math.max(...lastSent.values());
  const waitUntil = lastSilence + FAULT_MISSED * FAULT_INTERVAL + 4_000;
  await sleep(Math.max(0, waitUntil - Date.now()));
  await sleep(3 * FAULT_INTERVAL);

  // Faults: who, and how late after the threshold (last heartbeat + MISSED intervals).
  const silencedIds = new Set(Array.from({ length: silencedCount }, (_, i) => routerId(i)));
  const faults = await setupDb.query<{ router_id: string; created_ms: number }>(
    "select router_id, (extract(epoch from created_at) * 1000)::float8 as created_ms from router_faults where status = 'ongoing'",
  );
  // The events carry whole-second timestamps; the rows have the exact ones.
  for (const f of faults) {
    const h = heard.get(f.router_id);
    if (h) h.createdAt = Number(f.created_ms);
  }
  const falseFaults = faults.filter((f) => !silencedIds.has(f.router_id)).length;
  const missing = [...silencedIds].filter((id) => !faults.some((f) => f.router_id === id)).length;
  const lateness = [...heard.entries()]
    .filter(([id]) => silencedIds.has(id))
    .map(([, h]) => h.receivedAt - (h.createdAt - FAULT_INTERVAL + FAULT_MISSED * FAULT_INTERVAL))
    .sort((a, b) => a - b);

  // minutes_down as the API computes it (stored + ongoing), against the truth the bench knows.
  const now = new Date();
  const routersRepo = new RoutersRepository(setupDb);
  const coverage = await routersRepo.coverage();
  const seen = await setupDb.query<{ id: string; ms: number }>(
    "select router_id as id, (extract(epoch from last_seen_at) * 1000)::float8 as ms from router_liveness where last_seen_at is not null",
  );
  const lastSeenById = new Map(seen.map((r) => [r.id, Number(r.ms)]));
  const stored = await setupDb.query<{ router_id: string; s: number }>(
    "select router_id, sum(seconds_down)::int as s from router_downtime_hours group by router_id",
  );
  const storedById = new Map(stored.map((r) => [r.router_id, Number(r.s)]));
  let worstSilenced = 0;
  let worstOthers = 0;
  for (let i = 0; i < FAULT_ROUTERS; i++) {
    const id = routerId(i);
    const seenMs = lastSeenById.get(id);
    let computed = storedById.get(id) ?? 0;
    if (seenMs !== undefined && coverage) {
      const ongoing = downtimeBetween(
        effectiveLastSeen(new Date(seenMs), coverage, coverage.intervalMs),
        now,
        coverage.intervalMs,
      );
      if (ongoing) computed += splitByUtcHour(ongoing).reduce((n, p) => n + p.ms / 1000, 0);
    }
    const sent = lastSent.get(i);
    const truth = sent === undefined ? 0 : Math.max(0, (now.getTime() - (sent + FAULT_INTERVAL)) / 1000);
    const error = Math.abs(computed - truth) / 60;
    if (sent === undefined && error > worstOthers && process.env.BENCH_DEBUG) {
      log(
        `    router ${i}: computed ${fmt(computed)} s, stored ${storedById.get(id) ?? 0} s, last seen ${seenMs === undefined ? "never" : new Date(seenMs).toISOString()}, coverage ${JSON.stringify(coverage)}`,
      );
    }
    if (sent === undefined) worstOthers = Math.max(worstOthers, error);
    else worstSilenced = Math.max(worstSilenced, error);
  }
  await closeAll(loaders);
  await closeAll(servers);
  await listener.end();
  return {
    routers: FAULT_ROUTERS,
    silenced: silencedCount,
    opened: faults.length - falseFaults,
    missing,
    falseFaults,
    lateP50: percentile(lateness, 50),
    lateP99: percentile(lateness, 99),
    lateMax: lateness.at(-1) ?? Number.NaN,
    worstSilencedMinutes: worstSilenced,
    worstOthersMinutes: worstOthers,
  };
};

// ---- run ------------------------------------------------------------------------------------
const median = (xs: readonly number[]) => {
  const sorted = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};
/** "min / median / max" of the runs, and the spread (max - min) / median. */
const mmm = (xs: readonly number[], digits = 1) => {
  const ok = xs.filter((x) => !Number.isNaN(x));
  if (ok.length === 0) return "-";
  const med = median(ok);
  if (ok.length === 1) return fmt(med, digits);
  const spread = med === 0 ? 0 : ((Math.max(...ok) - Math.min(...ok)) / Math.abs(med)) * 100;
  return `${fmt(Math.min(...ok), digits)} / **${fmt(med, digits)}** / ${fmt(Math.max(...ok), digits)} (±${fmt(spread / 2, 0)}%)`;
};
const ratios = (a: readonly number[], b: readonly number[]) => a.map((x, i) => x / (b[i] ?? Number.NaN));
const yes = (ok: boolean) => (ok ? "yes" : "**NO**");
const loadavg = async () =>
  (await import("node:os"))
    .loadavg()
    .map((x) => fmt(x, 1))
    .join(" ");

/**
 * Phase 8's storage and read figures, written the way the daemon writes them: a day of 5-minute
 * samples staged period by period for STORAGE_ROUTERS routers (resources, and 8 interfaces'
 * traffic), measured as the staged partition's size, then compacted the way the health-partitions
 * job does and measured as the compacted partitions' total size (heap, index, TOAST) before and
 * after VACUUM; once per repeat, a day each. The values wander like a router's (a seeded random
 * walk, not a pattern deflate would flatter). Then 400 days of hourly records for one router and
 * the time to read and decode them.
 */
const healthStorage = async () => {
  const series = new HealthSeriesRepository(setupDb);
  const query = queryOf(setupDb);
  const n = Math.min(ROUTERS, STORAGE_ROUTERS);
  const ids = Array.from({ length: n }, (_, i) => routerId(i));
  const ifaces = ["ether1", "ether2", "ether3", "ether4", "ether5", "sfp-sfpplus1", "wg0", "vlan10"];
  let seed = 38;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const walk = (x: number, step: number, lo: number, hi: number) =>
    Math.min(hi, Math.max(lo, x + (random() * 2 - 1) * step));
  const out = {
    routers: n,
    stagedBytes: [] as number[],
    resourceBytes: [] as number[],
    trafficBytes: [] as number[],
    resourceVacuumedBytes: [] as number[],
    trafficVacuumedBytes: [] as number[],
    readMs: [] as number[],
  };
  for (let r = 0; r < REPEAT; r++) {
    const day0 = Date.UTC(2020, 0, 1 + r);
    const day = Math.floor(day0 / 86_400_000);
    const state = ids.map((_, i) => ({ cpu: 5 + (i % 30), mem: 40 + (i % 20), temp: 40 + (i % 7), rtt: 2 + (i % 5) }));
    const rates = ids.map(() => ifaces.map(() => 1e6 * random()));
    for (let p = 0; p < 288; p++) {
      const atMs = day0 + p * 300_000;
      await series.append(query, {
        resourceSamples: ids.map((routerId, i) => {
          const s = state[i] as { cpu: number; mem: number; temp: number; rtt: number };
          s.cpu = walk(s.cpu, 6, 0, 100);
          s.mem = walk(s.mem, 0.6, 10, 95);
          s.temp = walk(s.temp, 0.7, 30, 80);
          s.rtt = walk(s.rtt, 0.8, 0.3, 40);
          return {
            routerId,
            atMs,
            values: {
              cpuLoad: s.cpu,
              memoryUsedPercent: s.mem,
              diskUsedPercent: 50 + (i % 9),
              temperature: s.temp,
              voltage: 24.1,
              pingLossPercent: random() < 0.02 ? 20 : 0,
              pingRttMs: s.rtt,
            },
          };
        }),
        trafficSamples: ids.flatMap((routerId, i) =>
          ifaces.map((name, k) => {
            const row = rates[i] as number[];
            row[k] = walk(row[k] as number, 2e5, 0, 1e8);
            return {
              routerId,
              name,
              atMs,
              rxBps: Math.round(row[k] as number),
              txBps: Math.round((row[k] as number) / 3),
              rxErrors: random() < 0.01 ? 1 : 0,
              txErrors: 0,
            };
          }),
        ),
      });
    }
    const size = async (table: string) =>
      Number(
        (await setupDb.query<{ n: string }>(`select pg_total_relation_size('"${table}_d${day}"')::text as n`))[0]?.n ??
          Number.NaN,
      );
    // The staged day, as the database holds it until the job compacts it (rows inserted once).
    out.stagedBytes.push((await size("router_health_staged")) / n);
    await setupDb.transaction((q) => series.compactDay(q, day));
    out.resourceBytes.push((await size("router_resource_samples")) / n);
    out.trafficBytes.push((await size("router_traffic_samples")) / n);
    await setupDb.query(`vacuum router_resource_samples_d${day}, router_traffic_samples_d${day}`);
    out.resourceVacuumedBytes.push((await size("router_resource_samples")) / n);
    out.trafficVacuumedBytes.push((await size("router_traffic_samples")) / n);
  }
  const start = Date.UTC(2021, 0, 1);
  const values = {
    cpuLoad: 12,
    memoryUsedPercent: 50,
    diskUsedPercent: 40,
    temperature: 41,
    voltage: 24,
    pingLossPercent: 0,
    pingRttMs: 1.5,
  };
  const hours = Array.from({ length: 400 * 24 }, (_, h) => ({
    routerId: routerId(0),
    atMs: start + h * 3_600_000,
    min: values,
    avg: { ...values, cpuLoad: h % 50 },
    max: values,
  }));
  await series.append(query, { resourceHours: hours });
  const readMs = out.readMs;
  for (let i = 0; i < 4; i++) {
    const t0 = performance.now();
    const read = await series.resourceHours(routerId(0), start, start + 400 * 86_400_000);
    if (read.length !== hours.length) throw new Error(`read ${read.length} hours, expected ${hours.length}`);
    if (i > 0) readMs.push(performance.now() - t0); // the first read warms the plan and the cache
  }
  return out;
};

try {
  const load0 = await loadavg();
  const ws = { baseline: [] as PhaseResult[], daemon: [] as PhaseResult[] };
  const sat = { baseline: [] as SaturationResult[], daemon: [] as SaturationResult[] };
  const web = { baseline: [] as HttpResult[], daemon: [] as HttpResult[] };
  for (let r = 1; r <= REPEAT; r++) {
    if (PHASES.has("1")) {
      log(
        `[run ${r}/${REPEAT}] 1. WebSocket cadence: ${ROUTERS} routers every ${INTERVAL / 1000} s (${fmt(ROUTERS / (INTERVAL / 1000), 0)} hb/s), ${MEASURE_MS / 1000} s measured${PHASES.has("6") ? ", then the reconnect storm" : ""}`,
      );
      ws.baseline.push(await runPhase("baseline"));
      ws.daemon.push(await runPhase("daemon"));
      log(`  run ${r} WS: ${JSON.stringify({ baseline: ws.baseline.at(-1), daemon: ws.daemon.at(-1) })}`);
    }
    if (PHASES.has("2")) {
      log(
        `[run ${r}/${REPEAT}] 2. WebSocket saturation: 1 server process, ${Math.min(SAT_SOCKETS, ROUTERS)} sockets at up to 10 Hz, ${SAT_MS / 1000} s`,
      );
      sat.baseline.push(await saturation("baseline"));
      sat.daemon.push(await saturation("daemon"));
      log(`  run ${r} saturation: ${JSON.stringify({ baseline: sat.baseline.at(-1), daemon: sat.daemon.at(-1) })}`);
    }
    if (PHASES.has("3")) {
      log(
        `[run ${r}/${REPEAT}] 3. HTTP: ${ROUTERS} routers POSTing every ${INTERVAL / 1000} s over ${HTTP_POOL} keep-alive connections to 1 server process, then saturation`,
      );
      const baseline = await httpPhase("baseline");
      // The baseline's server stays up for the shared saturation; its load generators are done.
      await closeAll(baseline.loaders);
      const daemon = await httpPhase("daemon");
      await httpSaturation(baseline, daemon);
      await closeAll(daemon.loaders);
      await closeAll([...baseline.servers, ...daemon.servers]);
      web.baseline.push(baseline.result);
      web.daemon.push(daemon.result);
      log(`  run ${r} HTTP: ${JSON.stringify({ baseline: web.baseline.at(-1), daemon: web.daemon.at(-1) })}`);
    }
  }
  const health = {
    wsPlain: [] as PhaseResult[],
    wsHealth: [] as PhaseResult[],
    httpPlain: [] as HttpResult[],
    httpHealth: [] as HttpResult[],
  };
  if (PHASES.has("8")) {
    wholePeriods = true;
    log(
      `phase 8 measures whole sample periods: ${wholePeriodsOf(MEASURE_MS) / 1000} s (WebSocket), ${wholePeriodsOf(HTTP_MEASURE_MS) / 1000} s (HTTP)`,
    );
    for (let r = 1; r <= REPEAT; r++) {
      log(
        `[run ${r}/${REPEAT}] 8. health: the daemon with plain heartbeats, then with resources + 8 interfaces + ping (WebSocket, HTTP)`,
      );
      const withHealth = async <T>(on: boolean, work: () => Promise<T>): Promise<T> => {
        if (on) process.env.BENCH_HEALTH = "1";
        try {
          return await work();
        } finally {
          delete process.env.BENCH_HEALTH;
        }
      };
      if (HEALTH_TRANSPORTS.has("ws")) {
        health.wsPlain.push(await withHealth(false, () => runPhase("daemon")));
        health.wsHealth.push(await withHealth(true, () => runPhase("daemon")));
      }
      for (const on of HEALTH_TRANSPORTS.has("http") ? [false, true] : []) {
        const side = await withHealth(on, () => httpPhase("daemon"));
        await closeAll(side.loaders);
        await closeAll(side.servers);
        (on ? health.httpHealth : health.httpPlain).push(side.result);
      }
      log(`  run ${r} health: ${JSON.stringify({ ws: health.wsHealth.at(-1), http: health.httpHealth.at(-1) })}`);
    }
    wholePeriods = false;
  }
  const healthStore = PHASES.has("8") ? await healthStorage() : undefined;
  const scale = new Map<number, ProcessesResult[]>();
  if (PHASES.has("7")) {
    const counts = PROCESS_COUNTS.length > 0 ? PROCESS_COUNTS : [1, 2, 4];
    for (let r = 1; r <= REPEAT; r++) {
      for (const count of counts) {
        log(
          `[run ${r}/${REPEAT}] 7. ${ROUTERS} HTTP routers every ${INTERVAL / 1000} s on ${count} daemon process(es), one PostgreSQL, ${HTTP_MEASURE_MS / 1000} s measured`,
        );
        const result = await processesPhase(count);
        log(`  ${JSON.stringify(result)}`);
        scale.set(count, [...(scale.get(count) ?? []), result]);
      }
    }
  }
  if (PHASES.has("4")) log(`4. flush of ${FLUSH_ROWS} rows vs a hand-written pg UNNEST upsert`);
  const flush = PHASES.has("4")
    ? await flushComparison()
    : { rows: FLUSH_ROWS, handMs: Number.NaN, oursMs: Number.NaN };
  if (PHASES.has("5"))
    log(
      `5. faults: ${FAULT_ROUTERS} routers every ${FAULT_INTERVAL / 1000} s, threshold ${FAULT_MISSED} missed; 10% silenced, then a daemon restart`,
    );
  const faults = PHASES.has("5") ? await faultsAndRestart() : undefined;
  const load1 = await loadavg();

  const pick = <T>(xs: readonly T[], f: (x: T) => number) => xs.map(f);
  const wb = (f: (x: PhaseResult) => number) => pick(ws.baseline, f);
  const wd = (f: (x: PhaseResult) => number) => pick(ws.daemon, f);
  const hb = (f: (x: HttpResult) => number) => pick(web.baseline, f);
  const hd = (f: (x: HttpResult) => number) => pick(web.daemon, f);
  const lines: string[] = [
    "",
    `heartbeat bench: ${ROUTERS} routers, ${WORKERS} WebSocket server process(es), interval ${INTERVAL} ms, ${REPEAT} run(s), node ${process.version}, ${new Date().toISOString()}, load average ${load0} at start, ${load1} at end`,
    "Figures: min / **median** / max of the runs (± half the spread, relative to the median). Ratios are daemon / baseline per run.",
    "",
    "| # | measure | baseline | daemon | ratio daemon / baseline | target (on the median) | met |",
    "|---|---|---|---|---|---|---|",
  ];
  const row = (
    n: string,
    measure: string,
    base: readonly number[],
    ours: readonly number[],
    digits: number,
    target: string,
    met: boolean | undefined,
    ratio = true,
  ) =>
    lines.push(
      `| ${n} | ${measure} | ${base.length ? mmm(base, digits) : "-"} | ${mmm(ours, digits)} | ${ratio ? mmm(ratios(ours, base), 2) : "-"} | ${target} | ${met === undefined ? "-" : yes(met)} |`,
    );
  if (PHASES.has("1")) {
    const bp99 = median(wb((x) => x.p99));
    const limit = Math.max(20, bp99 + 10);
    row(
      "1",
      `WS ack p50 (ms) at ${fmt(median(wd((x) => x.rate)), 0)} hb/s`,
      wb((x) => x.p50),
      wd((x) => x.p50),
      2,
      "-",
      undefined,
    );
    row(
      "1",
      "WS ack p99 (ms)",
      wb((x) => x.p99),
      wd((x) => x.p99),
      2,
      `<= max(20, ${fmt(bp99, 1)} + 10) = ${fmt(limit)}`,
      median(wd((x) => x.p99)) <= limit,
    );
    row(
      "1",
      "WS ack p99.9 (ms)",
      wb((x) => x.p999),
      wd((x) => x.p999),
      2,
      "<= 50",
      median(wd((x) => x.p999)) <= 50,
      true,
    );
    row(
      "1",
      "WS server CPU per heartbeat at the cadence (µs)",
      wb((x) => x.cpuUsPerHb),
      wd((x) => x.cpuUsPerHb),
      1,
      "ratio <= 1.3",
      median(
        ratios(
          wd((x) => x.cpuUsPerHb),
          wb((x) => x.cpuUsPerHb),
        ),
      ) <= 1.3,
    );
    row(
      "1",
      "WS: PostgreSQL CPU per heartbeat at the cadence, bench database's backends (µs)",
      [],
      wd((x) => x.pgOwnUsPerHb),
      1,
      "<= 15",
      median(wd((x) => x.pgOwnUsPerHb)) <= 15,
      false,
    );
    row(
      "1",
      "WS: PostgreSQL CPU per heartbeat at the cadence, every postgres process (µs; shared server)",
      [],
      wd((x) => x.pgUsPerHb),
      1,
      "-",
      undefined,
      false,
    );
    row(
      "3",
      "RSS after GC per connected router (bytes)",
      wb((x) => x.slopeBytes),
      wd((x) => x.slopeBytes),
      0,
      "ratio <= 1.5",
      median(
        ratios(
          wd((x) => x.slopeBytes),
          wb((x) => x.slopeBytes),
        ),
      ) <= 1.5,
    );
    row(
      "4",
      "WS SQL statements/s at N/4 routers",
      [],
      wd((x) => x.xactsQuarter),
      1,
      "-",
      undefined,
      false,
    );
    row(
      "4",
      "WS SQL statements/s at N routers",
      [],
      wd((x) => x.xactsFull),
      1,
      "<= 1.5 x (N/4) + 2: flat",
      median(wd((x) => x.xactsFull)) <= median(wd((x) => x.xactsQuarter)) * 1.5 + 2,
      false,
    );
  }
  if (PHASES.has("1") && PHASES.has("6")) {
    const stormRow = (what: string, ms: (x: PhaseResult) => number) =>
      row(
        "6",
        `reconnect storm: ${what} (s)`,
        wb((x) => ms(x) / 1000),
        wd((x) => ms(x) / 1000),
        2,
        "ratio <= 1.2",
        median(ratios(wd(ms), wb(ms))) <= 1.2,
      );
    stormRow(`all ${ROUTERS} back after a restart`, (x) => x.reconnectMs);
    stormRow(`99% of ${ROUTERS} back`, (x) => x.reconnect99Ms);
    row(
      "6",
      "reconnect storm: routers not back / false faults opened",
      wb((x) => x.reconnectMissing),
      wd((x) => x.falseFaults),
      0,
      "0 false faults (threshold 5 min)",
      ws.daemon.every((x) => x.falseFaults === 0 && x.reconnectMissing === 0),
      false,
    );
  }
  if (PHASES.has("2")) {
    const sb = pick(sat.baseline, (x) => x.rate);
    const sd = pick(sat.daemon, (x) => x.rate);
    row(
      "2",
      "WS saturation heartbeats/s, 1 process",
      sb,
      sd,
      0,
      "ratio >= 0.75 (floor 0.6)",
      median(ratios(sd, sb)) >= 0.75,
    );
    const cb = pick(sat.baseline, (x) => x.cpuUsPerHb);
    const cd = pick(sat.daemon, (x) => x.cpuUsPerHb);
    row(
      "2",
      "WS server CPU per heartbeat at saturation (µs)",
      cb,
      cd,
      1,
      "ratio <= 1.3",
      median(ratios(cd, cb)) <= 1.3,
    );
  }
  if (PHASES.has("3")) {
    const bp99 = median(hb((x) => x.p99));
    const limit = Math.max(20, bp99 + 10);
    row(
      "H",
      `HTTP ack p50 (ms) at ${fmt(median(hd((x) => x.rate)), 0)} POST/s`,
      hb((x) => x.p50),
      hd((x) => x.p50),
      2,
      "-",
      undefined,
    );
    row(
      "H",
      "HTTP ack p99 (ms)",
      hb((x) => x.p99),
      hd((x) => x.p99),
      2,
      `<= max(20, ${fmt(bp99, 1)} + 10) = ${fmt(limit)}`,
      median(hd((x) => x.p99)) <= limit,
    );
    row(
      "H",
      "HTTP server CPU per heartbeat at the cadence (µs)",
      hb((x) => x.cpuUsPerHb),
      hd((x) => x.cpuUsPerHb),
      1,
      "ratio <= 1.2",
      median(
        ratios(
          hd((x) => x.cpuUsPerHb),
          hb((x) => x.cpuUsPerHb),
        ),
      ) <= 1.2,
    );
    row(
      "H",
      "HTTP: PostgreSQL CPU per heartbeat at the cadence, bench database's backends (µs)",
      [],
      hd((x) => x.pgOwnUsPerHb),
      1,
      "<= 15",
      median(hd((x) => x.pgOwnUsPerHb)) <= 15,
      false,
    );
    row(
      "H",
      "HTTP: PostgreSQL CPU per heartbeat at the cadence, every postgres process (µs; shared server)",
      [],
      hd((x) => x.pgUsPerHb),
      1,
      "-",
      undefined,
      false,
    );
    row(
      "H",
      "HTTP saturation POST/s, 1 process",
      hb((x) => x.satRate),
      hd((x) => x.satRate),
      0,
      "ratio >= 0.8",
      median(
        ratios(
          hd((x) => x.satRate),
          hb((x) => x.satRate),
        ),
      ) >= 0.8,
    );
    row(
      "H",
      "HTTP server CPU per heartbeat at saturation (µs)",
      hb((x) => x.satCpuUsPerHb),
      hd((x) => x.satCpuUsPerHb),
      1,
      "ratio <= 1.3",
      median(
        ratios(
          hd((x) => x.satCpuUsPerHb),
          hb((x) => x.satCpuUsPerHb),
        ),
      ) <= 1.3,
    );
    row(
      "H",
      "HTTP SQL statements/s at N/4 routers",
      [],
      hd((x) => x.xactsQuarter),
      1,
      "-",
      undefined,
      false,
    );
    row(
      "H",
      "HTTP SQL statements/s at N routers",
      [],
      hd((x) => x.xactsFull),
      1,
      "<= 1.5 x (N/4) + 2: flat",
      median(hd((x) => x.xactsFull)) <= median(hd((x) => x.xactsQuarter)) * 1.5 + 2,
      false,
    );
    row(
      "H",
      "HTTP errors (non-200 or failed requests)",
      hb((x) => x.errors),
      hd((x) => x.errors),
      0,
      "0",
      web.daemon.every((x) => x.errors === 0),
      false,
    );
  }
  if (scale.size > 0) {
    lines.push(
      "",
      `Phase 7: ${ROUTERS} HTTP routers at the cadence, daemon processes on one PostgreSQL (min / **median** / max over ${REPEAT} run(s))`,
      "",
      "| processes | heartbeats/s | daemon CPU per heartbeat (µs, all processes) | PostgreSQL CPU per heartbeat, bench database's backends (µs) | PostgreSQL CPU per heartbeat, every postgres process (µs; shared server) | transactions/s | transactions per 1,000 heartbeats | backends on the bench database (the bench's own included) |",
      "|---|---|---|---|---|---|---|---|",
    );
    for (const [count, results] of scale) {
      const m = (f: (x: ProcessesResult) => number, digits = 1) => mmm(results.map(f), digits);
      lines.push(
        `| ${count} | ${m((x) => x.rate, 0)} | ${m((x) => x.daemonUsPerHb)} | ${m((x) => x.pgOwnUsPerHb)} | ${m((x) => x.pgUsPerHb)} | ${m((x) => x.xacts)} | ${m((x) => x.xactsPerKHb)} | ${m((x) => x.connections, 0)} |`,
      );
    }
  }
  if (PHASES.has("4"))
    lines.push(
      `| 4 | upsert of ${flush.rows} rows (ms, median of 7) | hand-written pg ${fmt(flush.handMs)} | ${fmt(flush.oursMs)} | ${fmt(flush.handMs / flush.oursMs, 2)} (hand / ours) | >= 0.8 | ${yes(flush.handMs / flush.oursMs >= 0.8)} |`,
    );
  if (faults)
    lines.push(
      `| 5 | silence ${faults.silenced}/${faults.routers}, restart: fault lateness p50 / p99 / max (ms) | - | ${fmt(faults.lateP50, 0)} / ${fmt(faults.lateP99, 0)} / ${fmt(faults.lateMax, 0)} | - | p99 <= 1000 | ${yes(faults.lateP99 <= 1000)} |`,
      `| 5 | faults opened / missing / false | - | ${faults.opened} / ${faults.missing} / ${faults.falseFaults} | - | zero false | ${yes(faults.falseFaults === 0)} |`,
      `| 5 | worst minutes_down error, silenced / others (min) | - | ${fmt(faults.worstSilencedMinutes, 3)} / ${fmt(faults.worstOthersMinutes, 3)} | - | <= 1 | ${yes(Math.max(faults.worstSilencedMinutes, faults.worstOthersMinutes) <= 1)} |`,
    );
  if (PHASES.has("8")) {
    const ratio = (a: readonly number[], b: readonly number[]) => mmm(ratios(a, b), 2);
    const wsRatio = median(
      ratios(
        health.wsHealth.map((x) => x.cpuUsPerHb),
        health.wsPlain.map((x) => x.cpuUsPerHb),
      ),
    );
    const httpRatio = median(
      ratios(
        health.httpHealth.map((x) => x.cpuUsPerHb),
        health.httpPlain.map((x) => x.cpuUsPerHb),
      ),
    );
    const both = (runs: Array<PhaseResult | HttpResult>[], pick: (x: PhaseResult | HttpResult) => number) =>
      runs.flatMap((side) => side.map(pick));
    const plain = [health.wsPlain, health.httpPlain];
    const withIt = [health.wsHealth, health.httpHealth];
    const pg = both(withIt, (x) => x.pgNetUsPerHb);
    lines.push(
      "",
      `Phase 8: health (docs/api.md "Health"): resources + 8 interfaces + ping in every heartbeat vs plain heartbeats in the same run; RESOURCE_SAMPLE_SECONDS=${process.env.RESOURCE_SAMPLE_SECONDS} (one sample per 10 heartbeats), each window whole sample periods (${wholePeriodsOf(MEASURE_MS) / 1000} s WebSocket, ${wholePeriodsOf(HTTP_MEASURE_MS) / 1000} s HTTP). min / **median** / max of ${REPEAT} run(s).`,
      "",
      "| measure | plain | with health | ratio | target | met |",
      "|---|---|---|---|---|---|",
      `| daemon CPU per heartbeat, WebSocket (µs) | ${mmm(health.wsPlain.map((x) => x.cpuUsPerHb))} | ${mmm(health.wsHealth.map((x) => x.cpuUsPerHb))} | ${ratio(
        health.wsHealth.map((x) => x.cpuUsPerHb),
        health.wsPlain.map((x) => x.cpuUsPerHb),
      )} | <= 1.3x | ${yes(wsRatio <= 1.3)} |`,
      `| daemon CPU per heartbeat, HTTP (µs) | ${mmm(health.httpPlain.map((x) => x.cpuUsPerHb))} | ${mmm(health.httpHealth.map((x) => x.cpuUsPerHb))} | ${ratio(
        health.httpHealth.map((x) => x.cpuUsPerHb),
        health.httpPlain.map((x) => x.cpuUsPerHb),
      )} | <= 1.3x | ${yes(httpRatio <= 1.3)} |`,
      `| PostgreSQL CPU per heartbeat, bench database's backends, samples and rollups included, the daemon's fixed work too (µs; WS and HTTP runs) | ${mmm(both(plain, (x) => x.pgOwnUsPerHb))} | ${mmm(both(withIt, (x) => x.pgOwnUsPerHb))} | - | - | - |`,
      `| the daemon's fixed work: its backends' CPU with no router beating (ms a second) | ${mmm(
        both(plain, (x) => x.pgFixedUsPerS / 1000),
        2,
      )} | ${mmm(
        both(withIt, (x) => x.pgFixedUsPerS / 1000),
        2,
      )} | - | - | - |`,
      `| PostgreSQL CPU per heartbeat net of that fixed work, samples and rollups included (µs) | ${mmm(both(plain, (x) => x.pgNetUsPerHb))} | ${mmm(pg)} | - | <= 20 | ${yes(median(pg) <= 20)} |`,
    );
    if (healthStore)
      lines.push(
        `| storage per router per day, 5-minute resource samples, compacted (bytes; ${healthStore.routers} routers, 288 samples each, before VACUUM) | - | ${mmm(healthStore.resourceBytes, 0)} | - | <= 1024 | ${yes(median(healthStore.resourceBytes) <= 1024)} |`,
        `| the same after VACUUM (bytes) | - | ${mmm(healthStore.resourceVacuumedBytes, 0)} | - | <= 1024 | ${yes(median(healthStore.resourceVacuumedBytes) <= 1024)} |`,
        `| storage per router per day, 5-minute traffic of 8 interfaces, compacted (bytes, before / after VACUUM) | - | ${mmm(healthStore.trafficBytes, 0)} / ${mmm(healthStore.trafficVacuumedBytes, 0)} | - | - | - |`,
        `| a day staged before its compaction, resources and 8 interfaces (bytes per router; dropped by the compaction) | - | ${mmm(healthStore.stagedBytes, 0)} | - | - | - |`,
        `| 400-day hourly series of one router, read and decoded (ms) | - | ${mmm(healthStore.readMs, 2)} | - | < 50 | ${yes(median(healthStore.readMs) < 50)} |`,
      );
  }
  lines.push("");
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  clearInterval(vacuumer);
  await setupDb.close();
  if (!argv.includes("--keep-db")) await admin.query(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
}
