import {
  acquireJobEngine,
  ForwardsRepository,
  type JobEngine,
  listRouterJobs,
  queryOf,
  routerJobsQueue,
  SYSTEM_ORIGIN,
} from "@fleet/db";
import {
  createTestDatabase,
  databaseFingerprint,
  makeRouter,
  makeUser,
  type TestDatabase,
  unique,
} from "@fleet/db/testing";
import { FORWARD_LIMITS, ManualClock, parseTunnelNetwork, type TCreateForwardInput } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { ForwardsService, type ForwardsServiceDeps } from "./forwards.service.ts";

// The service tier (docs/contributing.md "Add a test"): the service called directly on a real
// database with the real migrations, repositories and job engine; only time is faked.

let db: TestDatabase;
let engine: JobEngine;
const T0 = new Date("2026-11-21T12:00:00Z");
const MINUTE = 60_000;

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  await engine.defineQueue(routerJobsQueue());
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

/** A service with its own entry point (tests sharing the database never share ports) and clock. */
const service = (overrides: Partial<ForwardsServiceDeps> = {}) => {
  const clock = new ManualClock(T0);
  const deps: ForwardsServiceDeps = {
    db,
    jobs: engine,
    clock,
    entryPoint: { host: unique("ep"), ports: [40000, 40999] },
    maxActivePerOrg: 1_000,
    ...overrides,
  };
  return { forwards: new ForwardsService(deps), clock };
};

const owner = () => makeUser(db);
const body = (routerId: string, overrides: Partial<TCreateForwardInput> = {}): TCreateForwardInput => ({
  router_id: routerId,
  expire_after_minutes: 60,
  dst_port: 22,
  dst_address: "192.168.88.10",
  allow_from: "8.8.8.0/24",
  ...overrides,
});
const stored = (routerId: string, id: string) => new ForwardsRepository(queryOf(db)).get(routerId, id);

