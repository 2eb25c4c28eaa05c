/**
 * `npm run bench:jobs`: claim latency of the router job queue with two agents. Two workers, each on
 * its own database handle (its own pg-boss and pool, like two agent processes), wait for work; this
 * process queues router jobs one at a time across a few routers, spaced out, and each handler
 * records how long its job waited between the send and the start of its handler. Prints p50/p99/max.
 * With DATABASE_URL a scratch database is created on that server and dropped; without it runs on
 * PGlite (one handle shared by both workers). Options: --jobs N (default 200), --gap-ms N (default 15).
 *
 * Before pg-boss (hand-written queue, 250 ms poll; same machine, same options): PostgreSQL p50 99 ms,
 * p99 235 ms, max 247 ms; PGlite p50 171 ms, p99 264 ms (docs/operations.md "Metrics and probes").
 */
import { parseArgs } from "node:util";
import {
  acquireJobEngine,
  type Database,
  type JobEngine,
  openDatabase,
  ROUTER_JOBS_QUEUE,
  routerJobsQueue,
} from "@fleet/db";
import { createTestDatabase } from "@fleet/db/testing";

const { values } = parseArgs({
  options: { jobs: { type: "string", default: "200" }, "gap-ms": { type: "string", default: "15" } },
});
const JOBS = Number(values.jobs);
const GAP_MS = Number(values["gap-ms"]);

const db = await createTestDatabase();
const handles: Database[] = [db];
if (db.url) handles.push(await openDatabase({ databaseUrl: db.url, dataDir: "memory", poolSize: 5 }));
const engines: JobEngine[] = [];
for (const handle of [handles[0], handles[1] ?? handles[0]]) {
  const engine = await acquireJobEngine(handle as Database);
  await engine.defineQueue(routerJobsQueue());
  engines.push(engine);
}
const waits: number[] = [];
for (const engine of engines) {
  await engine.work<{ sent_at: number }>(
    ROUTER_JOBS_QUEUE,
    { localConcurrency: 4, pollingIntervalSeconds: 1 },
    async (job) => {
      waits.push(Date.now() - job.data.sent_at);
    },
  );
}
const producer = engines[0] as JobEngine;
for (let i = 0; i < JOBS; i++) {
  await producer.send(
    ROUTER_JOBS_QUEUE,
    { kind: "bench.job", router_id: `router-${i % 8}`, sent_at: Date.now() },
    { singletonKey: `router-${i % 8}` },
  );
  await new Promise((r) => setTimeout(r, GAP_MS));
}
while (waits.length < JOBS) await new Promise((r) => setTimeout(r, 20));
for (const engine of engines) await engine.stop();
for (const handle of handles.slice(1)) await handle.close();
await db.close();

const sorted = [...waits].sort((a, b) => a - b);
const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
console.log(
  JSON.stringify({
    engine: "pg-boss (LISTEN/NOTIFY, key_strict_fifo)",
    driver: db.driver,
    jobs: JOBS,
    p50_ms: at(0.5),
    p99_ms: at(0.99),
    max_ms: sorted.at(-1),
  }),
);
