import { hashHeartbeatToken } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "../testing/index.ts";
import { AdoptionsRepository } from "./adoptions.repository.ts";
import { type HeartbeatWrite, HeartbeatsRepository } from "./heartbeats.repository.ts";

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
    const reissued = await new AdoptionsRepository(db).reissue(owner.teamId, router.id, hashHeartbeatToken("hb_new"), {
      tokenHash: hashHeartbeatToken(`adopt_${router.id}`),
      createdAt: new Date(T0),
      expiresAt: new Date(T0 + 3_600_000),
      countsFrom: new Date(T0),
    });
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
});
