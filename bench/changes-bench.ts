/**
 * `npm run bench:changes -- [--routers 100] [--wave 50] [--interval-ms 5000] [--runs 3]`: fleet changes
 * (docs/routeros.md "The guard") on N adopted simulated routers in waves of `--wave` with 0 s
 * between waves, against the all-in-one system in this process (PGlite in memory, or a scratch
 * database with DATABASE_URL). Every router runs the same script; the simulator times what is the
 * router's: the SSH commands it runs and the wait from the script's end to its next heartbeat.
 * Prints per router (p50, p95, max): the step's duration, the router's time, the system's own
 * overhead (duration minus both), and the guard's confirmation delay (script end to the step's
 * result) in heartbeat intervals. Targets (issue 39): overhead under 100 ms, confirmation within 2
 * intervals, the whole change limited by the routers. `--routers 1000 --wave 50` is the issue's size;
 * `--concurrency K` runs K router jobs at once in the one agent (the system runs 4 per agent);
 * `--change-concurrency K` the further change steps (TUNNEL_CHANGE_CONCURRENCY, 64); `--start-concurrency K`
 * how many of them log in and run their script at once (TUNNEL_CHANGE_START_CONCURRENCY, 4).
 * `--profile <file>` / `--profile-routers <file>`: CPU profiles of the system's / the routers' process.
 */
import { fork } from "node:child_process";
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { startTestSystem } from "@fleet/all-in-one/testing";
import { createTestDatabase } from "@fleet/db/testing";
import { FleetApi } from "@fleet/router-simulator/fleet-api";
import pino from "pino";
import type { EnrolledRouter, FromRouters, ToRouters } from "./changes-bench-routers.ts";

const { values } = parseArgs({
  options: {
    routers: { type: "string", default: "100" },
    wave: { type: "string", default: "50" },
    "interval-ms": { type: "string", default: "5000" },
    /** Router jobs one agent runs at once (the system's is 4: more agents scale out). */
    concurrency: { type: "string", default: "4" },
    /** Fleet change steps one agent runs at once (TUNNEL_CHANGE_CONCURRENCY). */
    "change-concurrency": { type: "string", default: "64" },
    /** Of those, the steps whose start (login, backups, guard, script) runs at once (TUNNEL_CHANGE_START_CONCURRENCY). */
    "start-concurrency": { type: "string", default: "4" },
    /** Changes run one after the other on the same routers (min/median/max of their medians). */
    runs: { type: "string", default: "3" },
    /** Writes a CPU profile of the system's process during the runs (not the adoption) to this file. */
    profile: { type: "string" },
    /** Likewise of the simulated routers' process (their SSH servers, interpreters, heartbeats). */
    "profile-routers": { type: "string" },
  },
});
const N = Number(values.routers);
const WAVE = Number(values.wave);
const INTERVAL_MS = Number(values["interval-ms"]);
const RUNS = Number(values.runs);
const NETWORK_PREFIX = "127.40";
const MARK = "bench-change";

