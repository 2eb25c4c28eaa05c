import { hashHeartbeatToken } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Query, QueryOptions } from "../database.ts";
import { createTestDatabase, lockWaiters, makeRouter, makeUser, type TestDatabase } from "../testing/index.ts";
import { LIVENESS_ROOM_BYTES } from "../migrations/20261128-035-liveness-room.migration.ts";
import { AdoptionsRepository } from "./adoptions.repository.ts";
import {
  FLUSH_STATEMENTS,
  type HeartbeatWrite,
  HeartbeatsRepository,
  type SweepParams,
} from "./heartbeats.repository.ts";
import { RouterHealthRepository } from "./router-health.repository.ts";

// The flush's two statements (docs/architecture.md "Liveness: what a heartbeat writes"): a liveness
// UPDATE for a router beating on time with nothing new, the full upsert for everything else. Both
// must report the same things; these tests say which statement a row takes by what it finds.

let db: TestDatabase;
let heartbeats: HeartbeatsRepository;
let owner: { organizationId: string; teamId: string };
const T0 = Date.UTC(2026, 10, 25, 12, 0, 0);
const QUIET_GAP_MS = 60_000;

beforeAll(async () => {
  db = await createTestDatabase();
  heartbeats = new HeartbeatsRepository(db);
  const user = await makeUser(db);
  owner = { organizationId: user.organizationId, teamId: user.teamId };
});
afterAll(async () => {
  await db?.close();
});

const beat = (router: { id: string; heartbeatToken: string }, atMs: number, facts: Partial<HeartbeatWrite> = {}) => ({
  routerId: router.id,
  tokenHash: hashHeartbeatToken(router.heartbeatToken),
  seenAt: new Date(atMs),
  peer: "192.0.2.7",
  uptimeSeconds: 100,
  ...facts,
});

const liveness = async (routerId: string) => {
  const [row] = await db.query<{ has_pulse: boolean; last_seen_ms: number | null; uptime_seconds: string | null }>(
    `select has_pulse, (extract(epoch from last_seen_at) * 1000)::float8 as last_seen_ms, uptime_seconds::text
     from router_liveness where router_id = $1`,
    [routerId],
  );
  return row;
};

const facts = async (routerId: string) =>
  (
    await db.query<{ identity: string; model: string; reported_metadata: Record<string, unknown> }>(
      "select identity, model, reported_metadata from routers where id = $1",
      [routerId],
    )
  )[0];

/** The token and facts' digest the liveness row holds for the steady flush (migration 034). */
const copied = async (routerId: string) =>
  (
    await db.query<{ heartbeat_token_hash: string | null; facts_digest: string | null }>(
      "select heartbeat_token_hash, facts_digest::text from router_liveness where router_id = $1",
      [routerId],
    )
  )[0];

/** Which of the flush's statements one call ran: "fast" (liveness only) and "apply" (the full upsert). */
const statementsOf = async <T>(work: () => Promise<T>): Promise<{ result: T; statements: string[] }> => {
  const spy = vi.spyOn(db, "query");
  try {
    const result = await work();
    const statements = spy.mock.calls.map((call) =>
      String((call[2] as { prepare?: string } | undefined)?.prepare ?? "other").replace("heartbeats_", ""),
    );
    return { result, statements };
  } finally {
    spy.mockRestore();
  }
};

const reissue = (router: { id: string }, newToken: string) =>
  db.transaction((query) =>
    new AdoptionsRepository(query).reissue(owner.teamId, router.id, hashHeartbeatToken(newToken), {
      tokenHash: hashHeartbeatToken(`adopt_${router.id}_${newToken}`),
      createdAt: new Date(T0),
      expiresAt: new Date(T0 + 3_600_000),
      countsFrom: new Date(T0),
    }),
  );

