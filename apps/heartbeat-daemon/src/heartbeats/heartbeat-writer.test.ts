import {
  acquireStatusFeed,
  HeartbeatsRepository,
  type HeartbeatWrite,
  RouterHealthRepository,
  type StatusFeedHandle,
} from "@fleet/db";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { hashHeartbeatToken, ManualClock } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturingLogger } from "../testing/daemon-harness.ts";
import { HealthTracker } from "./health-tracker.ts";
import { HeartbeatIntake } from "./heartbeat-intake.ts";
import { HeartbeatWriter, type HeartbeatWriterOptions, mergeWrites } from "./heartbeat-writer.ts";
import { ResumptionService } from "./resumption.service.ts";

let db: TestDatabase;
let feed: StatusFeedHandle;
let owner: { organizationId: string; teamId: string };

const row = async (id: string) =>
  (
    await db.query<Record<string, unknown>>(
      `select coalesce(l.has_pulse, false) as has_pulse, r.identity, r.reported_metadata
       from routers r left join router_liveness l on l.router_id = r.id where r.id = $1`,
      [id],
    )
  )[0];

/** A heartbeat of a router made with its token (a bare id: a router that has no row). */
const write = (
  router: string | { id: string; heartbeatToken: string },
  fields: Partial<HeartbeatWrite> = {},
): HeartbeatWrite => ({
  routerId: typeof router === "string" ? router : router.id,
  tokenHash: typeof router === "string" ? "0".repeat(64) : hashHeartbeatToken(router.heartbeatToken),
  seenAt: new Date(),
  peer: "127.0.0.1",
  ...fields,
});

beforeAll(async () => {
  db = await createTestDatabase();
  owner = await makeUser(db);
  feed = await acquireStatusFeed(db);
});

afterAll(async () => {
  await feed?.release();
  await db?.close();
});

const startWriter = async (options: Partial<HeartbeatWriterOptions> = {}) => {
  const store = new HeartbeatsRepository(db);
  const { lines, logger } = capturingLogger();
  const writer = new HeartbeatWriter({
    store,
    resumption: new ResumptionService({
      store,
      db,
      feed: feed.feed,
      coverage: { current: await store.coverage() },
      intervalMs: 1_000,
      missedHeartbeats: 3,
      logger,
    }),
    intervalMs: 1_000,
    missedHeartbeats: 3,
    flushIntervalMs: 250,
    maxBatchRows: 10_000,
    logger,
    onGone: () => {},
    onReplaced: () => {},
    ...options,
  });
  return { writer, lines };
};

/**
 * A writer whose database can be switched unreachable. The database is outside the writer: an
 * unreachable one is simulated at the store boundary. `attempts` counts the writes tried.
 */
const writerWithOutage = async (flushIntervalMs: number) => {
  const { lines, logger } = capturingLogger();
  const real = new HeartbeatsRepository(db);
  const state: { down: boolean; attempts: number; gate?: Promise<void> } = { down: true, attempts: 0 };
  const writer = new HeartbeatWriter({
    store: {
      chunkSize: real.chunkSize,
      applyHeartbeats: async (rows, quietGapMs) => {
        state.attempts += 1;
        if (state.down) throw Object.assign(new Error("connection refused"), { code: "ECONNREFUSED" });
        await state.gate;
        return real.applyHeartbeats(rows, quietGapMs);
      },
    },
    resumption: new ResumptionService({
      store: real,
      db,
      feed: feed.feed,
      coverage: { current: await real.coverage() },
      intervalMs: 1_000,
      missedHeartbeats: 3,
      logger,
    }),
    intervalMs: 1_000,
    missedHeartbeats: 3,
    flushIntervalMs,
    maxBatchRows: 10_000,
    logger,
    onGone: () => {},
    onReplaced: () => {},
  });
  return { writer, lines, state };
};