const db = await createTestDatabase();
const sshPort = 40_000 + Math.floor(Math.random() * 10_000);
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
  ENTRY_POINT_PORTS: "63910-63919",
  TUNNEL_SSH_PORT: String(sshPort),
  TUNNEL_NETWORK: `${NETWORK_PREFIX}.0.0/16`,
  TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
  BACKUP_INTERVAL_HOURS: "0",
  HEARTBEAT_INTERVAL_MS: String(INTERVAL_MS),
  MISSED_HEARTBEATS: "10",
});
config.tunnelAgent.jobs.concurrency = Number(values.concurrency);
config.tunnelAgent.jobs.changeConcurrency = Number(values["change-concurrency"]);
config.tunnelAgent.jobs.changeStartConcurrency = Number(values["start-concurrency"]);
/** `BENCH_SQL=1`: counts the statements PGlite runs during each run, by text (the bench's view only). */
const sqlCounts = new Map<string, number>();
if (process.env.BENCH_SQL && db.driver === "pglite") {
  type Q = (sql: string, ...rest: unknown[]) => Promise<unknown>;
  const connection: object = db.orm.em.getConnection();
  const native = Reflect.get(connection, "getNativeClient") as () => Promise<object>;
  const pglite = (await native.call(connection)) as {
    query: Q;
    exec: Q;
    transaction: (fn: (tx: { query: Q }) => Promise<unknown>) => Promise<unknown>;
  };
  const count = (sql: string) => {
    const key = sql.replace(/\s+/g, " ").slice(0, 140);
    sqlCounts.set(key, (sqlCounts.get(key) ?? 0) + 1);
  };
  const wrap =
    (f: Q): Q =>
    (sql, ...rest) => {
      count(sql);
      return f(sql, ...rest);
    };
  pglite.query = wrap(pglite.query.bind(pglite));
  pglite.exec = wrap(pglite.exec.bind(pglite));
  const transaction = pglite.transaction.bind(pglite);
  pglite.transaction = (fn) =>
    transaction((tx) => {
      count("BEGIN (transaction)");
      const q = tx.query.bind(tx);
      return fn(Object.assign(Object.create(tx), { query: wrap(q) }));
    });
}
const system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });
const email = `bench-${crypto.randomUUID()}@example.com`;
const login = await fetch(`${system.api.url}/v1/auth/dev-login`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ email }),
});
const token = ((await login.json()) as { access_token: string }).access_token;
const fleet = new FleetApi(system.api.url);
fleet.useToken(token);
await fleet.ensureAccount(email);

process.stderr.write(`adopting ${N} simulated routers ...\n`);
const enrolled: EnrolledRouter[] = [];
for (let start = 0; start < N; start += 8) {
  // A few enrollments at once (the API's own pace, not the bench's, is what limits 1,000).
  const batch = Array.from({ length: Math.min(8, N - start) }, (_, i) => start + i);
  const answers = await Promise.all(batch.map((index) => fleet.enroll(`bench-${index}`)));
  answers.forEach((e, i) => {
    enrolled.push({
      index: start + i,
      routerId: e.router_id,
      adoptionCommand: e.adoption_command ?? "",
      tunnelIp: e.tunnel_ip ?? "",
    });
  });
}
// The routers run in a child process: their SSH servers, interpreters and heartbeats are the
// routers' CPU, which must neither be counted as the system's overhead nor slow its event loop.
const child = fork(fileURLToPath(new URL("./changes-bench-routers.ts", import.meta.url)), [], {
  stdio: ["ignore", "inherit", "inherit", "ipc"],
});
let stopping = false;
child.once("exit", (code) => {
  if (!stopping) {
    process.stderr.write(`the routers' process ended (${code})\n`);
    process.exit(1);
  }
});
const ask = <T extends FromRouters["type"]>(message: ToRouters, answer: T) =>
  new Promise<Extract<FromRouters, { type: T }>>((resolve) => {
    const on = (m: FromRouters) => {
      if (m.type !== answer) return;
      child.off("message", on);
      resolve(m as Extract<FromRouters, { type: T }>);
    };
    child.on("message", on);
    child.send(message);
  });
await ask({ type: "adopt", sshPort, mark: MARK, routers: enrolled }, "adopted");
const waitFor = async (what: string, check: () => Promise<boolean>) => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 200));
  process.stderr.write(`${what}\n`);
};
await waitFor("all routers online", async () => {
  const [row] = await db.query<{ n: number }>("select count(*)::int as n from router_liveness where has_pulse");
  return Number(row?.n) >= N;
});

const stat = (xs: number[], digits = 0) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => (s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN).toFixed(digits);
  return `p50 ${at(0.5)}  p95 ${at(0.95)}  max ${at(1)}`;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
// The system's CPU with no change running (the routers' heartbeats, its own timers): a change's
// own CPU is what a run takes beyond this rate.
const idleStarted = process.cpuUsage();
const idleWallStarted = performance.now();
await new Promise((resolve) => setTimeout(resolve, 10_000));
const idleUsage = process.cpuUsage(idleStarted);
const idleCpuPerMs = (idleUsage.user + idleUsage.system) / 1000 / (performance.now() - idleWallStarted);
const profiler = values.profile ? new Session() : undefined;
if (profiler) {
  profiler.connect();
  await profiler.post("Profiler.enable");
  await profiler.post("Profiler.start");
}
if (values["profile-routers"]) await ask({ type: "profile", file: values["profile-routers"] }, "profiling");
const p50s = { overhead: [] as number[], confirm: [] as number[], wall: [] as number[] };

