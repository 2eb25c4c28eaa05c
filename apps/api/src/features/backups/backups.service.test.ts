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
import { digestConfigExport, ROUTER_JOB_KINDS } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { BackupsService } from "./backups.service.ts";
import { offLoopPatch } from "./config-diff.ts";

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
    queue: (routerId) => queueBackupJob(engine, db, routerId),
    patch: offLoopPatch(),
  });
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

const backupJobsOf = async (routerId: string) => listRouterJobs(db, { routerId, kind: ROUTER_JOB_KINDS.backup });

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

  it("a burst of 20 concurrent requests queues one job and answers its id to every request", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => backups.take(owner.teamId, { router_id: router.id })),
    );
    const jobs = await backupJobsOf(router.id);
    expect(jobs).toHaveLength(1);
    expect(new Set(answers.map((a) => a.job_id))).toEqual(new Set([jobs[0]?.id]));
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

describe("BackupsService.diff", () => {
  const store = async (routerId: string, content: string, at: number) => {
    const repository = new ConfigBackupsRepository(queryOf(db));
    const read = { routerId, content, ...digestConfigExport(content), retention: 100 };
    const stored = await repository.insertIfNewest(
      (await repository.latest(routerId))?.id ?? null,
      { ...read, at: new Date(Date.UTC(2026, 10, 21, 12) + at * 60_000) },
      { added: 0, removed: 0 },
    );
    if (!stored) throw new Error("not stored");
    return stored;
  };
  const exportOf = (lines: readonly string[]) =>
    ["# 2026-11-21 12:00:00 by RouterOS 7.16.2", "/ip firewall filter", ...lines, ""].join("\r\n");

  it("answers a unified diff computed off the event loop, without the dated first line", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    const first = await store(router.id, exportOf(["add chain=input action=accept"]), 0);
    const second = await store(router.id, exportOf(["add chain=input action=drop"]), 1);
    const patch = await backups.diff(owner.teamId, { router_id: router.id, id: second.id });
    expect(patch.split("\n").filter((l) => /^[-+][^-+]/.test(l))).toEqual([
      "-add chain=input action=accept",
      "+add chain=input action=drop",
    ]);
    expect(patch).toContain(`--- backup-${first.id}`);
    expect(patch).not.toContain("by RouterOS");
  });

  it("versions too far apart for the time limit answer 422 diff_too_large", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    // 8,000 lines that all change: quadratic for jsdiff, far beyond a 1 ms budget.
    const lines = (tag: string) => Array.from({ length: 8_000 }, (_, i) => `add comment=${tag}-${i}`);
    await store(router.id, exportOf(lines("a")), 0);
    const second = await store(router.id, exportOf(lines("b")), 1);
    const bounded = new BackupsService({
      backups: new ConfigBackupsRepository(queryOf(db)),
      routers: new RoutersRepository(db),
      queue: async () => null,
      patch: offLoopPatch(1),
    });
    const error = await rejection(bounded.diff(owner.teamId, { router_id: router.id, id: second.id }));
    expect(error).toMatchObject({ status: 422, code: "diff_too_large" });
    expect(error.message).toMatch(/too far apart/);
  });
});