describe("ForwardsService (service tier)", () => {
  it("stores an active forward with its apply job and its audit entry in one transaction", async () => {
    const { forwards } = service({ entryPoint: { host: unique("ep"), ports: [41000, 41000] } });
    const o = await owner();
    const router = await makeRouter(db, o, { tunnelIp: "127.0.0.9" });
    const forward = await forwards.create(o.teamId, body(router.id), SYSTEM_ORIGIN);
    expect(forward).toMatchObject({ port: 41000, dst_address: "192.168.88.10", dst_port: 22 });
    expect(await listRouterJobs(db, { forwardId: forward.id })).toMatchObject([
      { kind: "forward.apply", routerId: router.id, state: "created", attempts: 0 },
    ]);
    const audit = await db.query<{ action: string }>("select action from audit_log where target_id = $1", [forward.id]);
    expect(audit.map((row) => row.action)).toEqual(["forward.created"]);
  });

  // The input as its schema hands it over (a single address already as /32).
  it.each(["127.0.0.1/32", "127.64.0.0/24"])(
    "outside development refuses the loopback allow_from %s naming allow_from, creating nothing; a public one passes",
    async (allow) => {
      const { forwards } = service({ loopbackSources: false });
      const o = await owner();
      const router = await makeRouter(db, o);
      const before = await databaseFingerprint(db);
      const refused = await rejection(forwards.create(o.teamId, body(router.id, { allow_from: allow }), SYSTEM_ORIGIN));
      expect(refused.code).toBe("validation_failed");
      expect(Object.keys(refused.fields ?? {})).toEqual(["allow_from"]);
      expect(refused.fields?.allow_from?.[0]).toMatch(/publicly routed.*loopback/);
      expect(await databaseFingerprint(db)).toBe(before);
      const accepted = await forwards.create(o.teamId, body(router.id, { allow_from: "8.8.8.8/32" }), SYSTEM_ORIGIN);
      expect(accepted).toMatchObject({ allow_only_cidr: "8.8.8.8/32", state: "pending" });
      // In development the same source is accepted.
      const dev = service({ loopbackSources: true }).forwards;
      expect(
        (await dev.create(o.teamId, body(router.id, { allow_from: allow }), SYSTEM_ORIGIN)).allow_only_cidr,
      ).toMatch(/^127\./);
    },
  );

  it("answers 404 for unknown, foreign and malformed router ids and 409 without a reachable tunnel address", async () => {
    const network = parseTunnelNetwork("100.64.0.0/10");
    if (typeof network === "string") throw new Error(network);
    const { forwards } = service({ tunnelNetwork: network });
    const o = await owner();
    const stranger = await owner();
    const router = await makeRouter(db, o, { tunnelIp: "100.64.1.1" });
    const silent = await makeRouter(db, o, { tunnelIp: null });
    const outside = await makeRouter(db, o, { tunnelIp: "127.0.0.77" });
    for (const [teamId, routerId] of [
      [o.teamId, crypto.randomUUID()],
      [stranger.teamId, router.id],
      [o.teamId, "not-a-uuid"],
    ] as const) {
      expect((await rejection(forwards.create(teamId, body(routerId), SYSTEM_ORIGIN))).code).toBe("not_found");
    }
    for (const unreachable of [silent, outside]) {
      expect((await rejection(forwards.create(o.teamId, body(unreachable.id), SYSTEM_ORIGIN))).code).toBe("conflict");
    }
    expect(await forwards.list(o.teamId, router.id)).toEqual([]);
  });

  it("caps active forwards per router with Retry-After until the earliest one expires; expired ones do not count", async () => {
    const { forwards, clock } = service({ maxActivePerRouter: 3 });
    const o = await owner();
    const router = await makeRouter(db, o);
    await forwards.create(o.teamId, body(router.id, { expire_after_minutes: 1 }), SYSTEM_ORIGIN);
    await forwards.create(o.teamId, body(router.id), SYSTEM_ORIGIN);
    await forwards.create(o.teamId, body(router.id), SYSTEM_ORIGIN);
    const full = await rejection(forwards.create(o.teamId, body(router.id), SYSTEM_ORIGIN));
    expect(full).toMatchObject({ code: "rate_limited", retryAfterSeconds: 60 });
    // The first one's time has passed (no sweep yet): it no longer counts.
    clock.advance(MINUTE);
    await forwards.create(o.teamId, body(router.id), SYSTEM_ORIGIN);
    expect((await rejection(forwards.create(o.teamId, body(router.id), SYSTEM_ORIGIN))).code).toBe("rate_limited");
  });

  it("caps active forwards per billing root across its routers, and only that organization", async () => {
    const { forwards } = service({ maxActivePerOrg: 3 });
    const o = await owner();
    const [a, b] = [await makeRouter(db, o), await makeRouter(db, o)];
    await forwards.create(o.teamId, body(a.id), SYSTEM_ORIGIN);
    await forwards.create(o.teamId, body(b.id), SYSTEM_ORIGIN);
    await forwards.create(o.teamId, body(b.id), SYSTEM_ORIGIN);
    for (const router of [a, b]) {
      const full = await rejection(forwards.create(o.teamId, body(router.id), SYSTEM_ORIGIN));
      expect(full).toMatchObject({ code: "rate_limited", extra: { limit: 3, trial: false } });
    }
    const other = await owner();
    await forwards.create(other.teamId, body((await makeRouter(db, other)).id), SYSTEM_ORIGIN);
  });

  it("holds both caps under concurrent creates", async () => {
    const { forwards } = service({ maxActivePerRouter: 4, maxActivePerOrg: 6 });
    const o = await owner();
    const routers = await Promise.all(Array.from({ length: 3 }, () => makeRouter(db, o)));
    const one = await Promise.allSettled(
      Array.from({ length: 10 }, () => forwards.create(o.teamId, body(routers[0]?.id ?? ""), SYSTEM_ORIGIN)),
    );
    expect(one.filter((r) => r.status === "fulfilled")).toHaveLength(4);
    const many = await Promise.allSettled(
      Array.from({ length: 9 }, (_, i) => forwards.create(o.teamId, body(routers[i % 3]?.id ?? ""), SYSTEM_ORIGIN)),
    );
    expect(many.filter((r) => r.status === "fulfilled")).toHaveLength(2);
  });

  it("allocates every port of a range once under concurrent creates, then answers capacity_exhausted", async () => {
    const { forwards } = service({ entryPoint: { host: unique("ep"), ports: [42000, 42011] } });
    const o = await owner();
    const routers = await Promise.all(Array.from({ length: 4 }, () => makeRouter(db, o)));
    const router = routers[0]?.id ?? "";
    const created = await Promise.all(
      Array.from({ length: 12 }, (_, i) => forwards.create(o.teamId, body(routers[i % 4]?.id ?? ""), SYSTEM_ORIGIN)),
    );
    expect(created.map((f) => f.port).sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => 42000 + i));
    expect((await rejection(forwards.create(o.teamId, body(router), SYSTEM_ORIGIN))).code).toBe("capacity_exhausted");
    // A deleted forward frees its port for the next create.
    const first = created[0]; // made on routers[0]
    if (!first) throw new Error("no forward");
    await forwards.delete(o.teamId, router, first.id, SYSTEM_ORIGIN);
    expect((await forwards.create(o.teamId, body(router), SYSTEM_ORIGIN)).port).toBe(first.port);
  });

  it("frees ports held by forwards past expiry that no sweep closed, with their removal jobs", async () => {
    const { forwards, clock } = service({ entryPoint: { host: unique("ep"), ports: [43000, 43000] } });
    const o = await owner();
    const router = await makeRouter(db, o);
    const stale = await forwards.create(o.teamId, body(router.id, { expire_after_minutes: 1 }), SYSTEM_ORIGIN);
    clock.advance(MINUTE);
    expect((await forwards.create(o.teamId, body(router.id), SYSTEM_ORIGIN)).port).toBe(43000);
    expect(await stored(router.id, stale.id)).toMatchObject({ status: "expired" });
    expect((await listRouterJobs(db, { forwardId: stale.id })).map((j) => j.kind)).toEqual([
      "forward.apply",
      "forward.remove",
    ]);
  });

  it("deletes once: revoked with one removal job and one audit entry, then the same answer", async () => {
    const { forwards, clock } = service();
    const o = await owner();
    const router = await makeRouter(db, o);
    const forward = await forwards.create(o.teamId, body(router.id), SYSTEM_ORIGIN);
    clock.advance(1000);
    await forwards.delete(o.teamId, router.id, forward.id, SYSTEM_ORIGIN);
    await forwards.delete(o.teamId, router.id, forward.id, SYSTEM_ORIGIN);
    expect(await stored(router.id, forward.id)).toMatchObject({ status: "revoked", closedAt: clock.now() });
    expect(await listRouterJobs(db, { forwardId: forward.id, kind: "forward.remove" })).toHaveLength(1);
    const audit = await db.query<{ action: string }>("select action from audit_log where target_id = $1", [forward.id]);
    expect(audit.map((row) => row.action).sort()).toEqual(["forward.created", "forward.revoked"]);
    expect((await rejection(forwards.delete(o.teamId, router.id, crypto.randomUUID(), SYSTEM_ORIGIN))).code).toBe(
      "not_found",
    );
  });

  it("closes a forward past its time as expired, not revoked", async () => {
    const { forwards, clock } = service();
    const o = await owner();
    const router = await makeRouter(db, o);
    const forward = await forwards.create(o.teamId, body(router.id, { expire_after_minutes: 1 }), SYSTEM_ORIGIN);
    clock.advance(MINUTE);
    await forwards.delete(o.teamId, router.id, forward.id, SYSTEM_ORIGIN);
    expect(await stored(router.id, forward.id)).toMatchObject({ status: "expired" });
  });

  // Moved from the HTTP tests forwards-quotas.test.ts and forwards-limits.test.ts: rules, not transport.
  it("FORWARDS_PER_ORG: Retry-After from the earliest counted expiry; a refusal changes nothing; a delete frees a slot", async () => {
    const { forwards, clock } = service({ maxActivePerOrg: 3 });
    const o = await owner();
    const [a, b] = [await makeRouter(db, o), await makeRouter(db, o)];
    const first = await forwards.create(o.teamId, body(a.id, { expire_after_minutes: 10 }), SYSTEM_ORIGIN);
    await forwards.create(o.teamId, body(b.id), SYSTEM_ORIGIN);
    clock.advance(61_500);
    await forwards.create(o.teamId, body(b.id), SYSTEM_ORIGIN);
    for (const router of [a, b]) {
      const before = await databaseFingerprint(db);
      const refused = await rejection(forwards.create(o.teamId, body(router.id), SYSTEM_ORIGIN));
      // 600 s of life minus the 61.5 s that passed, rounded up to whole seconds.
      expect(refused).toMatchObject({ code: "rate_limited", retryAfterSeconds: 539, extra: { limit: 3 } });
      expect(refused.message).toMatch(/billing account already hold 3 active transient forwards/);
      expect(await databaseFingerprint(db)).toBe(before);
    }
    await forwards.delete(o.teamId, a.id, first.id, SYSTEM_ORIGIN);
    await forwards.create(o.teamId, body(b.id), SYSTEM_ORIGIN);
  });

  it("caps a router at 20 by default, then runs the range dry with a message naming it", async () => {
    const host = unique("ep");
    const ports: [number, number] = [46000, 46000 + FORWARD_LIMITS.activePerRouter];
    const { forwards } = service({ entryPoint: { host, ports } });
    const o = await owner();
    const [a, b] = [await makeRouter(db, o), await makeRouter(db, o)];
    for (let i = 0; i < FORWARD_LIMITS.activePerRouter; i++) await forwards.create(o.teamId, body(a.id), SYSTEM_ORIGIN);
    const capped = await rejection(forwards.create(o.teamId, body(a.id), SYSTEM_ORIGIN));
    expect(capped.code).toBe("rate_limited");
    expect(capped.message).toMatch(/20 active transient forwards/);
    await forwards.create(o.teamId, body(b.id), SYSTEM_ORIGIN);
    const full = await rejection(forwards.create(o.teamId, body(b.id), SYSTEM_ORIGIN));
    expect(full).toMatchObject({
      code: "capacity_exhausted",
      message: `Every port of entry point ${host} (${ports[0]}-${ports[1]}) is in use by an active forward. Try again after one expires or is deleted.`,
    });
  });
});
