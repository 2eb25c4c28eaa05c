import { type Database, openDatabase } from "@fleet/db";
import { makeRouter, makeUser, type OwnPostgres, startOwnPostgres } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectOk, type DaemonHarness, startDaemonHarness, type TestSocket } from "../testing/daemon-harness.ts";

// docs/api.md "Routers and heartbeats": a database outage longer than the fault threshold faults no
// router that beat through it, and a router that went silent during it is faulted from its real
// last heartbeat. PostgreSQL is this test's own cluster (stopped and started here), never the
// shared server; the daemons run on the real clock with their own timers, like in production.

const I = 500;
// 2.5 s: a loaded CI machine delayed a steady router's timer past a 1.5 s threshold (a real gap,
// counted as a second down).
const MISSED = 5;
// Sweeps far more often than flushes: when the database is back, a sweep runs before the buffered
// heartbeats are written (the race of a large fleet, whose flush takes a while). The slack
// (sweepIdleMs) stays well under the threshold minus one interval (fault-sweeper.ts).
const tuning = { flushIntervalMs: 1_000, steadyFlushMs: 1_000, sweepIntervalMs: 50, sweepIdleMs: 250 };
const WAIT_MS = 60_000;

let pg: OwnPostgres;
let db: Database;
const daemons: DaemonHarness[] = [];

interface BeatingRouter {
  id: string;
  socket: TestSocket;
  timer: NodeJS.Timeout | undefined;
  /** When each heartbeat was sent and its ack came back (ms). */
  beats: Array<{ sentAt: number; ackedAt: number | null }>;
}

const beating = async (daemon: DaemonHarness, identity: string, owner: { organizationId: string; teamId: string }) => {
  const router = await makeRouter(db, owner, { identity });
  const socket = await connectOk(daemon.daemon.wsUrl, router.heartbeatToken);
  const r: BeatingRouter = { id: router.id, socket, timer: undefined, beats: [] };
  socket.ws.on("message", (data) => {
    const message = JSON.parse(data.toString()) as { type?: string };
    const open = r.beats.find((b) => b.ackedAt === null);
    if (message.type === "ack" && open) open.ackedAt = Date.now();
  });
  const beat = () => {
    r.beats.push({ sentAt: Date.now(), ackedAt: null });
    socket.send({ type: "heartbeat", identity, uptime: 86_400 });
  };
  beat();
  r.timer = setInterval(beat, I);
  return r;
};
/**
 * Seconds down a router's own heartbeats can explain: the daemon saw each heartbeat between its send
 * and its ack, so two of them were at most (the later one's ack - the earlier one's send) apart. A
 * gap longer than the interval plus the jitter tolerance is a real silence (a timer or an event loop
 * of this loaded process held up), rightly counted; without one, nothing may be counted.
 */
const realSilenceSeconds = (r: BeatingRouter) => {
  let seconds = 0;
  for (let i = 1; i < r.beats.length; i++) {
    const earlier = r.beats[i - 1];
    const later = r.beats[i];
    if (!earlier || later?.ackedAt === null || later?.ackedAt === undefined) continue;
    const gap = later.ackedAt - earlier.sentAt;
    if (gap > I * 1.5) seconds += Math.ceil(gap / 1000);
  }
  return seconds;
};
const acksSince = (r: BeatingRouter, since: number) =>
  r.beats.filter((b) => b.ackedAt !== null && b.sentAt >= since).length;

const faults = async (routerId: string) =>
  db.query<{ status: string; created_ms: number }>(
    "select status, (extract(epoch from created_at) * 1000)::float8 as created_ms from router_faults where router_id = $1",
    [routerId],
  );
const offlineEntries = async (routerId: string) =>
  (
    await db.query<{ n: number }>(
      "select count(*)::int as n from audit_log where router_id = $1 and action in ('router.offline', 'router.online')",
      [routerId],
    )
  )[0]?.n ?? 0;
const secondsDown = async (routerId: string) =>
  Number(
    (
      await db.query<{ s: number | null }>(
        "select sum(seconds_down)::float8 as s from router_downtime_hours where router_id = $1",
        [routerId],
      )
    )[0]?.s ?? 0,
  );
