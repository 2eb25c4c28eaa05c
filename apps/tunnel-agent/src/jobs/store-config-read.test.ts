import { ConfigBackupsRepository, queryOf } from "@fleet/db";
import {
  createTestDatabase,
  databaseFingerprint,
  makeRouter,
  makeUser,
  makeWebhook,
  type TestDatabase,
} from "@fleet/db/testing";
import { createHash } from "node:crypto";
import { digestConfigExport } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countChangedLines, storeConfigRead } from "./backup-router.ts";
import {
  countChangedLinesLinear,
  countSmallChange,
  INLINE_DIFF_EDITS,
  INLINE_DIFF_LINES,
  offLoopLineCounts,
} from "./count-changes.ts";

// The service tier (docs/contributing.md "Add a test"): the backup use case on a real database
// with the real migrations and repositories; the router's export is given as text.

let db: TestDatabase;
const T0 = Date.UTC(2026, 10, 21, 12);
const HOUR = 3_600_000;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

const exportOf = (rules: readonly string[]) =>
  ["# 2026-11-21 12:00:00 by RouterOS 7.16.2", "/ip firewall filter", ...rules].join("\r\n");

const read = (routerId: string, content: string, hours: number, retention = 10) =>
  storeConfigRead(
    db,
    { routerId, content, ...digestConfigExport(content), at: new Date(T0 + hours * HOUR), retention },
    countChangedLines,
  );

const auditOf = (routerId: string) =>
  db.query<{ action: string; details: Record<string, unknown> }>(
    "select action, details from audit_log where router_id = $1 and action like 'router.config.%' order by occurred_at",
    [routerId],
  );

/** The database as storeConfigRead takes it, counting the transactions opened through it. */
const countingTransactions = () => {
  const handle = {
    transactions: 0,
    query: db.query,
    transaction: ((work) => {
      handle.transactions += 1;
      return db.transaction(work);
    }) as typeof db.transaction,
  };
  return handle;
};