describe('HeartbeatWriter with a row the database refuses (docs/api.md "Routers and heartbeats")', () => {
  it("writes every other router's heartbeat, drops only the poison row and logs it once, without a stack", async () => {
    const { writer, lines } = await startWriter();
    const healthy = await Promise.all(
      Array.from({ length: 7 }, () => makeRouter(db, owner, { identity: "", hasPulse: false })),
    );
    const poison = await makeRouter(db, owner, { identity: "before", hasPulse: false });
    // Passes the writer (the parser would refuse it), refused by PostgreSQL: jsonb holds no \u0000.
    const poisonWrite = () => write(poison, { identity: "poisoned", metadata: { note: "bad\u0000" } });
    for (const [i, router] of healthy.entries()) {
      if (i === 3) writer.enqueue(poisonWrite());
      writer.enqueue(write(router, { identity: `healthy-${i}` }));
    }
    await writer.flush();
    for (const [i, router] of healthy.entries()) {
      expect(await row(router.id)).toMatchObject({ has_pulse: true, identity: `healthy-${i}` });
    }
    expect(await row(poison.id)).toMatchObject({ has_pulse: false, identity: "before" });
    expect(writer.pending).toBe(0);
    expect(writer.stats.dropped).toBe(1);

    // The same router keeps sending it: dropped each time, logged once, the others still written.
    const [first] = healthy;
    for (let n = 0; n < 3; n++) {
      writer.enqueue(poisonWrite());
      if (first) writer.enqueue(write(first, { identity: `again-${n}` }));
      await writer.flush();
    }
    if (first) expect(await row(first.id)).toMatchObject({ identity: "again-2" });
    expect(writer.stats.dropped).toBe(4);
    const refused = lines.filter((l) => l.routerId === poison.id);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ level: 50, code: expect.stringMatching(/^22/) });
    expect(lines.some((l) => JSON.stringify(l).includes("stack"))).toBe(false);
    expect(lines.filter((l) => String(l.msg).includes("failing"))).toHaveLength(0);
    await writer.close();
  });

  it("keeps every row for a retry when the database is unavailable, logging once", async () => {
    const router = await makeRouter(db, owner, { identity: "", hasPulse: false });
    const { writer, lines, state } = await writerWithOutage(250);
    writer.enqueue(write(router, { identity: "kept" }));
    for (let n = 0; n < 5; n++) await writer.flush();
    expect(writer.pending).toBe(1);
    expect(writer.stats.dropped).toBe(0);
    expect(lines.filter((l) => String(l.msg).includes("failing"))).toHaveLength(1);
    state.down = false;
    await writer.flush();
    expect(writer.pending).toBe(0);
    expect(await row(router.id)).toMatchObject({ has_pulse: true, identity: "kept" });
    expect(lines.some((l) => String(l.msg).includes("recovered"))).toBe(true);
    await writer.close();
  });
});

describe('HeartbeatWriter.caughtUp (the sweeps wait for it; docs/api.md "Routers and heartbeats")', () => {
  it("stays false while the retry that ends an outage is still writing the buffered rows", async () => {
    const router = await makeRouter(db, owner, { identity: "", hasPulse: false });
    const { writer, state } = await writerWithOutage(250);
    expect(writer.caughtUp).toBe(true);
    writer.enqueue(write(router, { identity: "buffered" }));
    await writer.flush();
    expect(writer.caughtUp).toBe(false);
    // The database is back, but the retry's statement has not finished yet.
    let release: () => void = () => {};
    state.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    state.down = false;
    const retry = writer.flush();
    await eventually(() => state.attempts === 2, "the retry to reach the database");
    expect(writer.pending).toBe(0);
    expect(writer.caughtUp).toBe(false);
    release();
    await retry;
    expect(writer.caughtUp).toBe(true);
    expect(await row(router.id)).toMatchObject({ identity: "buffered" });
    await writer.close();
  });
});

describe("HeartbeatWriter's own schedule", () => {
  it("retries a failed flush by itself once started, and runs no timer while nothing is pending", async () => {
    const router = await makeRouter(db, owner, { identity: "", hasPulse: false });
    const { writer, state } = await writerWithOutage(20);
    writer.start();
    writer.enqueue(write(router, { identity: "retried" }));
    // No flush() from here: the enqueue's own flush fails, and the writer tries again by itself.
    await eventually(() => state.attempts >= 3, "three attempts");
    state.down = false;
    await eventually(async () => (await row(router.id))?.identity === "retried", "the retried row");
    expect(writer.pending).toBe(0);
    // Written: nothing pending, so no retry is armed (no timer wakes the process for nothing).
    expect(writer.flushScheduled).toBe(false);
    await writer.close();
  });
});

