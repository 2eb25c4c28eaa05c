import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase, unique } from "../testing/index.ts";
import { type CreateForwardResult, ForwardsRepository, type NewForward } from "./forwards.repository.ts";
import { acquireJobEngine, type JobEngine } from "../jobs/job-engine.ts";
import { listRouterJobs, routerJobsQueue } from "../jobs/router-jobs.ts";

let db: TestDatabase;
let forwards: ForwardsRepository;
let engine: JobEngine;
const jobs = { list: (filter: { forwardId?: string; kind?: string }) => listRouterJobs(db, filter) };
const T0 = new Date("2026-11-21T12:00:00Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
const HOUR = 3_600_000;

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  await engine.defineQueue(routerJobsQueue());
  forwards = new ForwardsRepository(db, engine);
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

const owner = async () => {
  const user = await makeUser(db);
  return { organizationId: user.organizationId, teamId: user.teamId };
};

/** A fresh entry point name per test keeps port ranges of tests sharing the database apart. */
const input = (routerId: string, teamId: string, overrides: Partial<NewForward> = {}): NewForward => ({
  routerId,
  teamId,
  entryPoint: unique("ep"),
  ports: [40000, 40999],
  dstAddress: "192.168.88.10",
  dstPort: 22,
  allowOnlyCidr: "8.8.8.0/24",
  expiresAt: at(HOUR),
  maxActivePerRouter: 20,
  maxActivePerOrg: 1_000,
  ...overrides,
});

const created = (result: CreateForwardResult) => {
  if (!result.ok) throw new Error(`create failed: ${result.reason}`);
  return result.forward;
};

describe("ForwardsRepository", () => {
  it("stores an active forward and queues its apply job in the same transaction", async () => {
    const o = await owner();
    const router = await makeRouter(db, o, { tunnelIp: "127.0.0.9" });
    const forward = created(await forwards.create(input(router.id, o.teamId, { ports: [41000, 41000] }), T0));
    expect(forward).toMatchObject({
      routerId: router.id,
      port: 41000,
      dstAddress: "192.168.88.10",
      dstPort: 22,
      allowOnlyCidr: "8.8.8.0/24",
      status: "active",
      closedAt: null,
      appliedAt: null,
    });
    expect(forward.expiresAt.toISOString()).toBe(at(HOUR).toISOString());
    const queued = await jobs.list({ forwardId: forward.id });
    expect(queued).toHaveLength(1);
    expect(queued[0]).toMatchObject({
      kind: "forward.apply",
      routerId: router.id,
      forwardId: forward.id,
      state: "created",
      attempts: 0,
    });
    expect(await forwards.findForAgent(forward.id)).toMatchObject({
      tunnelIp: "127.0.0.9",
      forward: { id: forward.id },
    });
  });

  it("answers router_not_found for unknown, foreign and malformed router ids, and no_tunnel_ip before a heartbeat", async () => {
    const o = await owner();
    const stranger = await owner();
    const router = await makeRouter(db, o);
    const silent = await makeRouter(db, o, { tunnelIp: null });
    expect(await forwards.create(input(crypto.randomUUID(), o.teamId), T0)).toEqual({
      ok: false,
      reason: "router_not_found",
    });
    expect(await forwards.create(input(router.id, stranger.teamId), T0)).toEqual({
      ok: false,
      reason: "router_not_found",
    });
    expect(await forwards.create(input("not-a-uuid", o.teamId), T0)).toEqual({ ok: false, reason: "router_not_found" });
    expect(await forwards.create(input(silent.id, o.teamId), T0)).toEqual({ ok: false, reason: "no_tunnel_ip" });
    expect(await forwards.listActive(router.id, T0)).toEqual([]);
  });

  it("caps active forwards per router; expired ones do not count", async () => {
    const o = await owner();
    const router = await makeRouter(db, o);
    const entryPoint = unique("ep");
    const cap = { maxActivePerRouter: 3, entryPoint };
    created(await forwards.create(input(router.id, o.teamId, { ...cap, expiresAt: at(60_000) }), T0));
    created(await forwards.create(input(router.id, o.teamId, cap), T0));
    created(await forwards.create(input(router.id, o.teamId, cap), T0));
    // freesAt: when the earliest counted forward expires (the API's Retry-After).
    expect(await forwards.create(input(router.id, o.teamId, cap), T0)).toEqual({
      ok: false,
      reason: "router_cap",
      freesAt: at(60_000),
    });
    // The first one's time has passed (no sweep yet): it no longer counts.
    created(await forwards.create(input(router.id, o.teamId, cap), at(60_000)));
    expect(await forwards.create(input(router.id, o.teamId, cap), at(60_000))).toEqual({
      ok: false,
      reason: "router_cap",
      freesAt: at(HOUR),
    });
  });

  it("caps active forwards per billing root across its routers, and only that organization", async () => {
    const o = await owner();
    const [a, b] = [await makeRouter(db, o), await makeRouter(db, o)];
    const entryPoint = unique("ep");
    const cap = { maxActivePerOrg: 3, entryPoint };
    created(await forwards.create(input(a.id, o.teamId, { ...cap, expiresAt: at(120_000) }), T0));
    created(await forwards.create(input(b.id, o.teamId, cap), T0));
    created(await forwards.create(input(b.id, o.teamId, cap), T0));
    for (const router of [a, b]) {
      expect(await forwards.create(input(router.id, o.teamId, cap), T0)).toEqual({
        ok: false,
        reason: "org_cap",
        freesAt: at(120_000),
        limit: 3,
        trial: false,
      });
    }
    const other = await owner();
    const theirs = await makeRouter(db, other);
    created(await forwards.create(input(theirs.id, other.teamId, cap), T0));
    expect(await forwards.listActive(a.id, T0)).toHaveLength(1);
  });

  it("holds the organization cap under concurrent creates on several routers", async () => {
    const o = await owner();
    const routers = await Promise.all(Array.from({ length: 3 }, () => makeRouter(db, o)));
    const entryPoint = unique("ep");
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        forwards.create(input(routers[i % 3]?.id ?? "", o.teamId, { entryPoint, maxActivePerOrg: 5 }), T0),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    expect(results.filter((r) => !r.ok && r.reason === "org_cap")).toHaveLength(7);
  });

  it("holds the cap under concurrent creates on one router", async () => {
    const o = await owner();
    const router = await makeRouter(db, o);
    const entryPoint = unique("ep");
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        forwards.create(input(router.id, o.teamId, { entryPoint, maxActivePerRouter: 4 }), T0),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(4);
    expect(results.filter((r) => !r.ok && r.reason === "router_cap")).toHaveLength(6);
    expect(await forwards.listActive(router.id, T0)).toHaveLength(4);
  });

  it("allocates every port of a range once under concurrent creates, then reports the range exhausted", async () => {
    const o = await owner();
    const routers = await Promise.all(Array.from({ length: 4 }, () => makeRouter(db, o)));
    const entryPoint = unique("ep");
    const ports: [number, number] = [42000, 42011];
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        forwards.create(input(routers[i % 4]?.id ?? "", o.teamId, { entryPoint, ports }), T0),
      ),
    );
    const allocated = results.map((r) => created(r).port).sort((a, b) => a - b);
    expect(allocated).toEqual(Array.from({ length: 12 }, (_, i) => 42000 + i));
    expect(await forwards.create(input(routers[0]?.id ?? "", o.teamId, { entryPoint, ports }), T0)).toEqual({
      ok: false,
      reason: "ports_exhausted",
    });
    // A closed forward frees its port for the next create.
    const first = created(results[0] as CreateForwardResult);
    await forwards.close(first.routerId, first.id, at(1000));
    const reused = created(
      await forwards.create(input(routers[0]?.id ?? "", o.teamId, { entryPoint, ports }), at(1000)),
    );
    expect(reused.port).toBe(first.port);
  });

  it("frees ports held by forwards past expiry when the range is otherwise full", async () => {
    const o = await owner();
    const router = await makeRouter(db, o);
    const entryPoint = unique("ep");
    const stale = created(
      await forwards.create(
        input(router.id, o.teamId, { entryPoint, ports: [43000, 43000], expiresAt: at(60_000) }),
        T0,
      ),
    );
    const fresh = created(
      await forwards.create(input(router.id, o.teamId, { entryPoint, ports: [43000, 43000] }), at(60_000)),
    );
    expect(fresh.port).toBe(43000);
    expect(await forwards.get(router.id, stale.id)).toMatchObject({ status: "expired" });
    expect((await jobs.list({ forwardId: stale.id })).map((j) => j.kind)).toEqual(["forward.apply", "forward.remove"]);
  });

  it("closes a forward once: revoked early with a removal job, then a no-op", async () => {
    const o = await owner();
    const router = await makeRouter(db, o);
    const forward = created(await forwards.create(input(router.id, o.teamId), T0));
    const closed = await forwards.close(router.id, forward.id, at(1000));
    expect(closed).toMatchObject({ id: forward.id, status: "revoked" });
    expect(closed?.closedAt?.toISOString()).toBe(at(1000).toISOString());
    expect(await forwards.close(router.id, forward.id, at(2000))).toBeNull();
    expect(await forwards.close(crypto.randomUUID(), forward.id, at(2000))).toBeNull();
    const removals = await jobs.list({ forwardId: forward.id, kind: "forward.remove" });
    expect(removals).toHaveLength(1);
    expect(removals[0]?.routerId).toBe(router.id);
    expect(await forwards.listActive(router.id, at(2000))).toEqual([]);
    expect(await forwards.get(router.id, forward.id)).toMatchObject({ status: "revoked" });
  });

  it("closes a forward past its time as expired, not revoked", async () => {
    const o = await owner();
    const router = await makeRouter(db, o);
    const forward = created(await forwards.create(input(router.id, o.teamId, { expiresAt: at(60_000) }), T0));
    expect(await forwards.close(router.id, forward.id, at(60_000))).toMatchObject({ status: "expired" });
  });

  it("sweeps exactly the forwards whose time has come, once", async () => {
    const o = await owner();
    const router = await makeRouter(db, o);
    const entryPoint = unique("ep");
    const soon = created(
      await forwards.create(input(router.id, o.teamId, { entryPoint, expiresAt: at(10 * 60_000) }), T0),
    );
    const later = created(
      await forwards.create(input(router.id, o.teamId, { entryPoint, expiresAt: at(20 * 60_000) }), T0),
    );
    expect((await forwards.nextExpiry())?.getTime()).toBeLessThanOrEqual(soon.expiresAt.getTime());
    expect((await forwards.expireDue(at(10 * 60_000 - 1))).filter((f) => f.routerId === router.id)).toEqual([]);
    const swept = (await forwards.expireDue(at(10 * 60_000))).filter((f) => f.routerId === router.id);
    expect(swept.map((f) => [f.id, f.status])).toEqual([[soon.id, "expired"]]);
    expect((await forwards.expireDue(at(10 * 60_000))).filter((f) => f.routerId === router.id)).toEqual([]);
    expect(await jobs.list({ forwardId: soon.id, kind: "forward.remove" })).toHaveLength(1);
    expect((await forwards.listActive(router.id, at(10 * 60_000))).map((f) => f.id)).toEqual([later.id]);
    // The relay serves a forward only once its rule is on the router (state `active`), never while pending.
    expect(await forwards.relayTargets(entryPoint, at(10 * 60_000))).toEqual([]);
    await forwards.markApplied(later.id, at(60_000));
    expect((await forwards.relayTargets(entryPoint, at(10 * 60_000))).map((t) => t.id)).toEqual([later.id]);
    expect(await forwards.routersToReconcile(T0)).toContain(router.id);
  });

  it("leaves routers without a pulse out of reconciliation (their jobs could only fail)", async () => {
    const o = await owner();
    const online = await makeRouter(db, o, { hasPulse: true });
    const offline = await makeRouter(db, o, { hasPulse: false });
    for (const router of [online, offline]) created(await forwards.create(input(router.id, o.teamId), T0));
    const routers = await forwards.routersToReconcile(T0);
    expect(routers).toContain(online.id);
    expect(routers).not.toContain(offline.id);
    await db.query("update router_liveness set has_pulse = true where router_id = $1", [offline.id]);
    expect(await forwards.routersToReconcile(T0)).toContain(offline.id);
  });
});