describe("storeConfigRead (service tier)", () => {
  it("stores the first read without an entry, an equal read only as checked, a changed one with router.config.changed", async () => {
    const router = await makeRouter(db, await makeUser(db));
    const backups = new ConfigBackupsRepository(queryOf(db));
    const first = await read(router.id, exportOf(["add chain=input action=accept"]), 0);
    expect(first).toMatchObject({ kind: "created", previous: null });
    expect(await auditOf(router.id)).toEqual([]);

    const same = await read(router.id, exportOf(["add chain=input action=accept"]), 1);
    expect(same).toMatchObject({ kind: "unchanged", backup: { id: first?.backup.id } });
    expect((await backups.list(router.id, 10)).map((b) => b.checkedAt.getTime())).toEqual([T0 + HOUR]);
    expect(await auditOf(router.id)).toEqual([]);

    const changed = await read(
      router.id,
      exportOf(["add chain=input action=drop", "add chain=forward action=accept"]),
      2,
    );
    expect(changed).toMatchObject({ kind: "created", linesAdded: 2, linesRemoved: 1 });
    expect(await auditOf(router.id)).toEqual([
      {
        action: "router.config.changed",
        details: {
          backup_id: changed?.backup.id,
          previous_backup_id: first?.backup.id,
          lines_added: 2,
          lines_removed: 1,
        },
      },
    ]);
  });

  it("a stored read clears the failure shown beside the list", async () => {
    const router = await makeRouter(db, await makeUser(db));
    const backups = new ConfigBackupsRepository(queryOf(db));
    await read(router.id, exportOf([]), 0);
    await backups.recordFailure(router.id, new Date(T0 + HOUR), "unreachable");
    expect(await backups.lastFailure(router.id)).not.toBeNull();
    await read(router.id, exportOf([]), 2);
    expect(await backups.lastFailure(router.id)).toBeNull();
  });

  it("an unchanged read is marked in one statement after its look, in no transaction (issue 39)", async () => {
    const router = await makeRouter(db, await makeUser(db));
    const backups = new ConfigBackupsRepository(queryOf(db));
    const first = await read(router.id, exportOf(["add comment=a"]), 0);
    const counting = countingTransactions();
    const content = exportOf(["add comment=a"]);
    const at = new Date(T0 + HOUR);
    const same = await storeConfigRead(
      counting,
      { routerId: router.id, content, ...digestConfigExport(content), at, retention: 10 },
      countChangedLines,
    );
    expect(same).toEqual({ kind: "unchanged", backup: { ...first?.backup, checkedAt: at } });
    expect(counting.transactions).toBe(0);
    expect((await backups.list(router.id, 10)).map((b) => b.checkedAt.getTime())).toEqual([at.getTime()]);

    // A version stored after the look: nothing is marked, the read goes the long way.
    const { normalizedSha256 } = digestConfigExport(content);
    await read(router.id, exportOf(["add comment=b"]), 2);
    const before = await databaseFingerprint(db);
    expect(await backups.markCheckedIfNewest(router.id, first?.backup.id ?? "", normalizedSha256, at)).toBe(false);
    expect(await backups.markCheckedIfNewest(crypto.randomUUID(), first?.backup.id ?? "", normalizedSha256, at)).toBe(
      false,
    );
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("a changed read is stored in one statement, in no transaction; one stored since its look goes the long way (issue 39)", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    const first = await read(router.id, exportOf(["add comment=a"]), 0);
    const counting = countingTransactions();
    const store = (content: string, hours: number, countChanges = countChangedLines) =>
      storeConfigRead(
        counting,
        {
          routerId: router.id,
          content,
          ...digestConfigExport(content),
          at: new Date(T0 + hours * HOUR),
          retention: 10,
        },
        countChanges,
      );
    const changed = await store(exportOf(["add comment=b"]), 1);
    expect(changed).toMatchObject({ kind: "created", previous: first?.backup, linesAdded: 1, linesRemoved: 1 });
    expect(counting.transactions).toBe(0);

    // Entries go to the outbox from here on; another version is stored while the lines are counted.
    await makeWebhook(db, owner.organizationId);
    let between = null as Awaited<ReturnType<typeof read>>;
    const late = await store(exportOf(["add comment=d", "add comment=e"]), 3, async (previous, next) => {
      between = await read(router.id, exportOf(["add comment=c"]), 2);
      return countChangedLines(previous, next);
    });
    expect(counting.transactions).toBe(1);
    // Counted against the version stored in between (the linear count), not the one looked at.
    expect(late).toMatchObject({
      kind: "created",
      previous: { id: between?.backup.id },
      linesAdded: 2,
      linesRemoved: 1,
    });
    expect(
      (await new ConfigBackupsRepository(queryOf(db)).list(router.id, 10)).map((b) => b.createdAt.getTime()),
    ).toEqual([3, 2, 1, 0].map((h) => T0 + h * HOUR));

    // Both ways write the entry alike: the system, the router, its team, the outbox state.
    const entries = await db.query<Record<string, unknown>>(
      `select actor_type, actor_id, target_type, target_id, team_id, dispatched_at is null as queued,
         details->>'previous_backup_id' as previous from audit_log
        where router_id = $1 and action = 'router.config.changed' order by occurred_at`,
      [router.id],
    );
    const entry = { actor_type: "system", actor_id: null, target_type: "router", target_id: router.id };
    expect(entries).toEqual([
      { ...entry, team_id: owner.teamId, queued: false, previous: first?.backup.id },
      { ...entry, team_id: owner.teamId, queued: true, previous: changed?.backup.id },
      { ...entry, team_id: owner.teamId, queued: true, previous: between?.backup.id },
    ]);

    // Looked at an older version: nothing is written.
    const before = await databaseFingerprint(db);
    const content = exportOf(["add comment=f"]);
    const stale = { routerId: router.id, content, ...digestConfigExport(content), at: new Date(T0 + 4 * HOUR) };
    const backups = new ConfigBackupsRepository(queryOf(db));
    const changes = { added: 1, removed: 1 };
    expect(await backups.insertIfNewest(first?.backup.id ?? "", { ...stale, retention: 10 }, changes)).toBeNull();
    expect(
      await backups.insertIfNewest(
        late?.backup.id ?? "",
        { ...stale, routerId: crypto.randomUUID(), retention: 10 },
        changes,
      ),
    ).toBeNull();
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("keeps the newest `retention` versions; a router that is gone changes nothing", async () => {
    const router = await makeRouter(db, await makeUser(db));
    for (let i = 0; i < 4; i++) await read(router.id, exportOf([`add comment=v${i}`]), i, 3);
    const kept = await new ConfigBackupsRepository(queryOf(db)).list(router.id, 10);
    expect(kept.map((b) => b.createdAt.getTime())).toEqual([T0 + 3 * HOUR, T0 + 2 * HOUR, T0 + HOUR]);
    // A retention of 1 keeps the new version alone.
    await read(router.id, exportOf(["add comment=v9"]), 4, 1);
    const one = await new ConfigBackupsRepository(queryOf(db)).list(router.id, 10);
    expect(one.map((b) => b.createdAt.getTime())).toEqual([T0 + 4 * HOUR]);

    const before = await databaseFingerprint(db);
    expect(await read(crypto.randomUUID(), exportOf(["add comment=x"]), 9)).toBeNull();
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("a version's sha256 is the hash of the text it serves; an unchanged read is recognised by the normalized one", async () => {
    const router = await makeRouter(db, await makeUser(db));
    const content = exportOf(["add chain=input action=accept"]);
    const first = await read(router.id, content, 0);
    const [row] = await db.query<{ sha256: string; content: string }>(
      "select sha256, content from router_config_backups where id = $1",
      [first?.backup.id],
    );
    expect(row?.sha256).toBe(
      createHash("sha256")
        .update(Buffer.from(row?.content ?? "", "utf8"))
        .digest("hex"),
    );
    expect(first?.backup.sha256).toBe(row?.sha256);
    // Another date on the first line: the same configuration, no new version.
    const again = await read(router.id, content.replace("12:00:00", "13:00:00"), 1);
    expect(again).toMatchObject({ kind: "unchanged", backup: { id: first?.backup.id, sha256: row?.sha256 } });
  });
});

describe("counting changed lines off the event loop", () => {
  const lines = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `add comment=${tag}-${i}`);

  it("counts with a diff: a moved line is a removal and an addition", async () => {
    // A last empty entry: every line ends with its line break.
    const before = exportOf(["a", "b", "c", ""]);
    const moved = exportOf(["b", "c", "a", ""]);
    expect(await countChangedLines(before, moved)).toEqual({ added: 1, removed: 1 });
    expect(await countChangedLines(before, exportOf(["a", "x", "c", "d", ""]))).toEqual({ added: 2, removed: 1 });
    // 40 lines moved to the end: beyond the event loop's bound, the thread's diff counts them (the
    // linear count would see no change at all).
    const block = lines("a", 100);
    const shifted = [...block.slice(40), ...block.slice(0, 40)];
    expect(await countChangedLines(exportOf([...block, ""]), exportOf([...shifted, ""]))).toEqual({
      added: 40,
      removed: 40,
    });
  });

  it("counts a small change on the event loop, up to its bounds of lines and edits", () => {
    const text = (xs: string[]) => `${xs.join("\n")}\n`;
    const block = lines("a", 100);
    // INLINE_DIFF_EDITS (32) edits: 16 lines replaced; one line more is past the bound.
    const replaced = [...lines("b", 16), ...block.slice(16)];
    expect(countSmallChange(text(block), text(replaced))).toEqual({ added: 16, removed: 16 });
    expect(INLINE_DIFF_EDITS).toBe(32);
    expect(countSmallChange(text(block), text([...replaced, "add comment=extra"]))).toBeUndefined();
    // INLINE_DIFF_LINES (2,000) lines of both texts together, one changed; one line more is past it.
    const half = lines("c", INLINE_DIFF_LINES / 2);
    const touched = [...half.slice(0, -1), "add comment=touched"];
    expect(countSmallChange(text(half), text(touched))).toEqual({ added: 1, removed: 1 });
    expect(countSmallChange(text(half), text([...touched, "add comment=more"]))).toBeUndefined();
  });

  it("past its time the diff gives way to the linear count, which stores the version anyway", async () => {
    // 8,000 lines that all change: quadratic for jsdiff, far beyond a 1 ms budget.
    const counted = await offLoopLineCounts(1)(exportOf(lines("a", 8_000)), exportOf(lines("b", 8_000)));
    expect(counted).toEqual({ added: 8_000, removed: 8_000 });
    expect(countChangedLinesLinear(exportOf(["a", "b", "b"]), exportOf(["b", "c", "a"]))).toEqual({
      added: 1,
      removed: 1,
    });
  });
});
