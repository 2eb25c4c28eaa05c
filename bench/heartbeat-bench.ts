/**
 * `npm run bench:heartbeat`: the heartbeat daemon against a no-op `ws` baseline, in one run, on
 * PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres; a fresh database
 * is created and dropped). Defaults finish in a few minutes; `--routers 100000` is the full run.
 *
 * Reports (issue 4, "Benchmark"):
 *  1. ack latency p50/p99/p99.9 at the cadence (N routers every --interval-ms), daemon vs baseline;
 *  2. saturation heartbeats/s per process (one server process, closed loop, 10 Hz per socket);
 *  3. RSS-after-GC slope per connected router;
 *  4. SQL statements/s at N/4 and N routers (pg_stat_database), and the flush vs a hand-written
 *     `pg` UNNEST upsert of the same rows;
 *  5. silence 10% of routers, restart the daemon: fault lateness p99, false faults, downtime error.
 * Timings are printed, never asserted.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HeartbeatsRepository, openDatabase, RoutersRepository } from "@fleet/db";
import { downtimeBetween, effectiveLastSeen, splitByUtcHour } from "@fleet/shared";
import pg from "pg";

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
const phasesArg = argv.includes("--phases") ? argv[argv.indexOf("--phases") + 1] : undefined;
/** Which parts to run: 1 (cadence: latency, memory, statements), 2 (saturation), 4 (flush), 5 (faults). */
const PHASES = new Set((phasesArg ?? "1,2,4,5").split(","));
const BASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const RUN = Date.now().toString(36);

const log = (line: string) => process.stderr.write(`${line}\n`);

// ---- child processes -----------------------------------------------------------------------
interface Child {
  proc: ChildProcess;
  call<T = Record<string, unknown>>(message: object): Promise<T>;
}

