import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../testing/test-database.ts";
import { acquireJobEngine, type JobEngine } from "./job-engine.ts";

let db: TestDatabase;
let engine: JobEngine;

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db, { monitorIntervalSeconds: 1 });
});

afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

describe("job engine (pg-boss)", () => {
  it("is one pg-boss per database, shared by every holder", async () => {
    const second = await acquireJobEngine(db);
    try {
      expect(second.boss).toBe(engine.boss);
    } finally {
      await second.stop();
    }
    // The first holder still works after the second let go.
    await engine.defineQueue({ name: "t-shared" });
    expect(await engine.send("t-shared", { n: 1 })).toEqual(expect.any(String));
  });

  it("runs a sent job through its handler", async () => {
    await engine.defineQueue({ name: "t-run" });
    const seen: unknown[] = [];
    await engine.work<{ n: number }>("t-run", { pollingIntervalSeconds: 0.5 }, async (job) => {
      seen.push(job.data);
    });
    await engine.send("t-run", { n: 7 });
    await eventually(() => seen.length === 1, "the job");
    expect(seen).toEqual([{ n: 7 }]);
    await engine.offWork("t-run");
  });

  it("inserts a job inside the caller's transaction: a rollback leaves no job, a commit one", async () => {
    await engine.defineQueue({ name: "t-tx" });
    await expect(
      db.transaction(async (query) => {
        await engine.send("t-tx", { v: "rolled back" }, { executor: query });
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    expect(await engine.findJobs("t-tx")).toEqual([]);
    const id = await db.transaction((query) => engine.send("t-tx", { v: "kept" }, { executor: query }));
    const jobs = await engine.findJobs<{ v: string }>("t-tx");
    expect(jobs.map((j) => [j.id, j.data.v])).toEqual([[id, "kept"]]);
  });

  it("runs the jobs of one key one at a time and in order across two workers (key_strict_fifo)", async () => {
    await engine.defineQueue({ name: "t-key", policy: "key_strict_fifo" });
    const running = new Map<string, number>();
    let overlaps = 0;
    const done: string[] = [];
    const handler = async (job: { data: { key: string; i: number } }) => {
      const now = (running.get(job.data.key) ?? 0) + 1;
      running.set(job.data.key, now);
      if (now > 1) overlaps += 1;
      await new Promise((r) => setTimeout(r, 20)); // work, not a wait: a job that takes a while
      running.set(job.data.key, now - 1);
      done.push(`${job.data.key}:${job.data.i}`);
    };
    const options = { localConcurrency: 3, pollingIntervalSeconds: 0.5 };
    await engine.work("t-key", options, handler);
    await engine.work("t-key", options, handler);
    for (let i = 0; i < 5; i++) {
      for (const key of ["router-a", "router-b"]) await engine.send("t-key", { key, i }, { singletonKey: key });
    }
    await eventually(() => done.length === 10, "ten jobs");
    expect(overlaps).toBe(0);
    for (const key of ["router-a", "router-b"]) {
      expect(done.filter((d) => d.startsWith(key))).toEqual([0, 1, 2, 3, 4].map((i) => `${key}:${i}`));
    }
    await engine.offWork("t-key");
  });

  it("retries a failing job and then moves it to the dead-letter queue", async () => {
    await engine.defineQueue({ name: "t-fail", retryLimit: 1, retryDelaySeconds: 0, deadLetter: "t-fail.dead" });
    let attempts = 0;
    await engine.work("t-fail", { pollingIntervalSeconds: 0.5 }, async () => {
      attempts += 1;
      throw new Error("router unreachable");
    });
    const id = await engine.send("t-fail", { x: 1 });
    await eventually(async () => (await engine.findJobs("t-fail.dead")).length === 1, "the dead letter");
    expect(attempts).toBe(2);
    const [original] = await engine.findJobs("t-fail", { id: id ?? "" });
    expect(original?.state).toBe("failed");
    const [dead] = await engine.findJobs("t-fail.dead");
    expect(dead).toMatchObject({ data: { x: 1 }, sourceId: id });
    await engine.offWork("t-fail");
  });

  it("keeps a cron schedule once per queue and key", async () => {
    await engine.defineQueue({ name: "t-cron" });
    await engine.schedule("t-cron", "*/5 * * * *", { a: 1 });
    await engine.schedule("t-cron", "*/10 * * * *", { a: 2 });
    const schedules = await engine.boss.getSchedules("t-cron");
    expect(schedules.map((s) => s.cron)).toEqual(["*/10 * * * *"]);
  });
});
