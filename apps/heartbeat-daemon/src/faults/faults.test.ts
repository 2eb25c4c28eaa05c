import {
  AuditLogRepository,
  acquireStatusFeed,
  type Database,
  HeartbeatsRepository,
  openDatabase,
  type StatusFeedHandle,
} from "@fleet/db";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { ManualClock, type TRouterStatusEvent } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CoverageHolder } from "../heartbeats/coverage-holder.ts";
import { connectOk, type DaemonHarness, startDaemonHarness } from "../testing/daemon-harness.ts";
import { nextSweepInMs, type SweepMemo, type SweepResult, sweepFaults } from "./fault-sweeper.ts";

// On PostgreSQL events reach the feed through NOTIFY on another connection: the default 1 s of
// expect.poll is too short under load.
const EVENTS_DELIVERED = { timeout: 15_000 };

const I = 1_000;
const MISSED = 3;
const GRACE = 500; // 2 x flushIntervalMs
const tuning = { flushIntervalMs: 250, coverageGapMs: 5_000 };

let db: TestDatabase;
let h: DaemonHarness;
let feed: StatusFeedHandle;
let owner: { organizationId: string; teamId: string };
const clock = new ManualClock(Date.UTC(2026, 10, 21, 12, 0, 0));
const events: TRouterStatusEvent[] = [];

const faultsOf = async (routerId: string) =>
  db.query<{
    status: string;
    cause: string;
    message: string;
    type: string;
    severity: string;
    created_ms: number;
    resolved_ms: number | null;
    duration_seconds: number | null;
  }>(
    `select status, cause, message, type, severity, (extract(epoch from created_at) * 1000)::float8 as created_ms,
       (extract(epoch from resolved_at) * 1000)::float8 as resolved_ms, duration_seconds
     from router_faults where router_id = $1 order by created_at`,
    [routerId],
  );
const hasPulse = async (routerId: string) =>
  (
    await db.query<{ has_pulse: boolean }>(
      "select coalesce(l.has_pulse, false) as has_pulse from routers r left join router_liveness l on l.router_id = r.id where r.id = $1",
      [routerId],
    )
  )[0]?.has_pulse;
const downtime = async (routerId: string) =>
  (
    await db.query<{ hour_ms: number; seconds_down: number }>(
      `select (extract(epoch from hour) * 1000)::float8 as hour_ms, seconds_down from router_downtime_hours where router_id = $1 order by hour`,
      [routerId],
    )
  ).map((r) => ({ hour: new Date(Number(r.hour_ms)).toISOString(), seconds: Number(r.seconds_down) }));

/** Enroll-like router plus a heartbeat at the clock's current time. */
const beatingRouter = async (identity: string, extra: Record<string, unknown> = {}) => {
  const router = await makeRouter(db, owner, { identity });
  await beat(router.heartbeatToken, extra);
  return router;
};
const beat = async (token: string, extra: Record<string, unknown> = {}) => {
  const socket = await connectOk(h.daemon.wsUrl, token);
  socket.send({ type: "heartbeat", ...extra });
  expect(await socket.next()).toMatchObject({ type: "ack" });
  await socket.close();
  await h.daemon.flush();
};
const at = (ms: number) => clock.set(new Date(ms));

beforeAll(async () => {
  db = await createTestDatabase();
  owner = await makeUser(db);
  h = await startDaemonHarness(db, { intervalMs: I, missedHeartbeats: MISSED, clock, tuning });
  feed = await acquireStatusFeed(db);
  feed.feed.subscribe((event) => events.push(event));
});

afterAll(async () => {
  await h?.close();
  await feed?.release();
  await db?.close();
});