const spawn = (file: string, gc: boolean): Child => {
  const proc = fork(path.join(here, file), [], {
    execArgv: gc ? ["--expose-gc"] : [],
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
const url = new URL(BASE_URL);
url.pathname = `/${dbName}`;
const databaseUrl = url.toString();
const setupDb = await openDatabase({ databaseUrl, dataDir: "memory", poolSize: 4 });
await setupDb.migrate();
const orgId = crypto.randomUUID();
const teamId = crypto.randomUUID();
await setupDb.query("insert into organizations (id, name, created_at) values (?, 'bench', now())", [orgId]);
await setupDb.query(
  "insert into teams (id, organization_id, name, is_default, created_at) values (?, ?, 'bench', true, now())",
  [teamId, orgId],
);
// Router i has id uuid(i) and token hb_bench_<run>_<i>; the hash is computed by PostgreSQL.
await setupDb.query(
  `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
   select (lpad(to_hex(i), 8, '0') || '-0000-4000-8000-000000000000')::uuid, ?, ?, 'bench ' || i,
     encode(sha256(convert_to('hb_bench_' || ? || '_' || i, 'UTF8')), 'hex'), now() - interval '1 day'
   from generate_series(0, ?) as i`,
  [orgId, teamId, RUN, ROUTERS - 1],
);
const routerId = (i: number) => `${i.toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
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
) => {
  const servers = Array.from({ length: count }, () => spawn("heartbeat-bench-server.ts", true));
  for (const s of servers) await s.call({ cmd: "start", mode, port, databaseUrl, intervalMs, missed });
  return servers;
};
const rss = async (servers: Child[]) => {
  let total = 0;
  for (const s of servers) total += (await s.call<{ rss: number }>({ cmd: "rss" })).rss;
  return total;
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

interface PhaseResult {
  p50: number;
  p99: number;
  p999: number;
  samples: number;
  rate: number;
  slopeBytes: number;
  xactsQuarter: number;
  xactsFull: number;
}

const runPhase = async (mode: "daemon" | "baseline"): Promise<PhaseResult> => {
  const port = await freePort();
  const servers = await startServers(mode, WORKERS, port, INTERVAL, 10);
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
  const q0 = await xacts();
  const qStart = Date.now();
  await sleep(Math.min(INTERVAL, 10_000));
  const xactsQuarter = ((await xacts()) - q0) / ((Date.now() - qStart) / 1000);
  // Memory is compared between N/4 and N connected routers, both warmed up, so what every
  // process pays once (JIT code, pool connections, caches sized at start) stays out of the slope.
  const quarter = parts.reduce((n, [from, to]) => n + Math.floor((to - from) / 4), 0);
  await sleep(SETTLE_MS);
  const rss0 = await rss(servers);
  if (process.env.BENCH_DEBUG) {
    for (const srv of servers)
      log(`    ${mode} memory at N/4: ${JSON.stringify((await srv.call<{ memory: unknown }>({ cmd: "rss" })).memory)}`);
  }
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
  if (process.env.BENCH_DEBUG) {
    for (const srv of servers)
      log(`    ${mode} memory at N: ${JSON.stringify((await srv.call<{ memory: unknown }>({ cmd: "rss" })).memory)}`);
  }
  for (const l of loaders) await l.call({ cmd: "cadence", intervalMs: INTERVAL });
  await sleep(2_000);
  for (const srv of servers) await srv.call({ cmd: "stats" }); // resets the event-loop delay histogram
  for (const l of loaders) await l.call({ cmd: "record", on: true });
  const x0 = await xacts();
  const m0 = Date.now();
  await sleep(MEASURE_MS);
  const latencies: number[] = [];
  for (const l of loaders)
    latencies.push(...(await l.call<{ latencies: number[] }>({ cmd: "record", on: false })).latencies);
  const elapsed = (Date.now() - m0) / 1000;
  const xactsFull = ((await xacts()) - x0) / elapsed;
  if (process.env.BENCH_DEBUG) {
    for (const srv of servers) log(`    ${mode} stats: ${JSON.stringify(await srv.call({ cmd: "stats" }))}`);
  }
  latencies.sort((a, b) => a - b);
  await closeAll(loaders);
  await closeAll(servers);
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    p999: percentile(latencies, 99.9),
    samples: latencies.length,
    rate: latencies.length / elapsed,
    slopeBytes: (rss1 - rss0) / (ROUTERS - quarter),
    xactsQuarter,
    xactsFull,
  };
};

const saturation = async (mode: "daemon" | "baseline"): Promise<number> => {
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
  const counts = await Promise.all(
    loaders.map((l) => l.call<{ acks: number }>({ cmd: "saturate", durationMs: SAT_MS, perSocketHz: 10 })),
  );
  await closeAll(loaders);
  await closeAll(servers);
  return counts.reduce((n, c) => n + c.acks, 0) / (SAT_MS / 1000);
};

// ---- 4b: the flush against a hand-written pg UNNEST upsert ---------------------------------
const flushComparison = async () => {
  const repo = new HeartbeatsRepository(setupDb);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const rows = Array.from({ length: FLUSH_ROWS }, (_, i) => ({
    routerId: routerId(i),
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
    tunnelIp: "127.0.0.2",
    metadata: null,
  }));
  const HAND = `update routers r set has_pulse = true, last_seen_at = v.t, last_seen_from = v.p, identity = v.i, serial_number = v.s,
      software_version = v.sv, software_id = v.si, model = v.m, board_name = v.b, hardwareboard = v.h, uptime_seconds = v.u, tunnel_ip = v.ti
    from unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::boolean[], $11::bigint[], $12::text[])
      as v(id, t, p, i, s, sv, si, m, b, h, u, ti)
    where r.id = v.id`;
  const hand = async () => {
    const started = performance.now();
    await client.query(HAND, [
      rows.map((r) => r.routerId),
      rows.map((r) => r.seenAt),
      rows.map((r) => r.peer),
      rows.map((r) => r.identity),
      rows.map((r) => r.serialNumber),
      rows.map((r) => r.softwareVersion),
      rows.map((r) => r.softwareId),
      rows.map((r) => r.model),
      rows.map((r) => r.boardName),
      rows.map((r) => r.hardwareboard),
      rows.map((r) => r.uptimeSeconds),
      rows.map((r) => r.tunnelIp),
    ]);
    return performance.now() - started;
  };
  const ours = async () => {
    const started = performance.now();
    await repo.applyHeartbeats(rows);
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
  await setupDb.query("update routers set has_pulse = false, last_seen_at = null");
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
    "select id, (extract(epoch from last_seen_at) * 1000)::float8 as ms from routers where last_seen_at is not null",
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
try {
  log(
    `1-4. cadence: ${ROUTERS} routers every ${INTERVAL / 1000} s (${fmt(ROUTERS / (INTERVAL / 1000), 0)} heartbeats/s), ${MEASURE_MS / 1000} s measured`,
  );
  const skipped: PhaseResult = {
    p50: Number.NaN,
    p99: Number.NaN,
    p999: Number.NaN,
    samples: 0,
    rate: Number.NaN,
    slopeBytes: Number.NaN,
    xactsQuarter: Number.NaN,
    xactsFull: Number.NaN,
  };
  const baseline = PHASES.has("1") ? await runPhase("baseline") : skipped;
  const daemon = PHASES.has("1") ? await runPhase("daemon") : skipped;
  if (PHASES.has("2"))
    log(
      `2. saturation: 1 server process, ${Math.min(SAT_SOCKETS, ROUTERS)} sockets at up to 10 Hz each, ${SAT_MS / 1000} s`,
    );
  const satBaseline = PHASES.has("2") ? await saturation("baseline") : Number.NaN;
  const satDaemon = PHASES.has("2") ? await saturation("daemon") : Number.NaN;
  if (PHASES.has("4")) log(`4. flush of ${FLUSH_ROWS} rows vs a hand-written pg UNNEST upsert`);
  const flush = PHASES.has("4")
    ? await flushComparison()
    : { rows: FLUSH_ROWS, handMs: Number.NaN, oursMs: Number.NaN };
  if (PHASES.has("5"))
    log(
      `5. faults: ${FAULT_ROUTERS} routers every ${FAULT_INTERVAL / 1000} s, threshold ${FAULT_MISSED} missed; 10% silenced, then a daemon restart`,
    );
  const faults = PHASES.has("5")
    ? await faultsAndRestart()
    : {
        routers: 0,
        silenced: 0,
        opened: 0,
        missing: 0,
        falseFaults: 0,
        lateP50: Number.NaN,
        lateP99: Number.NaN,
        lateMax: Number.NaN,
        worstSilencedMinutes: Number.NaN,
        worstOthersMinutes: Number.NaN,
      };

  const lines = [
    "",
    `heartbeat bench: ${ROUTERS} routers, ${WORKERS} daemon process(es), interval ${INTERVAL} ms, node ${process.version}, ${new Date().toISOString()}`,
    "",
    "| # | measure | baseline (no-op ws) | daemon | ratio / target |",
    "|---|---|---|---|---|",
    `| 1 | ack latency p50 / p99 / p99.9 (ms) at ${fmt(daemon.rate, 0)} hb/s | ${fmt(baseline.p50, 2)} / ${fmt(baseline.p99, 2)} / ${fmt(baseline.p999, 2)} | ${fmt(daemon.p50, 2)} / ${fmt(daemon.p99, 2)} / ${fmt(daemon.p999, 2)} | p99 <= ${fmt(Math.max(20, baseline.p99 + 10))}: ${daemon.p99 <= Math.max(20, baseline.p99 + 10) ? "yes" : "NO"}; p99.9 <= 50: ${daemon.p999 <= 50 ? "yes" : "NO"} |`,
    `| 2 | saturation heartbeats/s per process | ${fmt(satBaseline, 0)} | ${fmt(satDaemon, 0)} | ${fmt(satDaemon / satBaseline, 2)} (>= 0.75, floor 0.6) |`,
    `| 3 | RSS after GC per connected router (bytes) | ${fmt(baseline.slopeBytes, 0)} | ${fmt(daemon.slopeBytes, 0)} | ${fmt(daemon.slopeBytes / baseline.slopeBytes, 2)} (<= 1.5) |`,
    `| 4 | SQL statements/s at N/4 -> N routers | - | ${fmt(daemon.xactsQuarter)} -> ${fmt(daemon.xactsFull)} | flat: ${daemon.xactsFull <= daemon.xactsQuarter * 1.5 + 2 ? "yes" : "NO"} |`,
    `| 4 | upsert of ${flush.rows} rows (ms, median of 7) | hand-written pg ${fmt(flush.handMs)} | ${fmt(flush.oursMs)} | ${fmt(flush.handMs / flush.oursMs, 2)} (>= 0.8) |`,
    `| 5 | silence ${faults.silenced}/${faults.routers}, restart: fault lateness p50 / p99 / max (ms) | - | ${fmt(faults.lateP50, 0)} / ${fmt(faults.lateP99, 0)} / ${fmt(faults.lateMax, 0)} | p99 <= 1000: ${faults.lateP99 <= 1000 ? "yes" : "NO"} |`,
    `| 5 | faults opened / missing / false | - | ${faults.opened} / ${faults.missing} / ${faults.falseFaults} | zero false: ${faults.falseFaults === 0 ? "yes" : "NO"} |`,
    `| 5 | worst minutes_down error, silenced / others (min) | - | ${fmt(faults.worstSilencedMinutes, 3)} / ${fmt(faults.worstOthersMinutes, 3)} | <= 1 |`,
    "",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  await setupDb.close();
  if (!argv.includes("--keep-db")) await admin.query(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
}
