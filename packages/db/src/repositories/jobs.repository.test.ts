import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase, unique } from "../testing/index.ts";
import { type JobRecord, JobsRepository } from "./jobs.repository.ts";

let db: TestDatabase;
let jobs: JobsRepository;
const T0 = new Date("2026-11-21T12:00:00Z");
const at = (ms: number) => new Date(T0.getTime() + ms);

beforeAll(async () => {
  db = await createTestDatabase();
  jobs = new JobsRepository(db);
});
afterAll(async () => {
  await db?.close();
});

/** Each test claims only its own kind, so tests sharing the database never take each other's jobs. */
const kindFor = () => unique("kind");

describe("JobsRepository", () => {
  it("runs a job through pending -> running -> done with a visible lease", async () => {
    const kind = kindFor();
    const queued = await jobs.enqueue({ kind, groupKey: unique("g"), payload: { a: 1 } }, T0);
    expect(queued).toMatchObject({ kind, status: "pending", attempts: 0, payload: { a: 1 }, lockedBy: null });
    const claimed = await jobs.claim("agent-a", T0, 30_000, [kind]);
    expect(claimed).toMatchObject({ id: queued?.id, status: "running", attempts: 1, lockedBy: "agent-a" });
    expect(claimed?.lockedUntil?.toISOString()).toBe(at(30_000).toISOString());
    expect(await jobs.claim("agent-b", T0, 30_000, [kind])).toBeNull();
    expect(await jobs.complete(queued?.id ?? "", "agent-a", at(1000))).toBe(true);
    const done = await jobs.get(queued?.id ?? "");
    expect(done).toMatchObject({ status: "done", lockedBy: null, lockedUntil: null, attempts: 1 });
    expect(done?.finishedAt?.toISOString()).toBe(at(1000).toISOString());
  });

  it("does not hand out a job before its run_at", async () => {
    const kind = kindFor();
    await jobs.enqueue({ kind, groupKey: unique("g"), payload: {}, runAt: at(5000) }, T0);
    expect(await jobs.claim("a", at(4999), 1000, [kind])).toBeNull();
    expect(await jobs.claim("a", at(5000), 1000, [kind])).not.toBeNull();
  });

  it("deduplicates pending and running jobs by key, and accepts the key again once done", async () => {
    const kind = kindFor();
    const key = unique("dedupe");
    const first = await jobs.enqueue({ kind, groupKey: unique("g"), payload: {}, dedupeKey: key }, T0);
    expect(first).not.toBeNull();
    expect(await jobs.enqueue({ kind, groupKey: unique("g"), payload: {}, dedupeKey: key }, T0)).toBeNull();
    await jobs.claim("a", T0, 1000, [kind]);
    expect(await jobs.enqueue({ kind, groupKey: unique("g"), payload: {}, dedupeKey: key }, T0)).toBeNull();
    await jobs.complete(first?.id ?? "", "a", T0);
    expect(await jobs.enqueue({ kind, groupKey: unique("g"), payload: {}, dedupeKey: key }, T0)).not.toBeNull();
  });

  it("retries a failed attempt after the backoff and gives up after max attempts with the last error", async () => {
    const kind = kindFor();
    const job = await jobs.enqueue({ kind, groupKey: unique("g"), payload: {}, maxAttempts: 2 }, T0);
    await jobs.claim("a", T0, 1000, [kind]);
    expect(await jobs.fail(job?.id ?? "", "a", at(10), "router unreachable", { retryInMs: 2000 })).toBe("retry");
    expect(await jobs.get(job?.id ?? "")).toMatchObject({
      status: "pending",
      lastError: "router unreachable",
      lockedBy: null,
    });
    expect(await jobs.claim("a", at(2009), 1000, [kind])).toBeNull();
    expect(await jobs.claim("a", at(2010), 1000, [kind])).toMatchObject({ attempts: 2 });
    expect(await jobs.fail(job?.id ?? "", "a", at(2020), "still unreachable", { retryInMs: 4000 })).toBe("failed");
    const failed = await jobs.get(job?.id ?? "");
    expect(failed).toMatchObject({ status: "failed", attempts: 2, lastError: "still unreachable" });
    expect(failed?.finishedAt?.toISOString()).toBe(at(2020).toISOString());
    expect(await jobs.claim("a", at(999_999), 1000, [kind])).toBeNull();
  });

  it("fails a permanent error at once", async () => {
    const kind = kindFor();
    const job = await jobs.enqueue({ kind, groupKey: unique("g"), payload: {} }, T0);
    await jobs.claim("a", T0, 1000, [kind]);
    expect(await jobs.fail(job?.id ?? "", "a", T0, "host key changed", { retryInMs: 1, permanent: true })).toBe(
      "failed",
    );
    expect(await jobs.get(job?.id ?? "")).toMatchObject({
      status: "failed",
      attempts: 1,
      lastError: "host key changed",
    });
  });

  it("re-claims a job whose agent died once the lease expires; the dead agent's late answer is ignored", async () => {
    const kind = kindFor();
    const job = await jobs.enqueue({ kind, groupKey: unique("g"), payload: {} }, T0);
    await jobs.claim("dead", T0, 10_000, [kind]);
    expect(await jobs.claim("alive", at(9_999), 10_000, [kind])).toBeNull();
    const again = await jobs.claim("alive", at(10_000), 10_000, [kind]);
    expect(again).toMatchObject({ id: job?.id, lockedBy: "alive", attempts: 2 });
    expect(await jobs.complete(job?.id ?? "", "dead", at(10_001))).toBe(false);
    expect(await jobs.fail(job?.id ?? "", "dead", at(10_001), "x", { retryInMs: 1 })).toBe("lost");
    expect(await jobs.extendLease(job?.id ?? "", "alive", at(15_000), 10_000)).toBe(true);
    expect(await jobs.claim("third", at(20_000), 10_000, [kind])).toBeNull();
    expect(await jobs.complete(job?.id ?? "", "alive", at(20_001))).toBe(true);
  });

  it("stops re-claiming a job whose agents keep dying", async () => {
    const kind = kindFor();
    const job = await jobs.enqueue({ kind, groupKey: unique("g"), payload: {}, maxAttempts: 1 }, T0);
    await jobs.claim("dead", T0, 1000, [kind]);
    expect(await jobs.claim("next", at(1000), 1000, [kind])).toBeNull();
    expect(await jobs.get(job?.id ?? "")).toMatchObject({
      status: "failed",
      lastError: expect.stringMatching(/lease expired/),
    });
  });

  it("never runs two jobs of one group at once, but other groups proceed", async () => {
    const kind = kindFor();
    const group = unique("router");
    const first = await jobs.enqueue({ kind, groupKey: group, payload: { n: 1 } }, T0);
    const second = await jobs.enqueue({ kind, groupKey: group, payload: { n: 2 } }, at(1));
    const other = await jobs.enqueue({ kind, groupKey: unique("router"), payload: { n: 3 } }, at(2));
    expect((await jobs.claim("a", at(10), 5000, [kind]))?.id).toBe(first?.id);
    expect((await jobs.claim("b", at(10), 5000, [kind]))?.id).toBe(other?.id);
    expect(await jobs.claim("c", at(10), 5000, [kind])).toBeNull();
    await jobs.complete(first?.id ?? "", "a", at(20));
    expect((await jobs.claim("c", at(20), 5000, [kind]))?.id).toBe(second?.id);
  });

  it("hands each job to exactly one of many concurrent claimers, one per group at a time", async () => {
    const kind = kindFor();
    const groups = Array.from({ length: 5 }, () => unique("router"));
    const ids = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const job = await jobs.enqueue({ kind, groupKey: groups[i % groups.length] ?? "", payload: { i } }, T0);
      if (job) ids.add(job.id);
    }
    const claimedBy = new Map<string, string>();
    const running = new Map<string, string>();
    let overlaps = 0;
    const worker = async (name: string) => {
      for (let idle = 0; idle < 50 && claimedBy.size < ids.size; ) {
        const job: JobRecord | null = await jobs.claim(name, at(100), 60_000, [kind]);
        if (!job) {
          idle++;
          await new Promise((resolve) => setImmediate(resolve));
          continue;
        }
        if (claimedBy.has(job.id)) throw new Error(`job ${job.id} claimed twice`);
        claimedBy.set(job.id, name);
        if (running.has(job.groupKey)) overlaps++;
        running.set(job.groupKey, job.id);
        await new Promise((resolve) => setImmediate(resolve));
        running.delete(job.groupKey);
        expect(await jobs.complete(job.id, name, at(200))).toBe(true);
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, i) => worker(`w${i}`)));
    expect(claimedBy.size).toBe(30);
    expect([...claimedBy.keys()].every((id) => ids.has(id))).toBe(true);
    expect(overlaps).toBe(0);
    const rows = await jobs.list({ kind });
    expect(rows.every((j) => j.status === "done" && j.attempts === 1)).toBe(true);
  });
});