describe("fault state table", () => {
  it("opens one ongoing site fault after MISSED_HEARTBEATS missed periods, dated at the first miss", async () => {
    const t = clock.now().getTime();
    const router = await beatingRouter("site-a");
    at(t + MISSED * I + GRACE - 1);
    const early = await h.daemon.sweep();
    expect(early.opened.filter((f) => f.routerId === router.id)).toHaveLength(0);
    // The bound the daemon waits for is exact: due one millisecond later, not before.
    expect(early.nextDueAt).toBe(t + MISSED * I + GRACE);
    expect(await hasPulse(router.id)).toBe(true);
    at(t + MISSED * I + GRACE);
    const { opened, nextDueAt } = await h.daemon.sweep();
    expect(nextDueAt).toBe(t + MISSED * I + GRACE);
    expect(opened.map((f) => f.routerId)).toContain(router.id);
    expect(await hasPulse(router.id)).toBe(false);
    expect(await faultsOf(router.id)).toEqual([
      {
        status: "ongoing",
        cause: "Unknown",
        message: "Site Offline: site-a",
        type: "site",
        severity: "error",
        created_ms: t + I,
        resolved_ms: null,
        duration_seconds: null,
      },
    ]);
    at(t + 60_000);
    // No router has a pulse now: none can be due until one beats.
    expect((await h.daemon.sweep()).nextDueAt).toBeNull();
    expect(await faultsOf(router.id)).toHaveLength(1);
    await expect
      .poll(() => events, EVENTS_DELIVERED)
      .toContainEqual(expect.objectContaining({ type: "pulse", router_id: router.id, has_pulse: false }));
    await expect
      .poll(() => events, EVENTS_DELIVERED)
      .toContainEqual(
        expect.objectContaining({
          type: "fault",
          router_id: router.id,
          fault: expect.objectContaining({
            status: "ongoing",
            created_at: new Date(t + I).toISOString().replace(".000Z", "+00:00"),
          }),
        }),
      );
  });

  it("completes the fault with the next heartbeat: a reboot when the uptime is shorter than the silence", async () => {
    const t = clock.now().getTime();
    const router = await beatingRouter("site-b", { uptime: 100_000 });
    at(t + 10 * I);
    await h.daemon.sweep();
    expect(await hasPulse(router.id)).toBe(false);
    at(t + 20 * I + 400);
    await beat(router.heartbeatToken, { uptime: 12 });
    expect(await hasPulse(router.id)).toBe(true);
    expect(await faultsOf(router.id)).toEqual([
      expect.objectContaining({
        status: "completed",
        cause: "Router rebooted",
        created_ms: t + I,
        resolved_ms: t + 20 * I + 400,
        duration_seconds: 19,
      }),
    ]);
    await expect
      .poll(() => events, EVENTS_DELIVERED)
      .toContainEqual(expect.objectContaining({ type: "pulse", router_id: router.id, has_pulse: true }));
    await expect
      .poll(() => events, EVENTS_DELIVERED)
      .toContainEqual(
        expect.objectContaining({
          type: "fault",
          router_id: router.id,
          fault: expect.objectContaining({ status: "completed", duration: 19 }),
        }),
      );
    // Down from the first missed heartbeat until the next heartbeat: 19.4 s.
    expect(await downtime(router.id)).toEqual([
      { hour: new Date(t).toISOString().replace(/:\d\d:\d\d\.\d+Z/, ":00:00.000Z"), seconds: 19 },
    ]);
  });

  it("says connectivity was lost when the router kept running, and Unknown when it reports no uptime", async () => {
    const t = clock.now().getTime();
    const kept = await beatingRouter("site-c", { uptime: 5_000 });
    const quiet = await beatingRouter("site-d");
    at(t + 10 * I);
    await h.daemon.sweep();
    at(t + 12 * I);
    await beat(kept.heartbeatToken, { uptime: 5_012 });
    await beat(quiet.heartbeatToken);
    expect((await faultsOf(kept.id))[0]).toMatchObject({
      status: "completed",
      cause: "Connectivity lost",
      duration_seconds: 11,
    });
    expect((await faultsOf(quiet.id))[0]).toMatchObject({
      status: "completed",
      cause: "Unknown",
      duration_seconds: 11,
    });
  });

  it("completes a fault the sweeper opened while the heartbeat's flush was reading", async () => {
    const t = clock.now().getTime();
    const router = await beatingRouter("racing");
    // The race's outcome: the flush read has_pulse true from before the sweeper's commit.
    await db.query(
      `insert into router_faults (id, router_id, type, severity, message, cause, status, created_at) values ($1, $2, 'site', 'error', 'Site Offline: racing', 'Unknown', 'ongoing', $3)`,
      [crypto.randomUUID(), router.id, new Date(t + I)],
    );
    at(t + MISSED * I + GRACE);
    await beat(router.heartbeatToken, { uptime: 1_000_000 });
    expect(await faultsOf(router.id)).toEqual([
      expect.objectContaining({ status: "completed", cause: "Connectivity lost", duration_seconds: 2 }),
    ]);
  });

  it('audits router.offline and router.online with the fault changes (docs/api.md "Audit log and webhooks")', async () => {
    const t = clock.now().getTime();
    const router = await beatingRouter("audited", { uptime: 100_000 });
    at(t + MISSED * I + GRACE);
    const { opened } = await h.daemon.sweep();
    const fault = opened.find((f) => f.routerId === router.id);
    expect(fault?.organizationId).toBe(owner.organizationId);
    at(t + 90 * I);
    await beat(router.heartbeatToken, { uptime: 100_090 });
    const entries = await new AuditLogRepository(db).list({
      organizationId: owner.organizationId,
      routerId: router.id,
      limit: 10,
    });
    const common = {
      id: expect.any(String),
      organizationId: owner.organizationId,
      actor: { type: "system", id: null },
      target: { type: "router", id: router.id },
      routerId: router.id,
      // The router's team (docs/api.md "Audit log and webhooks").
      teamId: owner.teamId,
      sourceIp: null,
    };
    expect(entries).toEqual([
      {
        ...common,
        action: "router.online",
        occurredAt: new Date(t + 90 * I),
        details: { fault_id: fault?.id, cause: "Connectivity lost", duration_s: 89 },
      },
      {
        ...common,
        action: "router.offline",
        occurredAt: new Date(t + I),
        details: { fault_id: fault?.id, message: "Site Offline: audited" },
      },
    ]);
  });

  it("a router that never sent a heartbeat gets no fault", async () => {
    const router = await makeRouter(db, owner);
    clock.advance(3_600_000);
    await h.daemon.sweep();
    expect(await faultsOf(router.id)).toEqual([]);
  });
});