describe("HeartbeatWriter: routers beating on time wait for the steady interval", () => {
  // startWriter: a 1 s interval and 3 missed heartbeats, so the quiet gap is 1.5 s (1 s + the
  // jitter tolerance); flushes 250 ms apart, a steady flush 60 s after the last.
  const QUIET_GAP = 1_500;
  const NOW = 1_000_000;

  it("defers a flush while every pending heartbeat is on time; one at the quiet gap (not 1 ms less) or a first one brings it forward", async () => {
    const [a, b, c] = [
      await makeRouter(db, owner, { identity: "" }),
      await makeRouter(db, owner, { identity: "" }),
      await makeRouter(db, owner, { identity: "" }),
    ];
    const { writer } = await startWriter({ steadyFlushMs: 60_000, now: () => NOW });
    const t = Date.now();
    writer.enqueue(write(a, { seenAt: new Date(t) }));
    // A first heartbeat: flushed at once (an immediate); the last flush was then at NOW.
    await eventually(() => writer.flushDueAt === null && writer.pending === 0, "the first flush");

    writer.enqueue(write(a, { seenAt: new Date(t + QUIET_GAP - 1), identity: "steady" }), t);
    expect(writer.flushDueAt).toBe(NOW + 60_000);
    writer.enqueue(write(b, { seenAt: new Date(t + QUIET_GAP), identity: "after-gap" }), t);
    expect(writer.flushDueAt).toBe(NOW + 250);
    // The timer armed for it writes both, with no flush() from here.
    await eventually(async () => (await row(b.id))?.identity === "after-gap", "the flush brought forward");
    expect((await row(a.id))?.identity).toBe("steady");
    expect(writer.flushDueAt).toBeNull();

    writer.enqueue(write(a, { seenAt: new Date(t + QUIET_GAP) }), t + QUIET_GAP - 1);
    expect(writer.flushDueAt).toBe(NOW + 60_000);
    writer.enqueue(write(c, { seenAt: new Date(t + QUIET_GAP), identity: "first" }));
    expect(writer.flushDueAt).toBe(NOW + 250);
    await eventually(async () => (await row(c.id))?.identity === "first", "a first heartbeat's flush");
    await writer.close();
  });

  it("the intake remembers a router's last heartbeat on its cached owner: the next one on time is steady, one through a fresh owner is not", async () => {
    const router = await makeRouter(db, owner, { identity: "" });
    const clock = new ManualClock(Date.now());
    const { writer } = await startWriter({ steadyFlushMs: 60_000, now: () => NOW });
    const { logger } = capturingLogger();
    const settled = () => eventually(() => writer.flushDueAt === null, "the armed flush to run");
    const intake = new HeartbeatIntake({ writer, clock, logger });
    const cached = {
      routerId: router.id,
      teamId: owner.teamId,
      tunnelIp: null,
      tokenHash: hashHeartbeatToken(router.heartbeatToken),
    };
    const beat = (who: typeof cached) => expect(intake.accept(who, '{"type":"heartbeat"}', "192.0.2.1")).toBeNull();

    beat(cached);
    expect(writer.flushDueAt).toBe(Number.NEGATIVE_INFINITY); // never flushed: at once
    await settled();
    clock.advance(QUIET_GAP - 1);
    beat(cached);
    expect(writer.flushDueAt).toBe(NOW + 60_000);
    await writer.flush();
    clock.advance(QUIET_GAP);
    beat(cached);
    expect(writer.flushDueAt).toBe(NOW + 250);
    await writer.flush();
    clock.advance(1);
    beat({ ...cached }); // the token was checked again: a new cache entry knows no heartbeat yet
    expect(writer.flushDueAt).toBe(NOW + 250);
    await writer.close();
  });
});

