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
 * `--change-concurrency K` the further change steps (TUNNEL_CHANGE_CONCURRENCY, 64).
 */
import { parseArgs } from "node:util";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { startTestSystem } from "@fleet/all-in-one/testing";
import { createTestDatabase } from "@fleet/db/testing";
import { AdoptedRouter } from "@fleet/router-simulator/adoption/adopted-router";
import { FleetApi } from "@fleet/router-simulator/fleet-api";
import type { HttpRequest, HttpResponse } from "@fleet/router-simulator/routeros/script/routeros-device";
import { startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";
import pino from "pino";

const { values } = parseArgs({
  options: {
    routers: { type: "string", default: "100" },
    wave: { type: "string", default: "50" },
    "interval-ms": { type: "string", default: "5000" },
    /** Router jobs one agent runs at once (the system's is 4: more agents scale out). */
    concurrency: { type: "string", default: "4" },
    /** Fleet change steps one agent runs at once (TUNNEL_CHANGE_CONCURRENCY). */
    "change-concurrency": { type: "string", default: "64" },
    /** Changes run one after the other on the same routers (min/median/max of their medians). */
    runs: { type: "string", default: "3" },
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

/** What the simulator measured of one router: its own time, and when its change script ended. */
interface RouterTimes {
  routerMs: number;
  /** The first of the change's commands (the binary backup; the configuration export comes before it). */
  firstAt?: number;
  scriptDoneAt?: number;
  heartbeatAfterScriptAt?: number;
}
const times = new Map<string, RouterTimes>();
const routers: AdoptedRouter[] = [];
const closers: Array<() => Promise<void>> = [];

process.stderr.write(`adopting ${N} simulated routers ...\n`);
for (let index = 0; index < N; index++) {
  const enrolled = await fleet.enroll(`bench-${index}`);
  const router = new AdoptedRouter({
    index,
    routerId: enrolled.router_id,
    adoptionCommand: enrolled.adoption_command ?? "",
    tunnelIp: enrolled.tunnel_ip ?? "",
    bindTunnelIp: false,
    identity: `bench-${index}`,
  });
  const t: RouterTimes = { routerMs: 0 };
  times.set(router.routerId, t);
  // The router's heartbeat after its change: the wait until then is the router's, not the system's.
  const options = router.device.options as { http: (request: HttpRequest) => Promise<HttpResponse> };
  const send = options.http;
  options.http = async (request) => {
    // Only a heartbeat sent after the script ended confirms it (one already on its way does not).
    // Timed when sent: the system sees it then, whenever this loaded process reads the answer.
    // (Compared when it is answered: one sent during an earlier run must not count for this one.)
    const sentAt = Date.now();
    const response = await send(request);
    const done = t.scriptDoneAt;
    if (done !== undefined && sentAt > done && t.heartbeatAfterScriptAt === undefined)
      t.heartbeatAfterScriptAt = sentAt;
    return response;
  };
  const ros = await startSimulatedRouterOs({
    tunnelIp: router.tunnelIp,
    sshPort,
    authorize: router.authorize,
    configuration: router.configuration,
    reachable: router.reachable,
    script: async (text) => {
      const started = performance.now();
      t.firstAt ??= Date.now();
      const out = await router.script(text);
      t.routerMs += performance.now() - started;
      if (text.includes(MARK)) t.scriptDoneAt = Date.now();
      return out;
    },
  });
  closers.push(() => ros.close());
  await router.adopt();
  routers.push(router);
}
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
const p50s = { overhead: [] as number[], confirm: [] as number[], wall: [] as number[] };

for (let run = 1; run <= RUNS; run++) {
  for (const t of times.values()) {
    t.routerMs = 0;
    delete t.firstAt;
    delete t.scriptDoneAt;
    delete t.heartbeatAfterScriptAt;
  }
  const started = Date.now();
  const created = await fetch(`${system.api.url}/api/changes`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      name: `bench ${run}`,
      kind: "script",
      script: `/ip dns set servers=9.9.9.${run}\n/system note set note="${MARK} ${run} on {{identity}}"`,
      routers: { router_ids: routers.map((r) => r.routerId) },
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

  const rows = await db.query<{ router_id: string; state: string; started_ms: number; finished_ms: number }>(
    `select router_id, state, (extract(epoch from started_at) * 1000)::float8 as started_ms,
       (extract(epoch from finished_at) * 1000)::float8 as finished_ms from change_routers where change_id = $1`,
    [changeId],
  );
  const duration: number[] = [];
  const routerTime: number[] = [];
  const overhead: number[] = [];
  const confirm: number[] = [];
  const toFirst: number[] = [];
  const afterBeat: number[] = [];
  const states = new Map<string, number>();
  for (const row of rows) {
    states.set(row.state, (states.get(row.state) ?? 0) + 1);
    const t = times.get(row.router_id);
    if (row.state !== "succeeded" || !t?.scriptDoneAt || !t.heartbeatAfterScriptAt) continue;
    const total = Number(row.finished_ms) - Number(row.started_ms);
    const heartbeatWait = t.heartbeatAfterScriptAt - t.scriptDoneAt;
    duration.push(total);
    routerTime.push(t.routerMs + heartbeatWait);
    overhead.push(total - t.routerMs - heartbeatWait);
    confirm.push((Number(row.finished_ms) - t.scriptDoneAt) / INTERVAL_MS);
    if (t.firstAt) toFirst.push(t.firstAt - Number(row.started_ms));
    afterBeat.push(Number(row.finished_ms) - t.heartbeatAfterScriptAt);
  }
  p50s.overhead.push(median(overhead));
  p50s.confirm.push(median(confirm));
  p50s.wall.push(wallMs);
  process.stdout.write(
    [
      `run ${run}/${RUNS}: ${N} routers, waves of ${WAVE}, 0 s between waves, heartbeat interval ${INTERVAL_MS} ms, agent concurrency ${values.concurrency} + ${values["change-concurrency"]} for changes`,
      `results: ${[...states].map(([s, n]) => `${s} ${n}`).join(", ")}; whole change ${(wallMs / 1000).toFixed(1)} s`,
      `step duration (ms):           ${stat(duration)}`,
      `router's time (ms):           ${stat(routerTime)}   (SSH commands + wait for its next heartbeat)`,
      `system overhead (ms):         ${stat(overhead)}   (agent + database: duration minus the router's time; target < 100 ms)`,
      `  of which dispatch to its first command (ms): ${stat(toFirst)}   (dispatcher, queue, worker, SSH login)`,
      `  of which heartbeat to result (ms):           ${stat(afterBeat)}   (heartbeat flush, the look, guard removal)`,
      `confirmation (intervals):     ${stat(confirm, 2)}   (script end to result; target <= 2)`,
      "",
    ].join("\n"),
  );
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
for (const router of routers) router.stop();
for (const close of closers) await close();
await system.close();
await db.close();
process.exit(0);