describe("downtime", () => {
  it("a heartbeat within one and a half intervals is on time; later, the gap from the first miss is down", async () => {
    const t = clock.now().getTime();
    const router = await beatingRouter("jitter");
    at(t + 1.5 * I);
    await beat(router.heartbeatToken);
    expect(await downtime(router.id)).toEqual([]);
    at(t + 1.5 * I + 1.5 * I + 600);
    await beat(router.heartbeatToken);
    // Due at +1 interval, arrived 1.6 intervals late: 0.6 s down, stored rounded to whole seconds.
    expect((await downtime(router.id)).map((d) => d.seconds)).toEqual([1]);
  });

  it("splits an outage at UTC hour boundaries", async () => {
    const hour = Math.ceil((clock.now().getTime() + 3_600_000) / 3_600_000) * 3_600_000;
    at(hour - 10_000);
    const router = await beatingRouter("across-hours");
    at(hour + 30_000);
    await beat(router.heartbeatToken);
    expect(await downtime(router.id)).toEqual([
      { hour: new Date(hour - 3_600_000).toISOString(), seconds: 9 },
      { hour: new Date(hour).toISOString(), seconds: 30 },
    ]);
  });
});

describe("restart rule", () => {
  it("opens no false faults after every daemon was away, and still opens the real ones", async () => {
    const t = clock.now().getTime() + 3_600_000;
    at(t - 2 * I);
    const silent = await beatingRouter("silent-before"); // already missing heartbeats before the outage
    at(t);
    const back = await beatingRouter("comes-back");
    const gone = await beatingRouter("never-returns");
    await h.daemon.sweep(); // daemons alive at t
    await h.close();

    at(t + 60_000);
    h = await startDaemonHarness(db, { intervalMs: I, missedHeartbeats: MISSED, clock, tuning });
    await h.daemon.sweep();
    expect(await faultsOf(back.id)).toEqual([]);
    expect(await faultsOf(gone.id)).toEqual([]);
    // Its misses started while the daemons were up: a real fault, dated at its first miss.
    expect(await faultsOf(silent.id)).toEqual([expect.objectContaining({ status: "ongoing", created_ms: t - I })]);

    at(t + 61_000);
    await beat(back.heartbeatToken);
    expect(await downtime(back.id)).toEqual([]);

    at(t + 60_000 + MISSED * I + GRACE - 1);
    await h.daemon.sweep();
    expect(await faultsOf(gone.id)).toEqual([]);
    at(t + 60_000 + MISSED * I + GRACE);
    await h.daemon.sweep();
    // A full threshold from the restart; its first counted miss is one interval after it.
    expect(await faultsOf(gone.id)).toEqual([
      expect.objectContaining({ status: "ongoing", created_ms: t + 60_000 + I }),
    ]);
    expect(await faultsOf(back.id)).toEqual([]);
  });
});