describe('HeartbeatWriter: a heartbeat a change step waits for (docs/routeros.md "The guard")', () => {
  it("is written at once and reported once; one seen before the wait began goes with the batch", async () => {
    const [a, b] = [await makeRouter(db, owner, { identity: "" }), await makeRouter(db, owner, { identity: "" })];
    const reported: Array<{ routerId: string; seenMs: number }> = [];
    const { writer } = await startWriter({
      steadyFlushMs: 60_000,
      now: () => 1_000_000,
      onExpedited: (beats) => reported.push(...beats),
    });
    const t = Date.now();
    writer.enqueue(write(a, { seenAt: new Date(t) }));
    writer.enqueue(write(b, { seenAt: new Date(t) }));
    await eventually(() => writer.pending === 0, "the first flush");

    writer.expedite(a.id, t + 1_000);
    writer.expedite(b.id, t + 1_000);
    // Steady heartbeats wait the steady interval (60 s here) unless a step waits for them.
    writer.enqueue(write(b, { seenAt: new Date(t + 999) }), t);
    expect(writer.flushDueAt).toBe(1_000_000 + 60_000);
    writer.enqueue(write(a, { seenAt: new Date(t + 1_000), identity: "awaited" }), t);
    await eventually(async () => (await row(a.id))?.identity === "awaited", "the awaited heartbeat written");
    expect(reported).toEqual([{ routerId: a.id, seenMs: t + 1_000 }]);
    // Reported once: the router's next heartbeat goes with the batch again.
    writer.enqueue(write(a, { seenAt: new Date(t + 2_000) }), t + 1_000);
    expect(writer.flushDueAt).toBe(1_000_000 + 60_000);
    await writer.close();
    expect(reported.map((r) => r.routerId)).toEqual([a.id]);
  });
});

describe("HeartbeatWriter: two heartbeats of one router before a flush", () => {
  it("writes the newer reported fields over the older, keeps what the newer did not report and merges metadata", async () => {
    const router = await makeRouter(db, owner, { identity: "", hasPulse: false });
    const { writer } = await startWriter();
    const first = write(router, { identity: "old-name", model: "RB5009", metadata: { site: "a", rack: "1" } });
    writer.enqueue(first);
    writer.enqueue(write(router, { identity: "new-name", model: null, metadata: { rack: "2" } }));
    expect(writer.pending).toBe(1);
    await writer.flush();
    const stored = (
      await db.query<Record<string, unknown>>("select identity, model, reported_metadata from routers where id = $1", [
        router.id,
      ])
    )[0];
    expect(stored).toEqual({ identity: "new-name", model: "RB5009", reported_metadata: { site: "a", rack: "2" } });
    await writer.close();
  });

  it("merges a failed flush's row under a newer pending one without changing either", () => {
    const older = write("r", { identity: "old", uptimeSeconds: 5 });
    const newer = write("r", { identity: undefined, uptimeSeconds: 9 });
    const snapshot = [structuredClone(older), structuredClone(newer)];
    expect(mergeWrites(older, newer)).toMatchObject({ identity: "old", uptimeSeconds: 9, seenAt: newer.seenAt });
    expect([older, newer]).toEqual(snapshot);
  });
});

describe("HeartbeatWriter: the latest health values go with the heartbeat's liveness write", () => {
  it("writes them with the pending heartbeat, and with the next flush when one took the heartbeat first", async () => {
    const router = await makeRouter(db, owner);
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12, 0, 0));
    const written: HeartbeatWrite[] = [];
    const real = new HeartbeatsRepository(db);
    const store = {
      chunkSize: real.chunkSize,
      applyHeartbeats: (writes: readonly HeartbeatWrite[], quietGapMs: number) => {
        written.push(...writes.map((w) => ({ ...w })));
        return real.applyHeartbeats(writes, quietGapMs);
      },
    };
    const tracker = new HealthTracker({ sampleSeconds: 300, clock });
    const { writer } = await startWriter({ store, health: { tracker, write: async () => {} } });
    const cpuOf = async () => (await new RouterHealthRepository(db).latest(router.id))?.cpuLoad;
    const beat = (cpu: number) => {
      clock.advance(30_000);
      writer.enqueue(write(router, { seenAt: clock.now() }));
      writer.observeHealth(router.id, clock.nowMs(), { resources: { cpu_load: cpu } });
    };
    beat(10);
    await writer.flush();
    expect(written.at(-1)?.health).toEqual({ atMs: clock.nowMs(), values: expect.objectContaining({ cpuLoad: 10 }) });
    expect(await cpuOf()).toBe(10);
    // A flush took the heartbeat before its health came (one was due at once): the next flush writes it.
    clock.advance(30_000);
    writer.enqueue(write(router, { seenAt: clock.now() }));
    await writer.flush();
    writer.observeHealth(router.id, clock.nowMs(), { resources: { cpu_load: 20 } });
    expect(await cpuOf()).toBe(10);
    beat(30);
    await writer.flush();
    expect(await cpuOf()).toBe(30);
    await writer.close();
  });
});

