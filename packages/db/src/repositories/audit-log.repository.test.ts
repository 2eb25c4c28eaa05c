import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryOf } from "../database.ts";
import { createTestDatabase, makeRouter, makeUser, makeWebhook, type TestDatabase, unique } from "../testing/index.ts";
import { AccessRepository } from "./access.repository.ts";
import { AuditLogRepository, insertAuditEntry, type NewAuditEntry } from "./audit-log.repository.ts";

// What the API shows of these entries is tested over HTTP (apps/api/src/features/audit-log); these
// are the values the insert computes in the statement.

let db: TestDatabase;
let audit: AuditLogRepository;
const T0 = new Date("2026-11-21T12:00:00Z");
const at = (ms: number) => new Date(T0.getTime() + ms);

beforeAll(async () => {
  db = await createTestDatabase();
  audit = new AuditLogRepository(db);
});
afterAll(async () => {
  await db?.close();
});

const entry = (organizationId: string, overrides: Partial<NewAuditEntry> = {}): NewAuditEntry => ({
  organizationId,
  occurredAt: T0,
  action: "router.updated",
  actor: { type: "system", id: null },
  target: { type: "router", id: "x" },
  ...overrides,
});

const stored = async (organizationId: string, action: string) => {
  const rows = await db.query<{ team_id: string | null; dispatched: boolean }>(
    "select team_id, dispatched_at is not null as dispatched from audit_log where organization_id = $1 and action = $2",
    [organizationId, action],
  );
  return rows;
};

describe("insertAuditEntry", () => {
  it("files an entry under the team given, else its router's, else the removed router's last one", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    const otherTeam = crypto.randomUUID();
    await insertAuditEntry(queryOf(db), entry(owner.organizationId, { action: "a.given", teamId: otherTeam }));
    await insertAuditEntry(queryOf(db), entry(owner.organizationId, { action: "a.router", routerId: router.id }));
    await insertAuditEntry(queryOf(db), entry(owner.organizationId, { action: "a.none" }));
    await db.query("delete from routers where id = $1", [router.id]);
    await insertAuditEntry(queryOf(db), entry(owner.organizationId, { action: "a.removed", routerId: router.id }));

    expect((await stored(owner.organizationId, "a.given"))[0]?.team_id).toBe(otherTeam);
    expect((await stored(owner.organizationId, "a.router"))[0]?.team_id).toBe(owner.teamId);
    expect((await stored(owner.organizationId, "a.none"))[0]?.team_id).toBeNull();
    expect((await stored(owner.organizationId, "a.removed"))[0]?.team_id).toBe(owner.teamId);
  });

  it("leaves an entry in the outbox only while its organization has an enabled webhook", async () => {
    const owner = await makeUser(db);
    await insertAuditEntry(queryOf(db), entry(owner.organizationId, { action: "b.before" }));
    await makeWebhook(db, owner.organizationId);
    await insertAuditEntry(queryOf(db), entry(owner.organizationId, { action: "b.after" }));
    expect(await stored(owner.organizationId, "b.before")).toEqual([{ team_id: null, dispatched: true }]);
    expect(await stored(owner.organizationId, "b.after")).toEqual([{ team_id: null, dispatched: false }]);
  });
});

describe("AuditLogRepository", () => {
  it("records the relay's events of access sessions as router.access.connection.*; unknown ids are dropped", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    const access = await new AccessRepository(queryOf(db)).insertActive({
      id: crypto.randomUUID(),
      routerId: router.id,
      entryPoint: unique("ep"),
      port: 42000,
      service: "ssh",
      level: "read",
      username: "u",
      allowOnlyCidr: "0.0.0.0/0",
      expiresAt: at(3_600_000),
      createdAt: T0,
      createdBy: { type: "user", id: "u" },
    });
    if (!access) throw new Error("no session");
    await audit.recordForwardEvents([
      {
        forwardId: access.id,
        occurredAt: at(1000),
        action: "forward.connection.accepted",
        sourceIp: "192.0.2.1",
        details: { n: 1 },
      },
      {
        forwardId: crypto.randomUUID(),
        occurredAt: at(1000),
        action: "forward.connection.denied",
        sourceIp: null,
        details: {},
      },
    ]);
    const entries = await audit.list({ organizationId: owner.organizationId, limit: 10 });
    expect(entries).toEqual([
      expect.objectContaining({
        action: "router.access.connection.accepted",
        target: { type: "router_access", id: access.id },
        routerId: router.id,
        teamId: owner.teamId,
        sourceIp: "192.0.2.1",
        details: { n: 1 },
        occurredAt: at(1000),
      }),
    ]);
  });

  it("prunes entries older than the cut in batches and says how many went", async () => {
    const owner = await makeUser(db);
    for (const ms of [-3000, -2000, -1000, 0]) {
      await insertAuditEntry(queryOf(db), entry(owner.organizationId, { action: "c.old", occurredAt: at(ms - 1e9) }));
    }
    await insertAuditEntry(queryOf(db), entry(owner.organizationId, { action: "c.new", occurredAt: at(1e9) }));
    const before = await db.query<{ n: number }>("select count(*)::int as n from audit_log where occurred_at < $1", [
      at(-5e8),
    ]);
    expect(await audit.prune(at(-5e8), 3)).toBe(before[0]?.n);
    expect(await stored(owner.organizationId, "c.old")).toEqual([]);
    expect(await stored(owner.organizationId, "c.new")).toHaveLength(1);
  });
});
