import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryOf } from "../database.ts";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "../testing/index.ts";
import { type LatestHealthRecord, RouterHealthRepository } from "./router-health.repository.ts";

let db: TestDatabase;
let health: RouterHealthRepository;
let owner: { organizationId: string; teamId: string };
const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);

beforeAll(async () => {
  db = await createTestDatabase();
  health = new RouterHealthRepository(db);
  const user = await makeUser(db);
  owner = { organizationId: user.organizationId, teamId: user.teamId };
});
afterAll(async () => {
  await db?.close();
});

const record = (routerId: string, atMs: number, values: Partial<LatestHealthRecord> = {}): LatestHealthRecord => ({
  routerId,
  reportedAt: new Date(atMs),
  cpuLoad: null,
  memoryUsedPercent: null,
  diskUsedPercent: null,
  temperature: null,
  voltage: null,
  pingLossPercent: null,
  pingRttMs: null,
  ...values,
});

describe("RouterHealthRepository (the latest values in router_liveness)", () => {
  it("upserts the latest values; a measure not reported keeps its last value; an older report changes nothing", async () => {
    const router = await makeRouter(db, owner);
    const other = await makeRouter(db, owner);
    expect(await health.latest(router.id)).toBeNull();
    await RouterHealthRepository.upsertLatest(queryOf(db), [
      record(router.id, T0, { cpuLoad: 12.5, memoryUsedPercent: 50, pingLossPercent: 20, pingRttMs: 1.5 }),
      record(other.id, T0, { cpuLoad: 99 }),
    ]);
    await RouterHealthRepository.upsertLatest(queryOf(db), [record(router.id, T0 + 30_000, { cpuLoad: 40 })]);
    await RouterHealthRepository.upsertLatest(queryOf(db), [record(router.id, T0 + 10_000, { cpuLoad: 1 })]);
    expect(await health.latest(router.id)).toEqual(
      record(router.id, T0 + 30_000, { cpuLoad: 40, memoryUsedPercent: 50, pingLossPercent: 20, pingRttMs: 1.5 }),
    );
    const both = await health.latestOf([router.id, other.id]);
    expect(both.get(other.id)?.cpuLoad).toBe(99);
    expect(both.size).toBe(2);
  });

  it("skips a router that no longer exists, and goes with its router", async () => {
    const router = await makeRouter(db, owner);
    await RouterHealthRepository.upsertLatest(queryOf(db), [
      record(router.id, T0, { cpuLoad: 5 }),
      record("00000000-0000-4000-8000-000000000000", T0, { cpuLoad: 5 }),
    ]);
    expect(await health.latest(router.id)).not.toBeNull();
    await db.query("delete from routers where id = $1", [router.id]);
    expect(await health.latest(router.id)).toBeNull();
  });
});
