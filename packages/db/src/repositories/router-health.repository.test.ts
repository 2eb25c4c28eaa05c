import { hashHeartbeatToken } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "../testing/index.ts";
import { HeartbeatsRepository } from "./heartbeats.repository.ts";
import { type HealthValues, type LatestHealthRecord, RouterHealthRepository } from "./router-health.repository.ts";

// The latest values are written by the heartbeat flush (its merge rule is tested in
// heartbeats.repository.test.ts); these tests read them back.

let db: TestDatabase;
let health: RouterHealthRepository;
let heartbeats: HeartbeatsRepository;
let owner: { organizationId: string; teamId: string };
const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);

beforeAll(async () => {
  db = await createTestDatabase();
  health = new RouterHealthRepository(db);
  heartbeats = new HeartbeatsRepository(db);
  const user = await makeUser(db);
  owner = { organizationId: user.organizationId, teamId: user.teamId };
});
afterAll(async () => {
  await db?.close();
});

const values = (reported: Partial<HealthValues>): HealthValues => ({
  cpuLoad: null,
  memoryUsedPercent: null,
  diskUsedPercent: null,
  temperature: null,
  voltage: null,
  pingLossPercent: null,
  pingRttMs: null,
  ...reported,
});

/** Heartbeats carrying health, written as the daemon's flush writes them. */
const report = (beats: Array<{ router: { id: string; heartbeatToken: string }; values: Partial<HealthValues> }>) =>
  heartbeats.applyHeartbeats(
    beats.map(({ router, values: reported }) => ({
      routerId: router.id,
      tokenHash: hashHeartbeatToken(router.heartbeatToken),
      seenAt: new Date(T0),
      peer: null,
      health: { atMs: T0, values: values(reported) },
    })),
    60_000,
  );

const record = (routerId: string, reported: Partial<HealthValues>): LatestHealthRecord => ({
  routerId,
  reportedAt: new Date(T0),
  ...values(reported),
});

describe("RouterHealthRepository (the latest values in router_liveness)", () => {
  it("reads the latest values of one router or many; a router that never reported has none", async () => {
    const router = await makeRouter(db, owner);
    const other = await makeRouter(db, owner);
    const never = await makeRouter(db, owner);
    await report([
      { router, values: { cpuLoad: 12.5, memoryUsedPercent: 50, pingLossPercent: 20, pingRttMs: 1.5 } },
      { router: other, values: { cpuLoad: 99 } },
    ]);
    expect(await health.latest(router.id)).toEqual(
      record(router.id, { cpuLoad: 12.5, memoryUsedPercent: 50, pingLossPercent: 20, pingRttMs: 1.5 }),
    );
    expect(await health.latest(never.id)).toBeNull();
    const many = await health.latestOf([router.id, other.id, never.id]);
    expect([...many.keys()].sort()).toEqual([router.id, other.id].sort());
    expect(many.get(other.id)).toEqual(record(other.id, { cpuLoad: 99 }));
  });

  it("goes with its router", async () => {
    const router = await makeRouter(db, owner);
    await report([{ router, values: { cpuLoad: 5 } }]);
    expect(await health.latest(router.id)).not.toBeNull();
    await db.query("delete from routers where id = $1", [router.id]);
    expect(await health.latest(router.id)).toBeNull();
  });
});
