import { ApiKeysRepository, type AuditOrigin, type NewApiKey, queryOf } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeUser, type TestDatabase } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { ApiKeysService, mintApiKey, storeApiKey } from "./api-keys.service.ts";

// The service tier (docs/contributing.md "Add a test"): the use cases called directly on a real
// database with the real migrations and repositories; only time is faked.

let db: TestDatabase;
const T0 = new Date("2026-11-21T12:00:00Z");
const DAY = 86_400_000;
const origin: AuditOrigin = { actor: { type: "system", id: null }, sourceIp: "203.0.113.9" };

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

const newKey = (organizationId: string, overrides: Partial<NewApiKey> = {}): NewApiKey => ({
  organizationId,
  createdBy: "service-test",
  name: "ci",
  ...(({ prefix, keyHash }) => ({ prefix, keyHash }))(mintApiKey()),
  scopes: ["routers:read"],
  createdAt: T0,
  expiresAt: null,
  ...overrides,
});

const auditOf = (targetId: string) =>
  db.query<{ action: string; details: unknown; source_ip: string | null }>(
    "select action, details, source_ip::text as source_ip from audit_log where target_id = $1 order by occurred_at, action",
    [targetId],
  );

const keysOf = (organizationId: string) => new ApiKeysRepository(queryOf(db)).list(organizationId);

describe("storeApiKey (service tier)", () => {
  it("stores the key with its api_key.created entry in one transaction", async () => {
    const o = await makeUser(db);
    const key = await storeApiKey(db, newKey(o.organizationId, { expiresAt: new Date(T0.getTime() + DAY) }), origin);
    expect(key).toMatchObject({ organizationId: o.organizationId, name: "ci", scopes: ["routers:read"] });
    expect(await auditOf(key?.id ?? "")).toEqual([
      {
        action: "api_key.created",
        details: {
          name: "ci",
          prefix: key?.prefix,
          scopes: ["routers:read"],
          expires_at: "2026-11-22T12:00:00+00:00",
        },
        source_ip: "203.0.113.9",
      },
    ]);
  });

  it("holds the cap of live keys at n and refuses n+1 changing nothing; expired keys do not count", async () => {
    const o = await makeUser(db);
    await storeApiKey(db, newKey(o.organizationId, { expiresAt: new Date(T0.getTime() + 1) }), origin, 3);
    await storeApiKey(db, newKey(o.organizationId), origin, 3);
    await storeApiKey(db, newKey(o.organizationId), origin, 3);
    const before = await databaseFingerprint(db);
    expect(await storeApiKey(db, newKey(o.organizationId), origin, 3)).toBeNull();
    expect(await databaseFingerprint(db)).toBe(before);
    // Once the first key has expired, there is room for one more, and only one.
    const later = new Date(T0.getTime() + 1);
    expect(await storeApiKey(db, newKey(o.organizationId, { createdAt: later }), origin, 3)).not.toBeNull();
    expect(await storeApiKey(db, newKey(o.organizationId, { createdAt: later }), origin, 3)).toBeNull();
    expect(await keysOf(o.organizationId)).toHaveLength(4);
  });
});

describe("ApiKeysService (service tier)", () => {
  const service = (forgotten: string[] = []) =>
    new ApiKeysService({
      db,
      clock: new ManualClock(T0),
      teams: { resolve: async () => "unused" },
      forget: (hash) => forgotten.push(hash),
    });

  it("revokes with an api_key.revoked entry and forgets the key; another organization's, unknown and malformed ids are 404 and change nothing", async () => {
    const [a, b] = [await makeUser(db), await makeUser(db)];
    const input = newKey(a.organizationId);
    const key = await storeApiKey(db, input, origin);
    if (!key) throw new Error("the key was not stored");
    const forgotten: string[] = [];
    const keys = service(forgotten);
    const before = await databaseFingerprint(db);
    for (const [organizationId, id] of [
      [b.organizationId, key.id],
      [a.organizationId, crypto.randomUUID()],
      [a.organizationId, "not-a-uuid"],
    ] as const) {
      expect((await rejection(keys.revoke(organizationId, id, origin))).code).toBe("not_found");
    }
    expect(await databaseFingerprint(db)).toBe(before);
    expect(forgotten).toEqual([]);

    await keys.revoke(a.organizationId, key.id, origin);
    expect(forgotten).toEqual([input.keyHash]);
    expect(await keys.list(a.organizationId)).toEqual([]);
    expect((await auditOf(key.id)).map((row) => [row.action, row.details])).toEqual([
      ["api_key.created", expect.anything()],
      ["api_key.revoked", { name: "ci", prefix: input.prefix }],
    ]);
  });
});
