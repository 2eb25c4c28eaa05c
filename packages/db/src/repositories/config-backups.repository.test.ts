import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryOf } from "../database.ts";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "../testing/index.ts";
import { type BackupRecord, ConfigBackupsRepository } from "./config-backups.repository.ts";

// The schedule's rules are the agent's (apps/tunnel-agent/src/jobs/store-config-read.test.ts);
// these are the statements it stands on.

let db: TestDatabase;
let backups: ConfigBackupsRepository;
const T0 = new Date("2026-11-21T12:00:00Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
const HOUR = 3_600_000;

beforeAll(async () => {
  db = await createTestDatabase();
  backups = new ConfigBackupsRepository(queryOf(db));
});
afterAll(async () => {
  await db?.close();
});

const read = (routerId: string, n: number) => ({
  routerId,
  content: `config ${n}`,
  sha256: `${n}`.padStart(64, "0"),
  normalizedSha256: `${n}`.padStart(64, "1"),
  bytes: 8,
  lines: 1,
  at: at(n * 1000),
});

describe("ConfigBackupsRepository", () => {
  it("claims routers with an address not queued since, never-queued first, at most `limit`", async () => {
    const owner = await makeUser(db);
    const a = await makeRouter(db, owner);
    const b = await makeRouter(db, owner);
    const c = await makeRouter(db, owner);
    await makeRouter(db, owner, { tunnelIp: null });

    const first = await backups.claimDue(at(-HOUR), at(0), 2);
    expect(first).toHaveLength(2);
    const second = await backups.claimDue(at(-HOUR), at(1), 10);
    expect([...first, ...second].sort()).toEqual([a.id, b.id, c.id].sort());
    // Queued within the window: nothing is due; past it, the longest waiting comes first.
    expect(await backups.claimDue(at(-HOUR), at(2), 10)).toEqual([]);
    expect((await backups.claimDue(at(HOUR / 2), at(HOUR), 2)).sort()).toEqual([...first].sort());
  });

  it("records a failure until cleared; a router that is gone records none", async () => {
    const router = await makeRouter(db, await makeUser(db));
    expect(await backups.lastFailure(router.id)).toBeNull();
    await backups.recordFailure(router.id, at(0), "x".repeat(600));
    expect(await backups.lastFailure(router.id)).toEqual({ failedAt: at(0), reason: "x".repeat(500) });
    await backups.recordFailure(router.id, at(5), "later");
    expect(await backups.lastFailure(router.id)).toEqual({ failedAt: at(5), reason: "later" });
    // A store's lock says whether there is a failure to clear (none: no write).
    expect((await backups.lockRouterWithLatest(router.id))?.failed).toBe(true);
    await backups.clearFailure(router.id);
    expect(await backups.lastFailure(router.id)).toBeNull();
    expect((await backups.lockRouterWithLatest(router.id))?.failed).toBe(false);

    const gone = crypto.randomUUID();
    await backups.recordFailure(gone, at(0), "gone");
    expect(await backups.lastFailure(gone)).toBeNull();
  });

  it("stores a version after the newest one, pages newest first, finds the previous version and prunes beyond the retention", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    const stored: BackupRecord[] = [];
    const store = async (n: number, retention: number) => {
      const version = await backups.insertIfNewest(
        stored.at(-1)?.id ?? null,
        { ...read(router.id, n), retention },
        {
          added: 1,
          removed: 1,
        },
      );
      if (!version) throw new Error("not stored");
      stored.push(version);
    };
    for (const n of [1, 2, 3, 4]) await store(n, 100);
    await backups.markChecked(stored[3]?.id ?? "", at(9000));

    const page = await backups.list(router.id, 2);
    expect(page.map((b) => b.id)).toEqual([stored[3]?.id, stored[2]?.id]);
    expect(page[0]?.checkedAt).toEqual(at(9000));
    const last = page[1];
    if (!last) throw new Error("no page");
    const next = await backups.list(router.id, 2, { createdAt: last.createdAt, id: last.id });
    expect(next.map((b) => b.id)).toEqual([stored[1]?.id, stored[0]?.id]);
    expect((await backups.latest(router.id))?.content).toBe("config 4");
    expect((await backups.previous(last))?.content).toBe("config 2");
    expect(await backups.get(router.id, stored[0]?.id ?? "")).toMatchObject({ content: "config 1", bytes: 8 });

    // A new version with a retention of 3 keeps it and the two before it.
    await store(5, 3);
    expect((await backups.list(router.id, 10)).map((b) => b.id)).toEqual([stored[4]?.id, stored[3]?.id, stored[2]?.id]);
    expect(await backups.lockRouterWithLatest(router.id)).toEqual({
      organizationId: owner.organizationId,
      latest: expect.objectContaining({ id: stored[4]?.id, checkedAt: at(5000), bytes: 8 }),
      failed: false,
    });
    // A look at a version that is no longer the newest stores nothing.
    expect(
      await backups.insertIfNewest(
        stored[3]?.id ?? null,
        { ...read(router.id, 6), retention: 3 },
        { added: 1, removed: 1 },
      ),
    ).toBeNull();
    expect(
      await backups.insertIfNewest(null, { ...read(router.id, 6), retention: 3 }, { added: 1, removed: 1 }),
    ).toBeNull();
    const bare = await makeRouter(db, owner);
    expect(await backups.lockRouterWithLatest(bare.id)).toEqual({
      organizationId: owner.organizationId,
      latest: null,
      failed: false,
    });
    expect(await backups.lockRouterWithLatest(crypto.randomUUID())).toBeNull();
  });
});
