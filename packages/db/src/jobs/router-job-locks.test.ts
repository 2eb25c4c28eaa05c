import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Database, openDatabase } from "../database.ts";
import { createTestDatabase, type TestDatabase } from "../testing/index.ts";
import { openRouterJobLocks } from "./router-job-locks.ts";

// One router job at a time per router: within a process by its chain, across processes by an
// advisory lock on PostgreSQL. A second Database object on the same database stands for another
// process (its own chains, its own lock connection).

let db: TestDatabase;
let other: Database | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  if (db.url) other = await openDatabase({ databaseUrl: db.url, dataDir: "memory", poolSize: 1 });
});
afterAll(async () => {
  await other?.close();
  await db?.close();
});

it("takes many routers' locks at once, and holds one router's against another process until released", async () => {
  const locks = openRouterJobLocks(db);
  try {
    // A wave of jobs at once: every one runs, each with its router's lock.
    const ids = Array.from({ length: 50 }, () => crypto.randomUUID());
    let inside = 0;
    let most = 0;
    await Promise.all(
      ids.map((id) =>
        locks.run(id, async () => {
          inside++;
          most = Math.max(most, inside);
          await new Promise((resolve) => setImmediate(resolve));
          inside--;
        }),
      ),
    );
    expect(most).toBe(ids.length);
    if (!other) return;
    const theirs = openRouterJobLocks(other);
    try {
      const router = ids[0] ?? "";
      const order: string[] = [];
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let entered: () => void = () => {};
      const inFirst = new Promise<void>((resolve) => {
        entered = resolve;
      });
      const first = locks.run(router, async () => {
        order.push("first in");
        entered();
        await held;
        order.push("first out");
      });
      await inFirst;
      const second = theirs.run(router, async () => {
        order.push("second in");
      });
      // Once the other process's connection has tried (while the first holds it), it is still outside.
      await eventually(async () => {
        const [row] = await db.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity where datname = current_database()
             and application_name = 'fleet-router-locks' and query like '%pg_try_advisory_lock%'`,
        );
        return Number(row?.n) >= 2;
      }, "the other process's try");
      expect(order).toEqual(["first in"]);
      release();
      await Promise.all([first, second]);
      expect(order).toEqual(["first in", "first out", "second in"]);
    } finally {
      await theirs.close();
    }
  } finally {
    await locks.close();
  }
});
