import {
  AccessRepository,
  acquireJobEngine,
  type AuditOrigin,
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
import {
  deriveAccessPassword,
  ManualClock,
  parseTunnelNetwork,
  type TCreateAccessInput,
  type TCreateForwardInput,
} from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { ForwardsService } from "../forwards/forwards.service.ts";
import { AccessService, type AccessServiceDeps } from "./access.service.ts";

// The service tier (docs/contributing.md "Add a test"): the service called directly on a real
// database with the real migrations, repositories and job engine; only time is faked. Forwards are
// made by the real ForwardsService on the same entry point, since both count against one set of
// quotas and one port range.

let db: TestDatabase;
let engine: JobEngine;
const T0 = new Date("2026-11-21T12:00:00Z");
const MINUTE = 60_000;
const PASSWORD_KEY = "k".repeat(48);
const ENGINEER: AuditOrigin = { actor: { type: "user", id: crypto.randomUUID() }, sourceIp: "203.0.113.7" };

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  await engine.defineQueue(routerJobsQueue());
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

/** Access and forwards services on one entry point of their own and one clock, with the same quotas. */
const services = (overrides: Partial<AccessServiceDeps> = {}) => {
  const clock = new ManualClock(T0);
  const deps: AccessServiceDeps = {
    db,
    jobs: engine,
    clock,
    entryPoint: { host: unique("ep"), ports: [40000, 40999] },
    maxActivePerOrg: 1_000,
    passwordKey: PASSWORD_KEY,
    ...overrides,
  };
  const forwards = new ForwardsService({
    db,
    jobs: engine,
    clock,
    entryPoint: deps.entryPoint,
    maxActivePerOrg: deps.maxActivePerOrg,
    ...(deps.maxActivePerRouter === undefined ? {} : { maxActivePerRouter: deps.maxActivePerRouter }),
    ...(deps.trialForwards === undefined ? {} : { trialForwards: deps.trialForwards }),
  });
  return { access: new AccessService(deps), forwards, clock };
};

const owner = () => makeUser(db);
const body = (routerId: string, overrides: Partial<TCreateAccessInput> = {}): TCreateAccessInput => ({
  router_id: routerId,
  service: "winbox",
  level: "read",
  expire_after_minutes: 15,
  allow_from: "8.8.8.8",
  ...overrides,
});
const forwardBody = (routerId: string): TCreateForwardInput => ({
  router_id: routerId,
  expire_after_minutes: 60,
  dst_port: 22,
  dst_address: "192.168.88.10",
  allow_from: "8.8.8.0/24",
});
const stored = (routerId: string, id: string) => new AccessRepository(queryOf(db)).get(routerId, id);
const auditOf = (id: string) =>
  db.query<{ action: string; actor_type: string; source_ip: string | null; details: unknown }>(
    "select action, actor_type, source_ip, details from audit_log where target_id = $1 order by occurred_at, action",
    [id],
  );
const jobKinds = async (routerId: string) => (await listRouterJobs(db, { routerId })).map((j) => j.kind);

describe("AccessService (service tier)", () => {
  it("stores an active session with its access.apply job and router.access.created entry; the password is derived, not stored", async () => {
    const { access } = services({ entryPoint: { host: unique("ep"), ports: [41000, 41000] } });
    const o = await owner();
    const router = await makeRouter(db, o, { tunnelIp: "127.0.0.9" });
    const data = await access.create(o.teamId, body(router.id, { level: "full", service: "ssh" }), ENGINEER);
    expect(data).toMatchObject({
      service: "ssh",
      level: "full",
      port: 41000,
      username: `fleet-tmp-${data.id.slice(0, 8)}`,
      expired: false,
      revoked_early: false,
      expires_at: "2026-11-21T12:15:00+00:00",
    });
    expect(data.password).toBe(deriveAccessPassword(PASSWORD_KEY, data.id));
    expect(JSON.stringify(await db.query("select * from router_access where id = $1", [data.id]))).not.toContain(
      data.password,
    );
    expect(await listRouterJobs(db, { routerId: router.id })).toMatchObject([
      { kind: "access.apply", routerId: router.id, state: "created", attempts: 0 },
    ]);
    expect(await auditOf(data.id)).toMatchObject([
      {
        action: "router.access.created",
        actor_type: "user",
        source_ip: "203.0.113.7",
        details: { service: "ssh", level: "full", port: 41000, allow_from: "8.8.8.8" },
      },
    ]);
    expect(await access.list(o.teamId, router.id)).toEqual([withoutPassword(data)]);
  });

  it("answers 404 for unknown, foreign and malformed ids and 409 without a reachable tunnel address, changing nothing", async () => {
    const network = parseTunnelNetwork("100.64.0.0/10");
    if (typeof network === "string") throw new Error(network);
    const { access } = services({ tunnelNetwork: network });
    const o = await owner();
    const stranger = await owner();
    const router = await makeRouter(db, o, { tunnelIp: "100.64.1.1" });
    const silent = await makeRouter(db, o, { tunnelIp: null });
    const outside = await makeRouter(db, o, { tunnelIp: "127.0.0.77" });
    const mine = await access.create(o.teamId, body(router.id), ENGINEER);
    const before = await databaseFingerprint(db);
    for (const [teamId, routerId] of [
      [o.teamId, crypto.randomUUID()],
      [stranger.teamId, router.id],
      [o.teamId, "not-a-uuid"],
    ] as const) {
      expect((await rejection(access.create(teamId, body(routerId), ENGINEER))).code).toBe("not_found");
      expect((await rejection(access.list(teamId, routerId))).code).toBe("not_found");
      expect((await rejection(access.get(teamId, routerId, mine.id))).code).toBe("not_found");
      expect((await rejection(access.revoke(teamId, routerId, mine.id, ENGINEER))).code).toBe("not_found");
    }
    expect((await rejection(access.get(o.teamId, router.id, crypto.randomUUID()))).code).toBe("not_found");
    expect((await rejection(access.revoke(o.teamId, router.id, "not-a-uuid", ENGINEER))).code).toBe("not_found");
    for (const unreachable of [silent, outside]) {
      const refused = await rejection(access.create(o.teamId, body(unreachable.id), ENGINEER));
      expect(refused.code).toBe("conflict");
      expect(refused.message).toMatch(/tunnel_ip/);
    }
    expect(await databaseFingerprint(db)).toBe(before);
    expect(await stored(router.id, mine.id)).toMatchObject({ status: "active" });
  });

  it("per router, forwards and sessions share the cap: n together pass, the n+1st of either kind is 429 and changes nothing", async () => {
    const { access, forwards, clock } = services({ maxActivePerRouter: 3 });
    const o = await owner();
    const router = await makeRouter(db, o);
    await forwards.create(o.teamId, { ...forwardBody(router.id), expire_after_minutes: 5 }, SYSTEM_ORIGIN);
    await access.create(o.teamId, body(router.id), ENGINEER);
    clock.advance(1_500);
    await access.create(o.teamId, body(router.id), ENGINEER);
    const before = await databaseFingerprint(db);
    const refused = await rejection(access.create(o.teamId, body(router.id), ENGINEER));
    // The forward's 300 s minus the 1.5 s that passed, rounded up to whole seconds.
    expect(refused).toMatchObject({
      code: "rate_limited",
      retryAfterSeconds: 299,
      extra: { limit: 3, retry_after_seconds: 299 },
    });
    expect(refused.message).toMatch(/already has 3 active forwards and access sessions/);
    expect((await rejection(forwards.create(o.teamId, forwardBody(router.id), SYSTEM_ORIGIN))).code).toBe(
      "rate_limited",
    );
    expect(await databaseFingerprint(db)).toBe(before);
    // Another router of the same organization is not capped by this one.
    await access.create(o.teamId, body((await makeRouter(db, o)).id), ENGINEER);
  });

  it("per billing root, forwards and sessions share FORWARDS_PER_ORG across routers; a revoke frees a slot", async () => {
    const { access, forwards } = services({ maxActivePerOrg: 3 });
    const o = await owner();
    const [a, b] = [await makeRouter(db, o), await makeRouter(db, o)];
    await forwards.create(o.teamId, forwardBody(a.id), SYSTEM_ORIGIN);
    const first = await access.create(o.teamId, body(a.id), ENGINEER);
    await access.create(o.teamId, body(b.id), ENGINEER);
    for (const router of [a, b]) {
      const before = await databaseFingerprint(db);
      const refused = await rejection(access.create(o.teamId, body(router.id), ENGINEER));
      expect(refused).toMatchObject({ code: "rate_limited", extra: { limit: 3, trial: false } });
      expect(refused.message).toMatch(/billing account already hold 3 active forwards and access sessions/);
      expect((await rejection(forwards.create(o.teamId, forwardBody(router.id), SYSTEM_ORIGIN))).code).toBe(
        "rate_limited",
      );
      expect(await databaseFingerprint(db)).toBe(before);
    }
    const other = await owner();
    await access.create(other.teamId, body((await makeRouter(db, other)).id), ENGINEER);
    await access.revoke(o.teamId, a.id, first.id, ENGINEER);
    await access.create(o.teamId, body(b.id), ENGINEER);
  });

  it("TRIAL_FORWARDS applies to a billing root without a payment method", async () => {
    const { access, forwards } = services({ maxActivePerOrg: 10, trialForwards: 2 });
    const o = await owner();
    const router = await makeRouter(db, o);
    await forwards.create(o.teamId, forwardBody(router.id), SYSTEM_ORIGIN);
    await access.create(o.teamId, body(router.id), ENGINEER);
    const refused = await rejection(access.create(o.teamId, body(router.id), ENGINEER));
    expect(refused).toMatchObject({ code: "rate_limited", extra: { limit: 2, trial: true } });
    expect(refused.message).toMatch(/Without a payment method on file/);
  });

  it("holds the per-router cap under concurrent creates", async () => {
    const { access } = services({ maxActivePerRouter: 4 });
    const o = await owner();
    const router = await makeRouter(db, o);
    const settled = await Promise.allSettled(
      Array.from({ length: 8 }, () => access.create(o.teamId, body(router.id), ENGINEER)),
    );
    expect(settled.filter((r) => r.status === "fulfilled")).toHaveLength(4);
    expect(await access.list(o.teamId, router.id)).toHaveLength(4);
    expect((await jobKinds(router.id)).filter((k) => k === "access.apply")).toHaveLength(4);
  });

  it("shares the entry point's port range with forwards: a port held by a forward leaves capacity_exhausted", async () => {
    const { access, forwards } = services({ entryPoint: { host: unique("ep"), ports: [42000, 42000] } });
    const o = await owner();
    const router = await makeRouter(db, o);
    const forward = await forwards.create(o.teamId, forwardBody(router.id), SYSTEM_ORIGIN);
    const before = await databaseFingerprint(db);
    const refused = await rejection(access.create(o.teamId, body(router.id), ENGINEER));
    expect(refused).toMatchObject({ code: "capacity_exhausted" });
    expect(await databaseFingerprint(db)).toBe(before);
    await forwards.delete(o.teamId, router.id, forward.id, SYSTEM_ORIGIN);
    expect((await access.create(o.teamId, body(router.id), ENGINEER)).port).toBe(42000);
  });

  it("revokes once: revoked with one access.remove job and one audit entry by the caller, then the same answer", async () => {
    const { access, clock } = services();
    const o = await owner();
    const router = await makeRouter(db, o);
    const data = await access.create(o.teamId, body(router.id), ENGINEER);
    clock.advance(1000);
    await access.revoke(o.teamId, router.id, data.id, ENGINEER);
    await access.revoke(o.teamId, router.id, data.id, ENGINEER);
    expect(await stored(router.id, data.id)).toMatchObject({ status: "revoked", closedAt: clock.now() });
    expect(await access.get(o.teamId, router.id, data.id)).toMatchObject({ revoked_early: true, expired: false });
    expect(await access.list(o.teamId, router.id)).toEqual([]);
    expect(await jobKinds(router.id)).toEqual(["access.apply", "access.remove"]);
    expect(await auditOf(data.id)).toMatchObject([
      { action: "router.access.created" },
      { action: "router.access.revoked", actor_type: "user", source_ip: "203.0.113.7" },
    ]);
  });

  it("closes a session past its time as expired, audited by the system", async () => {
    const { access, clock } = services();
    const o = await owner();
    const router = await makeRouter(db, o);
    const data = await access.create(o.teamId, body(router.id, { expire_after_minutes: 1 }), ENGINEER);
    clock.advance(MINUTE);
    expect(await access.get(o.teamId, router.id, data.id)).toMatchObject({ expired: true });
    await access.revoke(o.teamId, router.id, data.id, ENGINEER);
    expect(await stored(router.id, data.id)).toMatchObject({ status: "expired" });
    expect(await auditOf(data.id)).toMatchObject([
      { action: "router.access.created" },
      { action: "router.access.expired", actor_type: "system", source_ip: null },
    ]);
    expect(await jobKinds(router.id)).toEqual(["access.apply", "access.remove"]);
  });
});

function withoutPassword<T extends { password?: unknown }>(value: T): Omit<T, "password"> {
  const { password: _password, ...rest } = value;
  return rest;
}
