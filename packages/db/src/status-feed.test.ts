import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireStatusFeed, type StatusFeedHandle } from "./status-feed.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";

let db: TestDatabase;
let sender: StatusFeedHandle;

beforeAll(async () => {
  db = await createTestDatabase();
  sender = await acquireStatusFeed(db);
});

afterAll(async () => {
  await sender?.release();
  await db?.close();
});

describe('the status feed\'s change signals (docs/routeros.md "The guard")', () => {
  it("carries each kind to its own listeners, over LISTEN/NOTIFY on PostgreSQL, in batches past one payload", async () => {
    const beats: string[] = [];
    const awaited: string[] = [];
    const offBeats = sender.feed.onSignal("router.beat", (item) => beats.push(item));
    const offAwaited = sender.feed.onSignal("change.awaiting", (item) => awaited.push(item));
    const ids = Array.from({ length: 250 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}@${i}`);
    await sender.feed.signal("router.beat", ids);
    await sender.feed.signal("change.awaiting", ["a"]);
    await eventually(() => beats.length === 250 && awaited.length === 1, "the signals delivered");
    expect(beats).toEqual(ids);
    expect(awaited).toEqual(["a"]);
    offBeats();
    await sender.feed.signal("router.beat", ["late"]);
    await sender.feed.signal("change.awaiting", ["b"]);
    await eventually(() => awaited.length === 2, "the later signal delivered");
    expect(beats).toHaveLength(250);
    offAwaited();
  });
});
