import {
  acquireJobEngine,
  ConfigBackupsRepository,
  type JobEngine,
  listRouterJobs,
  queryOf,
  queueBackupJob,
  RoutersRepository,
  routerJobsQueue,
} from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { FORWARD_JOB_KINDS } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { BackupsService } from "./backups.service.ts";

// The service tier (docs/contributing.md "Add a test"): BackupsService on a real database with the
// real repositories and job engine, wired as wiring/routers.wiring.ts wires it.

let db: TestDatabase;
let engine: JobEngine;
let backups: BackupsService;

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  await engine.defineQueue(routerJobsQueue());
  backups = new BackupsService({
    backups: new ConfigBackupsRepository(queryOf(db)),
    routers: new RoutersRepository(db),
    queue: (routerId) => queueBackupJob(engine, routerId),
  });
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

const backupJobsOf = async (routerId: string) => listRouterJobs(db, { routerId, kind: FORWARD_JOB_KINDS.backup });

describe("BackupsService.take", () => {
  it("queues one backup job; a backup still waiting is the one answered again; another router gets its own", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    const first = await backups.take(owner.teamId, { router_id: router.id });
    expect(first).toEqual({ job_id: expect.any(String) });
    const second = await backups.take(owner.teamId, { router_id: router.id });
    expect(second.job_id).toBe(first.job_id);
    expect((await backupJobsOf(router.id)).map((j) => j.id)).toEqual([first.job_id]);

    const other = await makeRouter(db, owner);
    const third = await backups.take(owner.teamId, { router_id: other.id });
    expect(third.job_id).not.toBe(first.job_id);
    expect((await backupJobsOf(other.id)).map((j) => j.id)).toEqual([third.job_id]);
  });

  it("another team's router is not found, like an unknown one, and nothing is queued", async () => {
    const owner = await makeUser(db);
    const stranger = await makeUser(db);
    const router = await makeRouter(db, owner);
    const before = await databaseFingerprint(db);
    for (const id of [router.id, crypto.randomUUID()]) {
      const error = await rejection(backups.take(stranger.teamId, { router_id: id }));
      expect(error.status).toBe(404);
      expect(error.message).toBe("Router not found.");
    }
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("a router without a tunnel address is refused with 409, and nothing is queued", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner, { tunnelIp: null });
    const before = await databaseFingerprint(db);
    const error = await rejection(backups.take(owner.teamId, { router_id: router.id }));
    expect(error.status).toBe(409);
    expect(error.message).toMatch(/no assigned tunnel address/);
    expect(await databaseFingerprint(db)).toBe(before);
  });
});