for (let run = 1; run <= RUNS; run++) {
  await ask({ type: "reset" }, "reset");
  sqlCounts.clear();
  const cpuBefore = process.cpuUsage();
  const started = Date.now();
  const created = await fetch(`${system.api.url}/api/changes`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      name: `bench ${run}`,
      kind: "script",
      script: `/ip dns set servers=9.9.9.${run}\n/system note set note="${MARK} ${run} on {{identity}}"`,
      routers: { router_ids: enrolled.map((r) => r.routerId) },
      strategy: { canary: 1, wave_size: WAVE, wave_interval_seconds: 0, max_failures: N },
      guard_seconds: 300,
    }),
  });
  const changeId = ((await created.json()) as { data: { id: string } }).data.id;
  await waitFor(`run ${run}: change finished`, async () => {
    const [row] = await db.query<{ open: number }>(
      "select count(*)::int as open from change_routers where change_id = $1 and state in ('pending', 'running')",
      [changeId],
    );
    return Number(row?.open) === 0;
  });
  const wallMs = Date.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const systemCpuMs = (cpu.user + cpu.system) / 1000;
  const collected = await ask({ type: "collect" }, "times");
  const times = new Map(collected.times);

  const rows = await db.query<{
    id: string;
    router_id: string;
    state: string;
    started_ms: number;
    finished_ms: number;
  }>(
    `select id, router_id, state, (extract(epoch from started_at) * 1000)::float8 as started_ms,
       (extract(epoch from finished_at) * 1000)::float8 as finished_ms from change_routers where change_id = $1`,
    [changeId],
  );
  // When each step's first job was taken by a worker (pg-boss's own table: the bench's view only).
  const jobRows = await db.query<{ step: string; started_ms: number }>(
    `select data->>'change_router_id' as step, (extract(epoch from min(started_on)) * 1000)::float8 as started_ms
       from pgboss.job where name = 'router.jobs' and data->>'kind' = 'change.apply'
        and data->>'change_router_id' = any($1::text[]) group by 1`,
    [rows.map((r) => r.id)],
  );
  const jobStarted = new Map(jobRows.map((r) => [r.step, Number(r.started_ms)]));
  const phases = {
    duration: [] as number[],
    router: [] as number[],
    overhead: [] as number[],
    confirm: [] as number[],
    queue: [] as number[],
    login: [] as number[],
    backup: [] as number[],
    between: [] as number[],
    beat: [] as number[],
    result: [] as number[],
  };
  const states = new Map<string, number>();
  let routerSum = 0;
  for (const row of rows) {
    states.set(row.state, (states.get(row.state) ?? 0) + 1);
    const t = times.get(row.router_id);
    const done = t?.scriptDoneAt;
    const change = t?.scripts.findIndex((s) => s.change) ?? -1;
    const removal = change >= 0 ? t?.scripts[change + 1] : undefined;
    if (row.state !== "succeeded" || !t || !done || !removal) continue;
    const startedMs = Number(row.started_ms);
    const finishedMs = Number(row.finished_ms);
    const total = finishedMs - startedMs;
    // The router's wait for its next heartbeat; a heartbeat already on its way may confirm sooner.
    const beatAt = Math.min(t.heartbeatAfterScriptAt ?? removal.start, removal.start);
    const heartbeatWait = Math.max(0, beatAt - done);
    const routerTime = t.routerMs + heartbeatWait;
    routerSum += routerTime;
    phases.duration.push(total);
    phases.router.push(routerTime);
    phases.overhead.push(total - routerTime);
    phases.confirm.push((finishedMs - done) / INTERVAL_MS);
    const jobAt = jobStarted.get(row.id);
    if (jobAt !== undefined) phases.queue.push(jobAt - startedMs);
    if (jobAt !== undefined && t.loginAt) phases.login.push(t.loginAt - jobAt);
    const first = t.scripts[0];
    if (t.loginAt && first) phases.backup.push(first.start - t.loginAt);
    let between = 0;
    for (let i = 1; i <= change; i++) between += (t.scripts[i]?.start ?? 0) - (t.scripts[i - 1]?.end ?? 0);
    phases.between.push(between);
    phases.beat.push(removal.start - beatAt);
    phases.result.push(finishedMs - removal.end);
  }
  p50s.overhead.push(median(phases.overhead));
  p50s.confirm.push(median(phases.confirm));
  p50s.wall.push(wallMs);
  const waves = 1 + Math.ceil((N - 1) / WAVE);
  process.stdout.write(
    [
      `run ${run}/${RUNS}: ${N} routers, waves of ${WAVE}, 0 s between waves, heartbeat interval ${INTERVAL_MS} ms, agent concurrency ${values.concurrency} + ${values["change-concurrency"]} for changes (${values["start-concurrency"]} starting at once)`,
      `results: ${[...states].map(([s, n]) => `${s} ${n}`).join(", ")}`,
      `whole change ${(wallMs / 1000).toFixed(1)} s; routers' time / wave parallelism ${(routerSum / Math.min(WAVE, N) / 1000).toFixed(1)} s (${waves} waves, the slowest router of each wave sets its end); CPU: system ${(systemCpuMs / 1000).toFixed(1)} s (${((systemCpuMs - idleCpuPerMs * wallMs) / N).toFixed(1)} ms a router beyond its idle rate), routers' process ${(collected.cpuMs / 1000).toFixed(1)} s`,
      `step duration (ms):           ${stat(phases.duration)}`,
      `router's time (ms):           ${stat(phases.router)}   (SSH commands + wait for its next heartbeat)`,
      `system overhead (ms):         ${stat(phases.overhead)}   (duration minus the router's time; target < 100 ms)`,
      `  dispatch to job taken:      ${stat(phases.queue)}   (dispatcher commit, queue, worker)`,
      `  job taken to SSH login:     ${stat(phases.login)}   (step read, turn to start, TCP + key exchange + auth)`,
      `  login to binary backup:     ${stat(phases.backup)}   (configuration backup: export, store)`,
      `  between commands:           ${stat(phases.between)}   (agent's phase writes, binary backup to script)`,
      `  heartbeat to guard removal: ${stat(phases.beat)}   (heartbeat flush, the look)`,
      `  guard removal to result:    ${stat(phases.result)}   (the result's transaction)`,
      `confirmation (intervals):     ${stat(phases.confirm, 2)}   (script end to result; target <= 2)`,
      "",
    ].join("\n"),
  );
  if (sqlCounts.size > 0) {
    const top = [...sqlCounts].sort((a, b) => b[1] - a[1]).slice(0, 30);
    const all = [...sqlCounts.values()].reduce((a, b) => a + b, 0);
    process.stdout.write(`statements: ${all} (${(all / N).toFixed(1)} per router)\n`);
    for (const [sql, n] of top) process.stdout.write(`  ${String(n).padStart(6)}  ${sql}\n`);
  }
}
if (profiler && values.profile) {
  const { profile } = await profiler.post("Profiler.stop");
  writeFileSync(values.profile, JSON.stringify(profile));
}
const range = (xs: number[], digits: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return `min ${(s[0] ?? Number.NaN).toFixed(digits)}  median ${median(s).toFixed(digits)}  max ${(s.at(-1) ?? Number.NaN).toFixed(digits)}`;
};
process.stdout.write(
  [
    `over ${RUNS} runs (each run's p50):`,
    `  system overhead per router (ms): ${range(p50s.overhead, 0)}`,
    `  confirmation (intervals):        ${range(p50s.confirm, 2)}`,
    `  whole change (s):                ${range(
      p50s.wall.map((ms) => ms / 1000),
      1,
    )}`,
    "",
  ].join("\n"),
);
stopping = true;
child.send({ type: "stop" } satisfies ToRouters);
await new Promise((resolve) => child.once("exit", resolve));
await system.close();
await db.close();
process.exit(0);
