import { AuditLogRepository, insertAuditEntries, queryOf, SYSTEM_ORIGIN } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { EVENT_LIMITS } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { AuditLogService } from "./audit-log.service.ts";

// The service tier (docs/contributing.md "Add a test"): the audit log's paging and tenancy rules on
// a real database with the real repository; the HTTP test keeps status codes and the body.

let db: TestDatabase;
let service: AuditLogService;
beforeAll(async () => {
  db = await createTestDatabase();
  service = new AuditLogService(new AuditLogRepository(db));
});
afterAll(async () => {
  await db?.close();
});

const START = Date.UTC(2026, 10, 1);

/** `n` entries of one organization, three to a millisecond (ties are broken by id), target ids "1".."n". */
const seed = async (organizationId: string, n: number, extra: { routerId?: string; action?: string } = {}) =>
  insertAuditEntries(
    queryOf(db),
    Array.from({ length: n }, (_, i) => ({
      organizationId,
      occurredAt: new Date(START + Math.floor((i + 1) / 3) * 1000),
      action: extra.action ?? "api_key.created",
      actor: SYSTEM_ORIGIN.actor,
      target: { type: "api_key", id: String(i + 1) },
      routerId: extra.routerId ?? null,
    })),
  );

describe("AuditLogService (service tier)", () => {
  it("pages newest first with next_cursor, without gaps or repeats (ties broken by id)", async () => {
    const { organizationId } = await makeUser(db);
    await seed(organizationId, 25);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await service.list(organizationId, { limit: 7, ...(cursor ? { cursor } : {}) });
      seen.push(...page.data.map((e) => e.target.id));
      cursor = page.next_cursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(new Set(seen).size).toBe(25);
    const all = (await service.list(organizationId, { limit: EVENT_LIMITS.auditPage.max })).data;
    expect(all.map((e) => e.target.id)).toEqual(seen);
    const times = all.map((e) => Date.parse(e.occurred_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it("answers next_cursor only when more entries exist than the limit: n entries none, n+1 one; the default is 50", async () => {
    const { organizationId } = await makeUser(db);
    await seed(organizationId, 5);
    expect((await service.list(organizationId, { limit: 5 })).next_cursor).toBeNull();
    const four = await service.list(organizationId, { limit: 4 });
    expect(four.data).toHaveLength(4);
    expect(four.next_cursor).not.toBeNull();
    expect((await service.list(organizationId, { limit: 1 })).data).toHaveLength(1);
    const many = await makeUser(db);
    await seed(many.organizationId, EVENT_LIMITS.auditPage.default + 1);
    const first = await service.list(many.organizationId, {});
    expect(first.data).toHaveLength(EVENT_LIMITS.auditPage.default);
    expect(first.next_cursor).not.toBeNull();
  });

  it("refuses a cursor it did not hand out and an unknown action, changing nothing; a malformed router id matches nothing", async () => {
    const { organizationId } = await makeUser(db);
    await seed(organizationId, 3);
    const before = await databaseFingerprint(db);
    const badCursor = await rejection(service.list(organizationId, { cursor: "nonsense" }));
    expect(badCursor).toMatchObject({ code: "validation_failed", fields: { cursor: [expect.any(String)] } });
    const badAction = await rejection(service.list(organizationId, { action: "router.exploded" }));
    expect(badAction).toMatchObject({ code: "validation_failed", fields: { action: [expect.any(String)] } });
    expect(await service.list(organizationId, { router_id: "not-a-uuid" })).toEqual({
      data: [],
      next_cursor: null,
    });
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("shows only the organization's entries, whatever the filter or cursor", async () => {
    const a = await makeUser(db);
    const b = await makeUser(db);
    const routerA = await makeRouter(db, a);
    await seed(a.organizationId, 5);
    await seed(a.organizationId, 1, { routerId: routerA.id, action: "router.offline" });
    expect((await service.list(b.organizationId, {})).data).toEqual([]);
    expect((await service.list(b.organizationId, { router_id: routerA.id })).data).toEqual([]);
    expect((await service.list(b.organizationId, { action: "router.offline" })).data).toEqual([]);
    const cursorOfA = (await service.list(a.organizationId, { limit: 2 })).next_cursor ?? "";
    expect(cursorOfA).not.toBe("");
    expect((await service.list(b.organizationId, { cursor: cursorOfA })).data).toEqual([]);
    expect((await service.list(a.organizationId, { router_id: routerA.id })).data).toHaveLength(1);
    expect((await service.list(a.organizationId, { action: "router.offline" })).data).toHaveLength(1);
  });
});