describe("several sweepers", () => {
  it("open each fault exactly once", async () => {
    const t = clock.now().getTime() + 3_600_000;
    at(t);
    const routers: Array<{ id: string; heartbeatToken: string }> = [];
    for (let i = 0; i < 12; i++) routers.push(await beatingRouter(`fleet-${i}`));
    at(t + 20 * I);
    const sweeper = (database: Database) =>
      sweepFaults({
        store: new HeartbeatsRepository(database),
        db: database,
        feed: feed.feed,
        clock,
        coverage: { current: null } satisfies CoverageHolder,
        intervalMs: I,
        missedHeartbeats: MISSED,
        graceMs: GRACE,
        limit: 5,
      });
    let opened: number;
    if (db.driver === "postgresql" && db.url) {
      // Separate processes in all but name: their own pools on the same PostgreSQL database.
      const others = await Promise.all(
        [1, 2, 3].map(() => openDatabase({ databaseUrl: db.url, dataDir: "memory", poolSize: 2 })),
      );
      try {
        const results = await Promise.all([db, ...others, db, ...others].map((d) => sweeper(d)));
        opened = results.reduce(
          (n, r) => n + r.opened.filter((f) => routers.some((x) => x.id === f.routerId)).length,
          0,
        );
      } finally {
        await Promise.all(others.map((d) => d.close()));
      }
    } else {
      // PGlite is one in-process connection: concurrent sweeps serialize on it.
      const results = await Promise.all([sweeper(db), sweeper(db), sweeper(db)]);
      opened = results.reduce((n, r) => n + r.opened.filter((f) => routers.some((x) => x.id === f.routerId)).length, 0);
    }
    expect(opened).toBe(12);
    for (const router of routers) expect(await faultsOf(router.id)).toHaveLength(1);
  });
});

describe("sweep memo", () => {
  it("skips the scans until a router can be due, then opens its fault on time", async () => {
    const own = await createTestDatabase();
    try {
      const store = new HeartbeatsRepository(own);
      const user = await makeUser(own);
      const router = await makeRouter(own, user, { identity: "memo-a" });
      const t = Date.UTC(2026, 10, 22, 9, 0, 0);
      const memoClock = new ManualClock(t);
      await own.query("update router_liveness set last_seen_at = $2 where router_id = $1", [router.id, new Date(t)]);
      await own.transaction((query) => store.startCoverage(query, new Date(t - 3_600_000), 5_000, I));
      const memo: SweepMemo = { notDueBefore: null, scannedAt: null };
      const sweep = () =>
        sweepFaults({
          store,
          db: own,
          feed: feed.feed,
          clock: memoClock,
          coverage: { current: null },
          intervalMs: 10 * I,
          missedHeartbeats: MISSED,
          graceMs: GRACE,
          limit: 100,
          memo,
        });
      const due = t + MISSED * 10 * I + GRACE;
      expect((await sweep()).nextDueAt).toBe(due);
      expect(memo).toEqual({ notDueBefore: due, scannedAt: t });
      // Before the predicted time a sweep reads nothing (its prediction stands), even with the router's row
      // made older behind its back: nothing in the system moves last_seen_at backwards.
      await own.query("update router_liveness set last_seen_at = $2 where router_id = $1", [
        router.id,
        new Date(t - 60_000),
      ]);
      memoClock.set(new Date(t + 5 * I));
      const skipped = await sweep();
      expect(skipped).toMatchObject({ swept: true, opened: [], nextDueAt: due });
      expect(memo.scannedAt).toBe(t);
      // At the predicted time it scans and opens the fault.
      memoClock.set(new Date(due));
      expect((await sweep()).opened.map((f) => f.routerId)).toEqual([router.id]);
      expect(memo.scannedAt).toBe(due);
    } finally {
      await own.close();
    }
  });
});

describe("sweep schedule", () => {
  const schedule = { sweepIntervalMs: 250, sweepIdleMs: 1_000 };
  const swept = (nextDueAt: number | null): SweepResult => ({ swept: true, opened: [], nextDueAt, heldAt: null });
  it("sweeps at the interval while a router can be due, or when nothing is known", () => {
    expect(nextSweepInMs(swept(10_000), 10_000, schedule)).toBe(250);
    expect(nextSweepInMs(swept(9_000), 10_000, schedule)).toBe(250);
    expect(nextSweepInMs(swept(10_250), 10_000, schedule)).toBe(250);
    expect(nextSweepInMs({ swept: false, opened: [], nextDueAt: null, heldAt: null }, 10_000, schedule)).toBe(250);
    expect(nextSweepInMs(null, 10_000, schedule)).toBe(250);
  });
  it("waits until the next router can be due, at most the idle wait", () => {
    expect(nextSweepInMs(swept(10_600), 10_000, schedule)).toBe(600);
    expect(nextSweepInMs(swept(11_000), 10_000, schedule)).toBe(1_000);
    expect(nextSweepInMs(swept(11_001), 10_000, schedule)).toBe(1_000);
    expect(nextSweepInMs(swept(null), 10_000, schedule)).toBe(1_000);
  });
});