const lastSeenMs = async (routerId: string) =>
  Number(
    (
      await db.query<{ ms: number | null }>(
        "select (extract(epoch from last_seen_at) * 1000)::float8 as ms from router_liveness where router_id = $1",
        [routerId],
      )
    )[0]?.ms ?? 0,
  );

beforeAll(async () => {
  const own = await startOwnPostgres();
  if (!own) throw new Error("this test needs PostgreSQL's binaries (/usr/lib/postgresql/<version>/bin)");
  pg = own;
  db = await openDatabase({ databaseUrl: pg.url, dataDir: "memory", poolSize: 4 });
  await db.migrate();
}, 120_000);

afterAll(async () => {
  for (const d of daemons) await d.close().catch(() => {});
  await db?.close().catch(() => {});
  await pg?.destroy();
}, 60_000);

it("a PostgreSQL outage longer than the threshold faults only the router that really went silent, from its last heartbeat", async () => {
  const owner = await makeUser(db);
  // Two daemons on the one database, as in production: each one's buffer must land before anyone judges.
  for (let i = 0; i < 2; i++) {
    daemons.push(
      await startDaemonHarness(db, {
        intervalMs: I,
        missedHeartbeats: MISSED,
        tuning,
        timers: true,
        realClock: true,
      }),
    );
  }
  const [d1, d2] = daemons as [DaemonHarness, DaemonHarness];
  const steady = [
    await beating(d1, "steady-1", owner),
    await beating(d1, "steady-2", owner),
    await beating(d2, "steady-3", owner),
  ];
  const silent = await beating(d2, "goes-silent", owner);
  const all = [...steady, silent];
  try {
    const before = Date.now();
    await eventually(
      async () => Math.min(...(await Promise.all(all.map((r) => lastSeenMs(r.id))))) > before,
      "every router written",
      WAIT_MS,
    );

    await pg.stop();
    const stoppedAt = Date.now();
    // The router beats twice more (acknowledged, buffered), then goes silent for good.
    await eventually(() => acksSince(silent, stoppedAt) >= 2, "two acks during the outage", WAIT_MS);
    clearInterval(silent.timer);
    const silentFrom = Date.now();
    const lastBeat = silent.beats.filter((b) => b.ackedAt !== null).at(-1);
    // The outage outlasts the threshold (and the grace) by far, for the steady routers and the silent one.
    await eventually(
      () => Math.min(...steady.map((r) => acksSince(r, silentFrom))) >= 3 * MISSED,
      "an outage of three thresholds",
      WAIT_MS,
    );
    expect(d1.daemon.stats().failures + d2.daemon.stats().failures).toBeGreaterThan(0);
    await pg.start();
    const startedAt = Date.now();

    // The silent router is faulted once the sweeps judge the outage: from its real last heartbeat.
    await eventually(async () => (await faults(silent.id)).length === 1, "the silent router's fault", WAIT_MS);
    const [fault] = await faults(silent.id);
    expect(lastBeat).toBeDefined();
    expect(fault?.created_ms).toBeGreaterThanOrEqual((lastBeat?.sentAt ?? 0) + I - 5);
    expect(fault?.created_ms).toBeLessThanOrEqual((lastBeat?.ackedAt ?? 0) + I + 5);
    // Every steady router's buffered heartbeats are in, and a sweep after them has run.
    for (const r of steady)
      await eventually(async () => (await lastSeenMs(r.id)) > startedAt, "buffered beats written", WAIT_MS);
    await d1.daemon.sweep();
    await d2.daemon.sweep();
    for (const r of steady) {
      expect(await faults(r.id)).toEqual([]);
      expect(await offlineEntries(r.id)).toBe(0);
      expect(await secondsDown(r.id)).toBeLessThanOrEqual(realSilenceSeconds(r));
    }
    expect(await offlineEntries(silent.id)).toBe(1);
  } finally {
    for (const r of all) {
      clearInterval(r.timer);
      await r.socket.close();
    }
  }
}, 180_000);
