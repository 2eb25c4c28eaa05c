import {
  acquireJobEngine,
  type JobEngine,
  openRouterJobLocks,
  queueBackupJob,
  queueRouterJob,
  type RouterJobLocks,
  routerJobsQueue,
} from "@fleet/db";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { ROUTER_JOB_KINDS } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RouterJobWorker } from "./router-job-worker.ts";

// docs/api.md "Tunnel agent and entry point": a forward's or an access session's apply never waits
// behind bulk work. Backups of unreachable routers fill every worker (their handlers hang here
// until the test lets them go); a forward queued after them is still applied.

let db: TestDatabase;
let engine: JobEngine;
let locks: RouterJobLocks;

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  await engine.defineQueue(routerJobsQueue());
  locks = openRouterJobLocks(db);
});

afterAll(async () => {
  await locks?.close();
  await engine?.stop();
  await db?.close();
});

it("applies a forward and an access session while backups queued before them hold every bulk worker", async () => {
  const BACKUPS = 40;
  const CONCURRENCY = 2;
  for (let i = 0; i < BACKUPS; i++) await queueBackupJob(engine, db, crypto.randomUUID());
  const forward = { kind: ROUTER_JOB_KINDS.apply, router_id: crypto.randomUUID(), forward_id: crypto.randomUUID() };
  const access = {
    kind: ROUTER_JOB_KINDS.accessApply,
    router_id: crypto.randomUUID(),
    access_id: crypto.randomUUID(),
  };
  await queueRouterJob(engine, forward);
  await queueRouterJob(engine, access);

  let release: () => void = () => {};
  const unreachable = new Promise<void>((resolve) => {
    release = resolve;
  });
  let backupsStarted = 0;
  let backupsDone = 0;
  const applied: string[] = [];
  const worker = new RouterJobWorker({
    engine,
    locks,
    handlers: {
      [ROUTER_JOB_KINDS.backup]: async () => {
        backupsStarted++;
        await unreachable;
        backupsDone++;
      },
      [ROUTER_JOB_KINDS.apply]: async (job) => {
        applied.push(job.kind);
      },
      [ROUTER_JOB_KINDS.accessApply]: async (job) => {
        applied.push(job.kind);
      },
    },
    logger: pino({ level: "silent" }),
    concurrency: CONCURRENCY,
    interactiveConcurrency: 1,
    pollSeconds: 0.5,
  });
  try {
    await worker.start();
    await eventually(() => applied.length === 2, "the forward and the access session applied", 30_000);
    expect(applied.sort()).toEqual([ROUTER_JOB_KINDS.accessApply, ROUTER_JOB_KINDS.apply].sort());
    // Both ran while the backups queued before them still held the bulk workers.
    expect(backupsDone).toBe(0);
    expect(backupsStarted).toBeLessThanOrEqual(CONCURRENCY);
  } finally {
    release();
    await worker.close();
  }
}, 60_000);

it("runs fleet change steps in a lane of their own: as many at once as changeConcurrency, beside bulk work", async () => {
  const CHANGE_CONCURRENCY = 8;
  // Steps of different routers, each waiting on its router until the test lets them go.
  for (let i = 0; i < CHANGE_CONCURRENCY + 4; i++) {
    await queueRouterJob(engine, {
      kind: ROUTER_JOB_KINDS.changeApply,
      router_id: crypto.randomUUID(),
      change_router_id: crypto.randomUUID(),
    });
  }
  let release: () => void = () => {};
  const waiting = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started = 0;
  const applied: string[] = [];
  const worker = new RouterJobWorker({
    engine,
    locks,
    handlers: {
      [ROUTER_JOB_KINDS.changeApply]: async () => {
        started++;
        await waiting;
      },
      [ROUTER_JOB_KINDS.apply]: async (job) => {
        applied.push(job.kind);
      },
    },
    logger: pino({ level: "silent" }),
    concurrency: 1,
    interactiveConcurrency: 1,
    changeConcurrency: CHANGE_CONCURRENCY,
    pollSeconds: 0.5,
  });
  try {
    await worker.start();
    // The change lane's 8, and the one bulk worker (change steps come before bulk jobs there): 9, not 10.
    await eventually(() => started === CHANGE_CONCURRENCY + 1, "the change steps running", 30_000);
    await queueRouterJob(engine, {
      kind: ROUTER_JOB_KINDS.apply,
      router_id: crypto.randomUUID(),
      forward_id: crypto.randomUUID(),
    });
    await eventually(() => applied.length === 1, "the forward applied", 30_000);
    expect(started).toBe(CHANGE_CONCURRENCY + 1);
  } finally {
    release();
    await worker.close();
  }
}, 60_000);
