import { type AuditOrigin, OrganizationsRepository, queryOf } from "@fleet/db";
import {
  createTestDatabase,
  databaseFingerprint,
  makeAccount,
  makeChildOrganization,
  makeRouter,
  makeUser,
  type TestDatabase,
} from "@fleet/db/testing";
import { ManualClock, TENANCY_LIMITS } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { claimsOf, makeMember, tenancyServices } from "./testing/tenancy-fixtures.ts";

// The service tier (docs/contributing.md "Add a test"): the organization tree's rules on a real
// database; only time is faked.

let db: TestDatabase;
const clock = new ManualClock(new Date("2026-11-29T10:00:00Z"));
const origin: AuditOrigin = { actor: { type: "user", id: null }, sourceIp: "203.0.113.7" };
let svc: ReturnType<typeof tenancyServices>;

beforeAll(async () => {
  db = await createTestDatabase();
  svc = tenancyServices(db, clock);
});
afterAll(async () => {
  await db?.close();
});

const auditIn = (organizationId: string, action: string) =>
  db.query<{ target_id: string; details: Record<string, unknown> }>(
    "select target_id, details from audit_log where organization_id = $1 and action = $2",
    [organizationId, action],
  );

/** A chain of `levels` organizations under a new user's default one (which is level 1). */
const chainOf = async (levels: number) => {
  const msp = await makeUser(db);
  const ids = [msp.organizationId];
  for (let level = 2; level <= levels; level++) {
    const parent = ids[ids.length - 1] as string;
    ids.push((await makeChildOrganization(db, parent)).organizationId);
  }
  return { msp, ids };
};

