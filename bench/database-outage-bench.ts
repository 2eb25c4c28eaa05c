/**
 * `npm run bench:db-outage`: false faults after a PostgreSQL outage (issue 40: a 60 s outage at a
 * 3 s cadence faulted 1,010 of 1,010 routers; 340 s at the default 30 s faulted 843 of 1,000). N
 * routers beat over WebSocket to --daemons heartbeat daemons (in this process, real clock and
 * timers, as in production) on a PostgreSQL cluster of the bench's own (initdb/pg_ctl; never the
 * shared server), which is stopped for --outage-s and started again. --silent K routers stop
 * beating halfway through the outage: they must be faulted, from their real last heartbeat.
 * Prints faults opened, router.offline/online entries and seconds of downtime for the routers
 * that beat throughout (all must be 0) and for the silent ones.
 * Options: --routers N (1000), --interval-ms N (3000), --missed N (3), --outage-s N (60),
 * --daemons N (2), --silent K (10). The issue's second case: --interval-ms 30000 --missed 10 --outage-s 340.
 */
import { parseArgs } from "node:util";
import { openDatabase } from "@fleet/db";
import { makeRouter, makeUser, startOwnPostgres } from "@fleet/db/testing";
import { loadHeartbeatConfig, startHeartbeat } from "@fleet/heartbeat-daemon";
import pino from "pino";
import WebSocket from "ws";

const { values } = parseArgs({
  options: {
    routers: { type: "string", default: "1000" },
    "interval-ms": { type: "string", default: "3000" },
    missed: { type: "string", default: "3" },
    "outage-s": { type: "string", default: "60" },
    daemons: { type: "string", default: "2" },
    silent: { type: "string", default: "10" },
  },
});
const N = Number(values.routers);
const INTERVAL = Number(values["interval-ms"]);
const MISSED = Number(values.missed);
const OUTAGE_MS = Number(values["outage-s"]) * 1000;
const SILENT = Number(values.silent);
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const pg = await startOwnPostgres();
if (!pg) throw new Error("needs PostgreSQL's binaries under /usr/lib/postgresql");
const db = await openDatabase({ databaseUrl: pg.url, dataDir: "memory", poolSize: 10 });
await db.migrate();
const owner = await makeUser(db);
const routers: Array<{ id: string; token: string }> = [];
for (let i = 0; i < N; i++) {
  const r = await makeRouter(db, owner, { identity: `r-${i}` });
  routers.push({ id: r.id, token: r.heartbeatToken });
}
const daemons = [];
for (let i = 0; i < Number(values.daemons); i++) {
  const config = loadHeartbeatConfig({
    HOST: "127.0.0.1",
    HEARTBEAT_PORT: "0",
    HEARTBEAT_INTERVAL_MS: String(INTERVAL),
    MISSED_HEARTBEATS: String(MISSED),
    DATA_DIR: "memory",
  });
  daemons.push(await startHeartbeat({ config, db, logger: pino({ level: "warn" }) }));
}
const sockets: WebSocket[] = [];
const timers: NodeJS.Timeout[] = [];
const silentIds = new Set(routers.slice(0, SILENT).map((r) => r.id));
for (const [i, r] of routers.entries()) {
  const daemon = daemons[i % daemons.length];
  if (!daemon) throw new Error("no daemon");
  const ws = new WebSocket(daemon.wsUrl, { headers: { authorization: `Bearer ${r.token}` } });
  ws.on("error", () => {});
  await new Promise((resolve) => ws.once("open", resolve));
  sockets.push(ws);
  const beat = () => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ type: "heartbeat", uptime: 86_400 }));
  // Spread over the interval, as real routers are.
  setTimeout(
    () => {
      beat();
      timers[i] = setInterval(beat, INTERVAL);
    },
    Math.floor((i / N) * INTERVAL),
  );
}
await wait(2 * INTERVAL);
const count = async (sql: string) => Number((await db.query<{ n: number }>(sql))[0]?.n ?? 0);
console.log(
  `${N} routers beating every ${INTERVAL} ms on ${daemons.length} daemons; stopping PostgreSQL for ${OUTAGE_MS / 1000} s`,
);
await pg.stop();
await wait(OUTAGE_MS / 2);
for (const [i, r] of routers.entries()) if (silentIds.has(r.id)) clearInterval(timers[i]);
await wait(OUTAGE_MS / 2);
await pg.start();
console.log("PostgreSQL is back");
// Long enough for every buffer to land and every sweep to judge the outage (and the silent routers).
await wait(MISSED * INTERVAL + 2 * INTERVAL + 5_000);
const silentList = `(${[...silentIds].map((id) => `'${id}'`).join(",") || "null"})`;
const report = async (label: string, where: string) => {
  const faults = await count(`select count(*)::int as n from router_faults where router_id ${where}`);
  const offline = await count(
    `select count(*)::int as n from audit_log where action = 'router.offline' and router_id ${where}`,
  );
  const online = await count(
    `select count(*)::int as n from audit_log where action = 'router.online' and router_id ${where}`,
  );
  const down = await count(
    `select coalesce(sum(seconds_down), 0)::float8 as n from router_downtime_hours where router_id ${where}`,
  );
  console.log(
    `${label}: faults ${faults}, router.offline ${offline}, router.online ${online}, downtime ${down.toFixed(0)} s`,
  );
};
await report(`beating throughout (${N - SILENT})`, `not in ${silentList}`);
await report(`silent since mid-outage (${SILENT})`, `in ${silentList}`);
for (const t of timers) clearInterval(t);
for (const ws of sockets) ws.terminate();
for (const d of daemons) await d.close();
await db.close();
await pg.destroy();
process.exit(0);
