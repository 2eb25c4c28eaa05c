import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireJobEngine, type JobEngine } from "../jobs/job-engine.ts";
import { createTestDatabase, type TestDatabase } from "../testing/test-database.ts";
import { holdClusterLease, PROCESS_HOLDER } from "./cluster-metrics.ts";
import { renderMetrics } from "@fleet/runtime";

/**
 * docs/operations.md "Metrics": figures of the whole cluster are exported by one process, the
 * holder of the figure's lease. Two processes are played here by two holder names on one database.
 */
let db: TestDatabase;
let engine: JobEngine;
beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db, { monitorIntervalSeconds: 1 });
  await engine.defineQueue({ name: "test.depth" });
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

const scrape = async () => (await renderMetrics(undefined, undefined)).body;
const series = (text: string, name: string) => text.split("\n").filter((line) => line.startsWith(`${name}{`));

describe("cluster leases", () => {
  it("one holder at a time; the holder renews; another takes over only once it expired", async () => {
    const lease = `test.${crypto.randomUUID()}`;
    expect(await holdClusterLease(db, lease, "a")).toBe(true);
    expect(await holdClusterLease(db, lease, "b")).toBe(false);
    expect(await holdClusterLease(db, lease, "a")).toBe(true);
    await db.query("update cluster_leases set expires_at = now() - interval '1 second' where name = $1", [lease]);
    expect(await holdClusterLease(db, lease, "b")).toBe(true);
    expect(await holdClusterLease(db, lease, "a")).toBe(false);
  });

  it("exports queue depths and the oldest job's age only while this process holds their leases", async () => {
    await db.query("delete from cluster_leases where name in ('metrics.jobs', 'metrics.jobs-age')");
    const mine = await scrape();
    expect(series(mine, "fleet_jobs").length).toBeGreaterThan(0);
    expect(series(mine, "fleet_job_oldest_ready_age_seconds").length).toBeGreaterThan(0);
    // pg-boss's own queues are not ours to show.
    expect(mine).not.toMatch(/queue="__pgboss/);

    // Another process holds them now (until they expire): this one exports no series of them.
    await db.query(
      "update cluster_leases set holder = 'another process' where name in ('metrics.jobs', 'metrics.jobs-age')",
    );
    const theirs = await scrape();
    expect(series(theirs, "fleet_jobs")).toEqual([]);
    expect(series(theirs, "fleet_job_oldest_ready_age_seconds")).toEqual([]);
    expect(theirs).toContain("# TYPE fleet_jobs gauge");
  });

  it("reports the age of the oldest job waiting in a queue", async () => {
    await db.query("delete from cluster_leases where name = 'metrics.jobs-age'");
    const queue = `test.age-${crypto.randomUUID().slice(0, 8)}`;
    await engine.defineQueue({ name: queue });
    await engine.send(queue, {});
    await db.query("update pgboss.job set created_on = now() - interval '120 seconds' where name = $1", [queue]);
    const line = series(await scrape(), "fleet_job_oldest_ready_age_seconds").find((l) =>
      l.includes(`queue="${queue}"`),
    );
    expect(Number(line?.split(" ").pop())).toBeGreaterThanOrEqual(120);
  });

  it("build info names the version; the holder is this process", async () => {
    const text = await scrape();
    expect(text).toMatch(/^fleet_build_info\{version="\d+\.\d+\.\d+[^"]*",node_version="24\.[^"]+"\} 1$/m);
    expect(PROCESS_HOLDER).toContain(`/${process.pid}/`);
  });
});
