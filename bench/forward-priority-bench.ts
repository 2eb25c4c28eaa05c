/**
 * `npm run bench:forward-priority`: how long a new forward's apply waits with 1,500 configuration
 * backups of unreachable routers queued before it (docs/api.md "Tunnel agent and entry point": a
 * forward's apply never waits behind bulk work; target: active within 5 s). One agent's real
 * RouterJobWorker at its default concurrency (4, plus 2 for forward and access jobs); each backup
 * waits out the SSH connect timeout (10 s) and fails, as against an unreachable router. Forwards
 * are queued one at a time once the backups fill the workers; prints the wait from the send to the
 * end of each apply. `--baseline` queues the forwards as bulk jobs (priority 0), as before.
 * With DATABASE_URL a scratch database on that server; without it PGlite.
 * Options: --backups N (default 1500), --forwards N (default 5), --connect-timeout-ms N (10000).
 */
import { parseArgs } from "node:util";
import {
  acquireJobEngine,
  openRouterJobLocks,
  queueBackupJob,
  queueRouterJob,
  ROUTER_JOBS_QUEUE,
  routerJobsQueue,
} from "@fleet/db";
import { createTestDatabase } from "@fleet/db/testing";
import { ROUTER_JOB_KINDS } from "@fleet/shared";
import { RouterJobWorker } from "@fleet/tunnel-agent/jobs/router-job-worker";
import pino from "pino";

const { values } = parseArgs({
  options: {
    backups: { type: "string", default: "1500" },
    forwards: { type: "string", default: "5" },
    "connect-timeout-ms": { type: "string", default: "10000" },
    baseline: { type: "boolean", default: false },
  },
});
const BACKUPS = Number(values.backups);
const FORWARDS = Number(values.forwards);
const CONNECT_TIMEOUT_MS = Number(values["connect-timeout-ms"]);

const db = await createTestDatabase();
const engine = await acquireJobEngine(db);
await engine.defineQueue(routerJobsQueue());
const locks = openRouterJobLocks(db);
const started = Date.now();
for (let i = 0; i < BACKUPS; i++) await queueBackupJob(engine, db, crypto.randomUUID());
console.log(`queued ${BACKUPS} backups in ${Date.now() - started} ms`);

let running = 0;
const done = new Map<string, number>();
const worker = new RouterJobWorker({
  engine,
  locks,
  handlers: {
    [ROUTER_JOB_KINDS.backup]: async () => {
      running++;
      try {
        await new Promise((resolve) => setTimeout(resolve, CONNECT_TIMEOUT_MS));
        throw new Error("Timed out while waiting for handshake");
      } finally {
        running--;
      }
    },
    [ROUTER_JOB_KINDS.apply]: async (job) => {
      done.set(String(job.payload.forward_id), Date.now());
    },
  },
  logger: pino({ level: "silent" }),
  concurrency: 4,
  interactiveConcurrency: 2,
  pollSeconds: 1,
});
await worker.start();
while (running < 4) await new Promise((resolve) => setTimeout(resolve, 20));

const waits: number[] = [];
for (let i = 0; i < FORWARDS; i++) {
  const id = crypto.randomUUID();
  const data = { kind: ROUTER_JOB_KINDS.apply, router_id: crypto.randomUUID(), forward_id: id };
  const sentAt = Date.now();
  if (values.baseline) await engine.send(ROUTER_JOBS_QUEUE, data, { singletonKey: data.router_id });
  else await queueRouterJob(engine, data);
  const deadline = sentAt + 4 * CONNECT_TIMEOUT_MS + 60_000;
  while (!done.has(id) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  const at = done.get(id);
  waits.push(at === undefined ? Number.POSITIVE_INFINITY : at - sentAt);
  console.log(
    `forward ${i + 1}: ${at === undefined ? "not applied" : `applied after ${at - sentAt} ms`} (${running} backups running)`,
  );
}
const sorted = [...waits].sort((a, b) => a - b);
console.log(
  `${values.baseline ? "baseline (bulk priority)" : "interactive priority"}, ${db.url ? "PostgreSQL" : "PGlite"}: ` +
    `forward apply wait p50 ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted.at(-1)} ms with ${BACKUPS} backups queued`,
);
await worker.close().catch(() => {});
await locks.close();
await engine.stop();
await db.close();
process.exit(0);
