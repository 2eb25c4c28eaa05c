import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryOf } from "../database.ts";
import { acquireJobEngine, type JobEngine } from "../jobs/job-engine.ts";
import { listRouterJobs, routerJobsQueue } from "../jobs/router-jobs.ts";
import {
  createTestDatabase,
  expireForwards,
  makeForward,
  makeRouter,
  makeUser,
  type TestDatabase,
  unique,
} from "../testing/index.ts";
import { ForwardTargetsRepository } from "./forward-targets.repository.ts";
import { ForwardsRepository } from "./forwards.repository.ts";

// The rules (quotas, ports, jobs, audit) are the services' and tested there
// (apps/api/src/features/forwards/forwards.service.test.ts); these are the statements.

let db: TestDatabase;
let engine: JobEngine;
let forwards: ForwardsRepository;
let targets: ForwardTargetsRepository;
const T0 = new Date("2026-11-21T12:00:00Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
const HOUR = 3_600_000;

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  await engine.defineQueue(routerJobsQueue());
  forwards = new ForwardsRepository(queryOf(db));
  targets = new ForwardTargetsRepository(db);
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

const forwardOn = (routerId: string, overrides: { entryPoint?: string; expiresAt?: Date } = {}) =>
  makeForward(
    db,
    engine,
    {
      routerId,
      entryPoint: overrides.entryPoint ?? unique("ep"),
      ports: [40000, 40999],
      expiresAt: overrides.expiresAt ?? at(HOUR),
    },
    T0,
  );

describe("ForwardsRepository and ForwardTargetsRepository", () => {
  it("refuses a second active forward on a port of the entry point; a closed one frees it", async () => {
    const router = await makeRouter(db, await makeUser(db));
    const entryPoint = unique("ep");
    const row = {
      routerId: router.id,
      entryPoint,
      port: 41000,
      dstAddress: "192.168.88.10",
      dstPort: 22,
      allowOnlyCidr: "8.8.8.0/24",
      expiresAt: at(HOUR),
      createdAt: T0,
      createdBy: { type: "system" as const, id: null },
    };
    const first = await forwards.insertActive({ ...row, id: crypto.randomUUID() });
    expect(first).toMatchObject({ port: 41000, status: "active", appliedAt: null });
    expect(await forwards.insertActive({ ...row, id: crypto.randomUUID() })).toBeNull();
    expect(await forwards.closeActive(router.id, first?.id ?? "", at(1000))).toMatchObject({ status: "revoked" });
    expect(await forwards.closeActive(router.id, first?.id ?? "", at(2000))).toBeNull();
    expect(await forwards.insertActive({ ...row, id: crypto.randomUUID() })).toMatchObject({ port: 41000 });
  });

  it("finds a forward with its router's tunnel address for the agent", async () => {
    const router = await makeRouter(db, await makeUser(db), { tunnelIp: "127.0.0.9" });
    const forward = await forwardOn(router.id);
    expect(await targets.findForAgent(forward.id)).toMatchObject({
      tunnelIp: "127.0.0.9",
      forward: { id: forward.id },
    });
    expect(await targets.findForAgent("not-a-uuid")).toBeNull();
  });

  it("sweeps exactly the forwards whose time has come, once; the relay serves only applied ones", async () => {
    const router = await makeRouter(db, await makeUser(db));
    const entryPoint = unique("ep");
    const soon = await forwardOn(router.id, { entryPoint, expiresAt: at(10 * 60_000) });
    const later = await forwardOn(router.id, { entryPoint, expiresAt: at(20 * 60_000) });
    expect((await targets.nextExpiry())?.getTime()).toBeLessThanOrEqual(soon.expiresAt.getTime());
    const mine = <T extends { routerId: string }>(closed: T[]) => closed.filter((f) => f.routerId === router.id);
    expect(mine(await expireForwards(db, engine, at(10 * 60_000 - 1)))).toEqual([]);
    const swept = mine(await expireForwards(db, engine, at(10 * 60_000)));
    expect(swept.map((f) => [f.id, f.status])).toEqual([[soon.id, "expired"]]);
    expect(mine(await expireForwards(db, engine, at(10 * 60_000)))).toEqual([]);
    expect(await listRouterJobs(db, { forwardId: soon.id, kind: "forward.remove" })).toHaveLength(1);
    expect((await forwards.listActive(router.id, at(10 * 60_000))).map((f) => f.id)).toEqual([later.id]);
    expect(await targets.relayTargets(entryPoint, at(10 * 60_000))).toEqual([]);
    await forwards.markApplied(later.id, at(60_000));
    expect((await targets.relayTargets(entryPoint, at(10 * 60_000))).map((t) => t.id)).toEqual([later.id]);
    expect(await targets.routersToReconcile(T0)).toContain(router.id);
  });

  it("leaves routers without a pulse out of reconciliation (their jobs could only fail)", async () => {
    const o = await makeUser(db);
    const online = await makeRouter(db, o, { hasPulse: true });
    const offline = await makeRouter(db, o, { hasPulse: false });
    for (const router of [online, offline]) await forwardOn(router.id);
    const routers = await targets.routersToReconcile(T0);
    expect(routers).toContain(online.id);
    expect(routers).not.toContain(offline.id);
    await db.query("update router_liveness set has_pulse = true where router_id = $1", [offline.id]);
    expect(await targets.routersToReconcile(T0)).toContain(offline.id);
  });

  it("reports routers without an address, or with one outside the tunnel network, and how many", async () => {
    const o = await makeUser(db);
    const none = await makeRouter(db, o, { tunnelIp: null });
    const outside = await makeRouter(db, o, { tunnelIp: "10.9.8.7" });
    const inside = await makeRouter(db, o);
    const report = await targets.routersWithoutReachableTunnel("100.64.0.0/10", 1000);
    const ids = report.routers.map((r) => r.id);
    expect(ids).toEqual(expect.arrayContaining([none.id, outside.id]));
    expect(ids).not.toContain(inside.id);
    expect(report.routers.find((r) => r.id === outside.id)?.tunnelIp).toBe("10.9.8.7");
    expect(report.count).toBe(report.routers.length);
    expect((await targets.routersWithoutReachableTunnel("100.64.0.0/10", 1)).count).toBe(report.count);
  });
});