describe("organizations (service tier)", () => {
  it("creates a customer below the token's organization with a default team, no members and no account", async () => {
    const msp = await makeUser(db);
    const auth = claimsOf(msp.userId, msp.organizationId);
    const created = await svc.organizations.create(auth, origin, { name: "Customer A" });
    expect(created).toMatchObject({
      name: "Customer A",
      parent_id: msp.organizationId,
      level: 2,
      billing_root_id: msp.organizationId,
      role: "owner",
      routers: 0,
      created_at: "2026-11-29T10:00:00+00:00",
    });
    const teams = await db.query<{ is_default: boolean }>("select is_default from teams where organization_id = $1", [
      created.id,
    ]);
    expect(teams).toEqual([{ is_default: true }]);
    expect(await db.query("select 1 from organization_members where organization_id = $1", [created.id])).toEqual([]);
    expect(await db.query("select 1 from billing_accounts where organization_id = $1", [created.id])).toEqual([]);
    // Recorded in the new organization and in the parent whose people made it.
    expect(await auditIn(created.id, "organization.created")).toHaveLength(1);
    expect((await auditIn(msp.organizationId, "organization.created")).map((e) => e.target_id)).toEqual([created.id]);
  });

  it("lists the token's organization and everything below it, never anything above", async () => {
    const { msp, ids } = await chainOf(3);
    const [top, mid, leaf] = ids as [string, string, string];
    const sibling = (await makeChildOrganization(db, top)).organizationId;
    const whole = await svc.organizations.list(claimsOf(msp.userId, top));
    expect(whole.data.map((o) => [o.id, o.level, o.billing_root_id, o.role])).toEqual([
      [top, 1, top, "owner"],
      [mid, 2, top, "owner"],
      [sibling, 2, top, "owner"],
      [leaf, 3, top, "owner"],
    ]);
    const below = await svc.organizations.list(claimsOf(msp.userId, mid));
    expect(below.data.map((o) => o.id)).toEqual([mid, leaf]);
  });

  it("shows the caller's effective role in each organization: the highest held there or above", async () => {
    const { ids } = await chainOf(3);
    const [top, mid, leaf] = ids as [string, string, string];
    const viewer = await makeMember(db, top, "viewer");
    await makeMember(db, mid, "viewer").then(() => undefined);
    const { MembershipsRepository } = await import("@fleet/db");
    await new MembershipsRepository(queryOf(db)).upsert({
      organizationId: mid,
      userId: viewer.userId,
      role: "admin",
      teamId: null,
      createdAt: new Date(),
    });
    const listed = await svc.organizations.list(claimsOf(viewer.userId, top));
    expect(listed.data.filter((o) => ids.includes(o.id)).map((o) => [o.id, o.role])).toEqual([
      [top, "viewer"],
      [mid, "admin"],
      [leaf, "admin"],
    ]);
  });

  it("allows 10 levels and refuses the 11th with 422 naming parent_id, changing nothing", async () => {
    const { msp, ids } = await chainOf(TENANCY_LIMITS.levels - 1);
    const auth = claimsOf(msp.userId, msp.organizationId);
    const tenth = await svc.organizations.create(auth, origin, { name: "level 10", parent_id: ids[ids.length - 1] });
    expect(tenth.level).toBe(10);
    const before = await databaseFingerprint(db);
    const error = await rejection(svc.organizations.create(auth, origin, { name: "level 11", parent_id: tenth.id }));
    expect(error.status).toBe(422);
    expect(Object.keys(error.fields ?? {})).toEqual(["parent_id"]);
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("allows 100 children under one organization and refuses the 101st with 422 naming parent_id", async () => {
    const msp = await makeUser(db);
    const auth = claimsOf(msp.userId, msp.organizationId);
    for (let i = 1; i < TENANCY_LIMITS.children; i++) await makeChildOrganization(db, msp.organizationId);
    const hundredth = await svc.organizations.create(auth, origin, { name: "the 100th" });
    expect(hundredth.parent_id).toBe(msp.organizationId);
    const before = await databaseFingerprint(db);
    const error = await rejection(svc.organizations.create(auth, origin, { name: "the 101st" }));
    expect(error.status).toBe(422);
    expect(error.fields?.parent_id?.[0]).toContain("100");
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("holds the child limit under concurrent creates (the parent's row is locked first)", async () => {
    const msp = await makeUser(db);
    const auth = claimsOf(msp.userId, msp.organizationId);
    for (let i = 2; i < TENANCY_LIMITS.children; i++) await makeChildOrganization(db, msp.organizationId);
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) => svc.organizations.create(auth, origin, { name: `racer ${i}` })),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(2);
    const children = await db.query<{ n: unknown }>("select count(*) as n from organizations where parent_id = $1", [
      msp.organizationId,
    ]);
    expect(Number(children[0]?.n)).toBe(TENANCY_LIMITS.children);
  });

  it("answers 404 for a parent, an organization to rename or delete outside the token's subtree", async () => {
    const { msp, ids } = await chainOf(2);
    const [top, child] = ids as [string, string];
    const stranger = await makeUser(db);
    const fromChild = claimsOf(msp.userId, child);
    const other = claimsOf(stranger.userId, stranger.organizationId);
    const before = await databaseFingerprint(db);
    for (const attempt of [
      () => svc.organizations.create(fromChild, origin, { name: "x", parent_id: top }),
      () => svc.organizations.create(other, origin, { name: "x", parent_id: child }),
      () => svc.organizations.update(other, origin, { id: child, name: "mine now" }),
      () => svc.organizations.update(fromChild, origin, { id: top, name: "above" }),
      () => svc.organizations.delete(other, origin, child),
      () => svc.organizations.create(other, origin, { name: "x", parent_id: "not-a-uuid" }),
    ]) {
      expect((await rejection(attempt())).status).toBe(404);
    }
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("renames within the subtree and records organization.updated", async () => {
    const { msp, ids } = await chainOf(2);
    const [top, child] = ids as [string, string];
    const renamed = await svc.organizations.update(claimsOf(msp.userId, top), origin, { id: child, name: "Renamed" });
    expect(renamed).toMatchObject({ id: child, name: "Renamed", level: 2, parent_id: top });
    expect(await auditIn(child, "organization.updated")).toHaveLength(1);
  });

  it("deletes an empty organization below; 409 naming what is left; never the top or the token's own", async () => {
    const { msp, ids } = await chainOf(3);
    const [top, mid, leaf] = ids as [string, string, string];
    const auth = claimsOf(msp.userId, top);
    let error = await rejection(svc.organizations.delete(auth, origin, mid));
    expect([error.status, error.message]).toEqual([409, expect.stringContaining("1 child organization(s)")]);
    const team = (await db.query<{ id: string }>("select id from teams where organization_id = $1", [leaf]))[0];
    await makeRouter(db, { organizationId: leaf, teamId: team?.id ?? "" });
    await makeAccount(db, leaf);
    error = await rejection(svc.organizations.delete(auth, origin, leaf));
    expect(error.status).toBe(409);
    expect(error.message).toContain("1 router(s)");
    expect(error.message).toContain("a billing account of its own");
    error = await rejection(svc.organizations.delete(auth, origin, top));
    expect([error.status, error.message]).toEqual([409, "The top organization of a tree cannot be deleted."]);
    error = await rejection(svc.organizations.delete(claimsOf(msp.userId, mid), origin, mid));
    expect(error.status).toBe(409);

    const empty = await svc.organizations.create(auth, origin, { name: "empty", parent_id: mid });
    await svc.organizations.delete(auth, origin, empty.id);
    expect(await new OrganizationsRepository(queryOf(db)).chain(empty.id)).toEqual([]);
    expect((await auditIn(mid, "organization.deleted")).map((e) => e.target_id)).toEqual([empty.id]);
  });

  it("needs the owner or admin role there: a technician or billing member is refused with 403", async () => {
    const msp = await makeUser(db);
    for (const role of ["technician", "billing", "viewer"] as const) {
      const member = await makeMember(db, msp.organizationId, role);
      const error = await rejection(
        svc.organizations.create(claimsOf(member.userId, msp.organizationId), origin, { name: "nope" }),
      );
      expect(error.status).toBe(403);
    }
    const admin = await makeMember(db, msp.organizationId, "admin");
    const made = await svc.organizations.create(claimsOf(admin.userId, msp.organizationId), origin, { name: "ok" });
    expect(made.role).toBe("admin");
  });
});