describe("HeartbeatsRepository.applyHeartbeats: what a flush reads back", () => {
  it("reports a router without a pulse, a gap of the quiet gap or more (not 1 ms less) and a gone row; writes them all", async () => {
    const store = new HeartbeatsRepository(db);
    const quiet = 45_000;
    const router = await makeRouter(db, owner, { identity: "", hasPulse: false });
    const t0 = Date.parse("2026-11-23T10:00:00Z");
    const at = (ms: number) => write(router, { seenAt: new Date(ms) });
    const seen = async () =>
      (
        await db.query<{ ms: number }>(
          "select extract(epoch from last_seen_at) * 1000 as ms from router_liveness where router_id = $1",
          [router.id],
        )
      )[0]?.ms;

    // Never seen, no pulse: reported with its state before the heartbeat.
    expect(await store.applyHeartbeats([at(t0)], quiet)).toEqual({
      notable: [{ routerId: router.id, teamId: owner.teamId, previousHasPulse: false, previousSeenAt: null }],
      gone: [],
      replaced: [],
    });
    // On time (a gap 1 ms under the quiet gap): written, not reported.
    expect(await store.applyHeartbeats([at(t0 + quiet - 1)], quiet)).toEqual({ notable: [], gone: [], replaced: [] });
    expect(Number(await seen())).toBe(t0 + quiet - 1);
    // A gap of exactly the quiet gap: reported.
    const edge = await store.applyHeartbeats([at(t0 + 2 * quiet - 1)], quiet);
    expect(edge.notable).toEqual([
      { routerId: router.id, teamId: owner.teamId, previousHasPulse: true, previousSeenAt: new Date(t0 + quiet - 1) },
    ]);
    // The sweeper took its pulse: the next heartbeat is reported however soon it comes.
    await db.query("update router_liveness set has_pulse = false where router_id = $1", [router.id]);
    const flipped = await store.applyHeartbeats([at(t0 + 2 * quiet)], quiet);
    expect(flipped.notable.map((n) => n.previousHasPulse)).toEqual([false]);
    // A router whose row is gone is reported as gone, beside a quiet one in the same statement.
    const missing = "00000000-0000-4000-8000-00000000dead";
    expect(await store.applyHeartbeats([at(t0 + 2 * quiet + 1), write(missing)], quiet)).toEqual({
      notable: [],
      gone: [missing],
      replaced: [],
    });
    expect(Number(await seen())).toBe(t0 + 2 * quiet + 1);
  });

  it("writes routers only when a reported fact changes; liveness (last seen, peer, uptime) every time", async () => {
    const store = new HeartbeatsRepository(db);
    const router = await makeRouter(db, owner, { identity: "", hasPulse: false });
    const facts = { identity: "gw", model: "RB5009", uptimeSeconds: 10, metadata: { site: "a" } };
    const version = async () =>
      (
        await db.query<{ x: string; uptime: number; from: string }>(
          `select r.xmin::text as x, l.uptime_seconds::int as uptime, l.last_seen_from as from
           from routers r join router_liveness l on l.router_id = r.id where r.id = $1`,
          [router.id],
        )
      )[0];
    await store.applyHeartbeats([write(router, facts)], 45_000);
    const first = await version();
    // The same facts (metadata a subset of what is stored): the routers row is not rewritten.
    await store.applyHeartbeats([write(router, { ...facts, uptimeSeconds: 40, peer: "127.0.0.2" })], 45_000);
    const same = await version();
    expect(same).toEqual({ x: first?.x, uptime: 40, from: "127.0.0.2" });
    // One fact changes (a metadata value): the routers row is rewritten with it.
    await store.applyHeartbeats([write(router, { ...facts, metadata: { site: "b" } })], 45_000);
    const changed = await version();
    expect(changed?.x).not.toBe(first?.x);
    expect((await row(router.id))?.reported_metadata).toEqual({ site: "b" });
  });
});