/** A sweep at `atMs` of routers beating every second (3 missed: due), no grace or tolerance. */
const sweepParams = (scan: boolean, atMs: number, daemon?: SweepParams["daemon"]): SweepParams => ({
  now: new Date(atMs),
  intervalMs: 1_000,
  missedHeartbeats: 3,
  graceMs: 0,
  toleranceMs: 0,
  limit: 10,
  scan,
  ...(daemon ? { daemon } : {}),
});

const identity = async (routerId: string) =>
  (await db.query<{ identity: string }>("select identity from routers where id = $1", [routerId]))[0]?.identity;

describe("HeartbeatsRepository.applyHeartbeats", () => {
  it("reports a first heartbeat (no row yet) and not the next one on time; a beat after the quiet gap comes back with the state before it", async () => {
    const router = await makeRouter(db, owner);
    await db.query("delete from router_liveness where router_id = $1", [router.id]);

    const first = await heartbeats.applyHeartbeats([beat(router, T0, { identity: "core-1" })], QUIET_GAP_MS);
    expect(first.notable).toEqual([
      { routerId: router.id, teamId: owner.teamId, previousHasPulse: false, previousSeenAt: null },
    ]);
    expect(await identity(router.id)).toBe("core-1");

    // On time, same facts: written (last seen moves) and not reported.
    const onTime = await heartbeats.applyHeartbeats(
      [beat(router, T0 + 30_000, { identity: "core-1", uptimeSeconds: 130 })],
      QUIET_GAP_MS,
    );
    expect(onTime).toEqual({ notable: [], gone: [], replaced: [] });
    expect(await liveness(router.id)).toEqual({ has_pulse: true, last_seen_ms: T0 + 30_000, uptime_seconds: "130" });

    // One millisecond short of the quiet gap: still quiet. At the gap: reported, with what it replaced.
    const short = await heartbeats.applyHeartbeats([beat(router, T0 + 30_000 + QUIET_GAP_MS - 1)], QUIET_GAP_MS);
    expect(short.notable).toEqual([]);
    const late = T0 + 30_000 + 2 * QUIET_GAP_MS - 1;
    const gap = await heartbeats.applyHeartbeats([beat(router, late)], QUIET_GAP_MS);
    expect(gap.notable).toEqual([
      {
        routerId: router.id,
        teamId: owner.teamId,
        previousHasPulse: true,
        previousSeenAt: new Date(T0 + 30_000 + QUIET_GAP_MS - 1),
      },
    ]);
  });

  it("reports a router that had no pulse (the sweeper took it) even when its last heartbeat was recent", async () => {
    const router = await makeRouter(db, owner);
    await heartbeats.applyHeartbeats([beat(router, T0)], QUIET_GAP_MS);
    await db.query("update router_liveness set has_pulse = false where router_id = $1", [router.id]);
    const back = await heartbeats.applyHeartbeats([beat(router, T0 + 1_000)], QUIET_GAP_MS);
    expect(back.notable).toEqual([
      { routerId: router.id, teamId: owner.teamId, previousHasPulse: false, previousSeenAt: new Date(T0) },
    ]);
    expect((await liveness(router.id))?.has_pulse).toBe(true);
  });

  it("writes a fact that changed on a router beating on time, and never moves last seen backwards", async () => {
    const router = await makeRouter(db, owner);
    await heartbeats.applyHeartbeats([beat(router, T0 + 5_000, { identity: "old" })], QUIET_GAP_MS);
    const renamed = await heartbeats.applyHeartbeats([beat(router, T0 + 1_000, { identity: "new" })], QUIET_GAP_MS);
    expect(renamed.notable).toEqual([]);
    expect(await identity(router.id)).toBe("new");
    expect((await liveness(router.id))?.last_seen_ms).toBe(T0 + 5_000);
  });

  it("writes nothing for a replaced token, whichever statement the row meets, and tells gone routers apart", async () => {
    const router = await makeRouter(db, owner, { identity: "kept" });
    await heartbeats.applyHeartbeats([beat(router, T0, { identity: "kept" })], QUIET_GAP_MS);
    const reissued = await db.transaction((query) =>
      new AdoptionsRepository(query).reissue(owner.teamId, router.id, hashHeartbeatToken("hb_new"), {
        tokenHash: hashHeartbeatToken(`adopt_${router.id}`),
        createdAt: new Date(T0),
        expiresAt: new Date(T0 + 3_600_000),
        countsFrom: new Date(T0),
      }),
    );
    expect(reissued).toBe(true);
    const before = await liveness(router.id);

    const gone = await makeRouter(db, owner);
    await db.query("delete from routers where id = $1", [gone.id]);
    const stale = await heartbeats.applyHeartbeats(
      [beat(router, T0 + 30_000, { identity: "thief" }), beat(gone, T0)],
      QUIET_GAP_MS,
    );
    expect(stale.notable).toEqual([]);
    expect(stale.replaced).toEqual([{ routerId: router.id, tokenHash: hashHeartbeatToken(router.heartbeatToken) }]);
    expect(stale.gone).toEqual([gone.id]);
    const quiet = await heartbeats.applyHeartbeats([beat(router, T0 + 30_000, { identity: "kept" })], QUIET_GAP_MS);
    expect(quiet.replaced).toEqual([{ routerId: router.id, tokenHash: hashHeartbeatToken(router.heartbeatToken) }]);
    expect(await liveness(router.id)).toEqual(before);
    expect(await identity(router.id)).toBe("kept");
  });

  it("takes a batch mixing both statements' rows in one call", async () => {
    const steady = await makeRouter(db, owner);
    const fresh = await makeRouter(db, owner);
    await db.query("delete from router_liveness where router_id = $1", [fresh.id]);
    await heartbeats.applyHeartbeats([beat(steady, T0)], QUIET_GAP_MS);
    const mixed = await heartbeats.applyHeartbeats([beat(steady, T0 + 30_000), beat(fresh, T0 + 30_000)], QUIET_GAP_MS);
    expect(mixed.notable).toEqual([
      { routerId: fresh.id, teamId: owner.teamId, previousHasPulse: false, previousSeenAt: null },
    ]);
    expect((await liveness(steady.id))?.last_seen_ms).toBe(T0 + 30_000);
    expect((await liveness(fresh.id))?.last_seen_ms).toBe(T0 + 30_000);
  });

  it("takes the liveness row alone while the token and the reported facts stay those of the last full write", async () => {
    const router = await makeRouter(db, owner);
    await db.query("delete from router_liveness where router_id = $1", [router.id]);
    const reported = { identity: "edge-1", model: "RB5009UG+S+", metadata: { site: "north" } };

    const first = await statementsOf(() => heartbeats.applyHeartbeats([beat(router, T0, reported)], QUIET_GAP_MS));
    expect(first.statements).toEqual(["fast", "apply"]);
    expect((await copied(router.id))?.heartbeat_token_hash).toBe(hashHeartbeatToken(router.heartbeatToken));

    const steady = await statementsOf(() =>
      heartbeats.applyHeartbeats([beat(router, T0 + 30_000, reported)], QUIET_GAP_MS),
    );
    expect(steady.statements).toEqual(["fast"]);
    expect(steady.result).toEqual({ notable: [], gone: [], replaced: [] });
    expect((await liveness(router.id))?.last_seen_ms).toBe(T0 + 30_000);
  });

  it("writes every change of the reported facts to routers: a new value, new metadata, and a value reported again after a gap", async () => {
    const router = await makeRouter(db, owner);
    await heartbeats.applyHeartbeats([beat(router, T0, { identity: "a", metadata: { k: 1 } })], QUIET_GAP_MS);
    expect(await facts(router.id)).toMatchObject({ identity: "a", reported_metadata: { k: 1 } });

    // A new metadata key (identity unchanged): the full write, merged.
    const merged = await statementsOf(() =>
      heartbeats.applyHeartbeats([beat(router, T0 + 1_000, { identity: "a", metadata: { j: 2 } })], QUIET_GAP_MS),
    );
    expect(merged.statements).toEqual(["fast", "apply"]);
    expect(await facts(router.id)).toMatchObject({ identity: "a", reported_metadata: { k: 1, j: 2 } });

    // Facts not reported: nothing to write to routers, but the digest is the one of "nothing reported".
    await heartbeats.applyHeartbeats([beat(router, T0 + 2_000)], QUIET_GAP_MS);
    expect(await facts(router.id)).toMatchObject({ identity: "a" });
    // Then a new identity, then the old one again: both reach routers.
    await heartbeats.applyHeartbeats([beat(router, T0 + 3_000, { identity: "b" })], QUIET_GAP_MS);
    expect(await identity(router.id)).toBe("b");
    const back = await statementsOf(() =>
      heartbeats.applyHeartbeats([beat(router, T0 + 4_000, { identity: "a" })], QUIET_GAP_MS),
    );
    expect(back.statements).toEqual(["fast", "apply"]);
    expect(await identity(router.id)).toBe("a");
    // The same again: nothing new, the liveness row alone.
    const same = await statementsOf(() =>
      heartbeats.applyHeartbeats([beat(router, T0 + 5_000, { identity: "a" })], QUIET_GAP_MS),
    );
    expect(same.statements).toEqual(["fast"]);
    expect((await liveness(router.id))?.last_seen_ms).toBe(T0 + 5_000);
  });

  it("after a re-adoption the old token writes nothing on either statement, and the new token takes the liveness row alone", async () => {
    const router = await makeRouter(db, owner);
    const reported = { identity: "kept" };
    await heartbeats.applyHeartbeats([beat(router, T0, reported)], QUIET_GAP_MS);
    const digest = (await copied(router.id))?.facts_digest;
    expect(digest).not.toBeNull();

    expect(await reissue(router, "hb_readopted")).toBe(true);
    // The trigger moved the copy with the token, in the re-adoption's transaction.
    expect(await copied(router.id)).toEqual({
      heartbeat_token_hash: hashHeartbeatToken("hb_readopted"),
      facts_digest: digest,
    });
    const before = await liveness(router.id);

    // The old token with the facts of the last full write (FAST_SQL's case) and with new ones (APPLY_SQL's).
    for (const reportedNow of [reported, { identity: "thief" }]) {
      const stale = await heartbeats.applyHeartbeats([beat(router, T0 + 30_000, reportedNow)], QUIET_GAP_MS);
      expect(stale.replaced).toEqual([{ routerId: router.id, tokenHash: hashHeartbeatToken(router.heartbeatToken) }]);
      expect(await liveness(router.id)).toEqual(before);
      expect(await identity(router.id)).toBe("kept");
    }

    const renewed = { id: router.id, heartbeatToken: "hb_readopted" };
    const first = await statementsOf(() =>
      heartbeats.applyHeartbeats([beat(renewed, T0 + 30_000, reported)], QUIET_GAP_MS),
    );
    expect(first.statements).toEqual(["fast"]);
    expect(first.result.replaced).toEqual([]);
    expect((await liveness(router.id))?.last_seen_ms).toBe(T0 + 30_000);
    const old = await heartbeats.applyHeartbeats([beat(router, T0 + 60_000, reported)], QUIET_GAP_MS);
    expect(old.replaced).toHaveLength(1);
    expect((await liveness(router.id))?.last_seen_ms).toBe(T0 + 30_000);
  });

  // Two connections at once: PostgreSQL only (PGlite has one, so nothing can interleave there).
  it.runIf(process.env.DATABASE_URL)(
    "a re-adoption committed while the full write waits for the router is seen: the old token lands nowhere",
    async () => {
      const router = await makeRouter(db, owner);
      await db.query("delete from router_liveness where router_id = $1", [router.id]);
      let updated = false;
      let commit = () => {};
      const held = new Promise<void>((resolve) => {
        commit = resolve;
      });
      const readoption = db.transaction(async (query) => {
        await query("update routers set heartbeat_token_hash = $2 where id = $1", [
          router.id,
          hashHeartbeatToken("hb_raced"),
        ]);
        updated = true;
        await held;
      });
      await eventually(() => updated, "the re-adoption's update");
      // A first heartbeat with the old token: FAST_SQL finds no row, APPLY_SQL waits for the router's row.
      const flush = heartbeats.applyHeartbeats([beat(router, T0, { identity: "late" })], QUIET_GAP_MS);
      await eventually(async () => (await lockWaiters(db)) === 1, "the flush waiting for the router's row");
      commit();
      await readoption;
      const applied = await flush;
      expect(applied.replaced).toEqual([{ routerId: router.id, tokenHash: hashHeartbeatToken(router.heartbeatToken) }]);
      expect(await liveness(router.id)).toBeUndefined();
      // And the old token keeps being refused (no liveness row holds it).
      const again = await heartbeats.applyHeartbeats([beat(router, T0 + 1_000, { identity: "late" })], QUIET_GAP_MS);
      expect(again.replaced).toHaveLength(1);
      expect(await identity(router.id)).not.toBe("late");
    },
  );

  it("writes the latest health values with the liveness row, in either statement; a measure not reported and older values change nothing", async () => {
    const router = await makeRouter(db, owner);
    await db.query("delete from router_liveness where router_id = $1", [router.id]);
    const latest = new RouterHealthRepository(db);
    const values = (cpuLoad: number | null, temperature: number | null) => ({
      cpuLoad,
      memoryUsedPercent: 50,
      diskUsedPercent: null,
      temperature,
      voltage: null,
      pingLossPercent: null,
      pingRttMs: 1.5,
    });
    const health = (atMs: number, cpu: number | null, temperature: number | null) => ({
      health: { atMs, values: values(cpu, temperature) },
    });
    const first = await statementsOf(() =>
      heartbeats.applyHeartbeats([beat(router, T0, health(T0, 10, 40))], QUIET_GAP_MS),
    );
    expect(first.statements).toEqual(["fast_health", "apply"]);
    expect(await latest.latest(router.id)).toEqual({
      routerId: router.id,
      reportedAt: new Date(T0),
      ...values(10, 40),
    });

    const steady = await statementsOf(() =>
      heartbeats.applyHeartbeats([beat(router, T0 + 30_000, health(T0 + 30_000, 12, null))], QUIET_GAP_MS),
    );
    expect(steady.statements).toEqual(["fast_health"]);
    const kept = { routerId: router.id, reportedAt: new Date(T0 + 30_000), ...values(12, 40) };
    expect(await latest.latest(router.id)).toEqual(kept);
    // Values older than the row's (another daemon process wrote newer ones), on either statement.
    await heartbeats.applyHeartbeats([beat(router, T0 + 31_000, health(T0 + 20_000, 99, 99))], QUIET_GAP_MS);
    await heartbeats.applyHeartbeats(
      [beat(router, T0 + 32_000, { identity: "changed", ...health(T0 + 20_000, 98, 98) })],
      QUIET_GAP_MS,
    );
    expect(await latest.latest(router.id)).toEqual(kept);
    // A heartbeat without health keeps the values, and takes the plain statement.
    const plain = await statementsOf(() =>
      heartbeats.applyHeartbeats([beat(router, T0 + 60_000, { identity: "changed" })], QUIET_GAP_MS),
    );
    expect(plain.statements).toEqual(["fast"]);
    expect(await latest.latest(router.id)).toEqual(kept);
    expect((await latest.latestOf([router.id])).get(router.id)).toEqual(kept);
  });

  it("a new liveness row carries room for later versions until its first steady update", async () => {
    const router = await makeRouter(db, owner);
    const room = async () =>
      (
        await db.query<{ bytes: number | null }>(
          "select octet_length(room) as bytes from router_liveness where router_id = $1",
          [router.id],
        )
      )[0]?.bytes;
    // A router that never beat has no liveness row (the factory gives it one).
    await db.query("delete from router_liveness where router_id = $1", [router.id]);
    const first = await statementsOf(() => heartbeats.applyHeartbeats([beat(router, T0)], QUIET_GAP_MS));
    expect(first.statements).toEqual(["fast", "apply"]);
    expect(await room()).toBe(LIVENESS_ROOM_BYTES);
    const steady = await statementsOf(() => heartbeats.applyHeartbeats([beat(router, T0 + 1_000)], QUIET_GAP_MS));
    expect(steady.statements).toEqual(["fast"]);
    expect(await room()).toBeNull();
    // A full write of a row that exists (a new fact) leaves no room either.
    await heartbeats.applyHeartbeats([beat(router, T0 + 2_000, { identity: "new" })], QUIET_GAP_MS);
    expect(await room()).toBeNull();
  });

  it("the flush and a sweep that opens nothing commit without waiting for the disk; a sweep that opens a fault waits", async () => {
    const router = await makeRouter(db, owner);
    const setting = async (query: Query) =>
      (await query<{ s: string }>("select current_setting('synchronous_commit') as s"))[0]?.s;
    // The setting a transaction holds when it commits is the one its commit obeys: the repository's
    // statements run here inside one open transaction, so what they leave can be read before it ends.
    const inTransaction = <T>(work: (repo: HeartbeatsRepository) => Promise<T>) =>
      db.transaction(async (query) => {
        const statements: (string | undefined)[] = [];
        const repo = new HeartbeatsRepository({
          ...db,
          driver: db.driver,
          query: Object.assign(
            <T>(sql: string, params?: readonly unknown[], options?: QueryOptions) => {
              statements.push(options?.prepare);
              return query<T>(sql, params);
            },
            { kysely: query.kysely },
          ),
        });
        expect(await setting(query)).toBe("on");
        const result = await work(repo);
        return { statements, commit: await setting(query), result };
      });
    // A first heartbeat takes both statements (the steady one misses, the full upsert writes it) ...
    expect(await inTransaction((repo) => repo.applyHeartbeats([beat(router, T0)], QUIET_GAP_MS))).toMatchObject({
      statements: ["heartbeats_fast", "heartbeats_apply"],
      commit: "off",
    });
    // ... the next one on time the steady statement alone.
    expect(await inTransaction((repo) => repo.applyHeartbeats([beat(router, T0 + 1_000)], QUIET_GAP_MS))).toMatchObject(
      { statements: ["heartbeats_fast"], commit: "off" },
    );
    expect(await liveness(router.id)).toMatchObject({ has_pulse: true, last_seen_ms: T0 + 1_000 });

    await db.transaction((query) => heartbeats.startCoverage(query, new Date(T0), 5_000, 1_000));
    const params = (scan: boolean, atMs: number) => sweepParams(scan, atMs);
    // A sweep that reads no router (the steady state) is one statement that marks the daemons alive.
    const idle = await inTransaction((repo) =>
      repo.markAliveSweep(params(false, T0 + 2_000), async (tx) => tx.coverage),
    );
    expect(idle).toMatchObject({ statements: ["heartbeat_alive"], commit: "off" });
    expect(idle.result?.aliveAt.getTime()).toBe(T0 + 2_000);
    // A sweep that scans is a transaction: asynchronous until it opens a fault.
    const sweep = async (open: boolean) => {
      const seen: (string | undefined)[] = [];
      await db.transaction((query) =>
        heartbeats.sweepIn(query, params(true, T0 + 2_000), async (tx) => {
          seen.push(await setting(tx.query));
          if (open)
            await tx.open([{ routerId: router.id, message: "Site Offline: test", createdAt: new Date(T0 + 1_500) }]);
          seen.push(await setting(tx.query));
        }),
      );
      return seen;
    };
    expect(await sweep(false)).toEqual(["off", "off"]);
    expect(await sweep(true)).toEqual(["off", "on"]);
  });

  it("a sweep marks its daemon's row in its own first statement while the daemon's writes succeed", async () => {
    const T1 = T0 + 3_600_000;
    await db.transaction((query) => heartbeats.startCoverage(query, new Date(T1), 5_000, 1_000));
    const id = crypto.randomUUID();
    const params = (scan: boolean, atMs: number, caughtUp: boolean) =>
      sweepParams(scan, atMs, { id, caughtUp, slackMs: 1_000, dropAfterMs: 60_000 });
    const writtenThrough = async () =>
      (
        await db.query<{ ms: number }>(
          "select (extract(epoch from written_through) * 1000)::float8 as ms from heartbeat_daemons where id = $1",
          [id],
        )
      )[0]?.ms;
    const idle = await statementsOf(() => heartbeats.markAliveSweep(params(false, T1 + 1_000, true), async () => 0));
    expect(idle).toEqual({ result: 0, statements: ["heartbeat_alive"] });
    expect(await writtenThrough()).toBe(T1 + 1_000);
    // A daemon whose writes fail leaves its row where it was.
    await heartbeats.markAliveSweep(params(false, T1 + 2_000, false), async () => 0);
    expect(await writtenThrough()).toBe(T1 + 1_000);
    // A scanning sweep marks it in the transaction's first statement, before it reads the rows.
    const held = await db.transaction((query) =>
      heartbeats.sweepIn(query, params(true, T1 + 3_000, true), async (tx) => tx.heldAt),
    );
    expect(held).toBeNull();
    expect(await writtenThrough()).toBe(T1 + 3_000);
    await heartbeats.removeDaemon(id);
  });

  it("the steady statement's generic plan looks each router up once: no array condition in an index scan", async () => {
    // A prepared statement's generic plan assumes 10 input rows. With `router_id = any($1)` beside
    // the join it took a nested loop whose inner index scan re-read and re-sorted the whole id array
    // for every row (quadratic; docs/scale.md). The plan is read under force_generic_plan, on a
    // table big enough (20,000 rows, analyzed) that the planner looks rows up by index.
    await db.query(
      `with r as (
         insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
         select gen_random_uuid(), $1, $2, 'plan ' || i, md5('plan' || i) || md5('plan-' || i), now()
         from generate_series(1, 20000) as i returning id, heartbeat_token_hash
       )
       insert into router_liveness (router_id, has_pulse, last_seen_at, heartbeat_token_hash, facts_digest)
       select id, true, now(), heartbeat_token_hash, 0 from r`,
      [owner.organizationId, owner.teamId],
    );
    await db.query("analyze routers, router_liveness");
    const planOf = (statement: string, nulls: number) =>
      db.transaction(async (query) => {
        await query("set local plan_cache_mode = force_generic_plan");
        await query(`prepare steady_flush as ${statement}`);
        try {
          const rows = await query<{ "QUERY PLAN": unknown }>(
            `explain (format json) execute steady_flush(${[...Array(6).fill("null"), "0", ...Array(nulls).fill("null")].join(", ")})`,
          );
          return JSON.stringify(rows[0]?.["QUERY PLAN"]);
        } finally {
          await query("deallocate steady_flush");
        }
      });
    for (const plan of [await planOf(FLUSH_STATEMENTS.fast, 0), await planOf(FLUSH_STATEMENTS.fastHealth, 8)]) {
      expect(plan).toContain("router_liveness_pkey");
      expect(plan).not.toMatch(/"Index Cond":\s*"[^"]*ANY/);
    }
  });
});
