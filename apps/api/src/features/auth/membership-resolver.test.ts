import { MembershipsLookupRepository, queryOf } from "@fleet/db";
import { createTestDatabase, makeChildOrganization, makeUser, type TestDatabase } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROLE_SCOPES, TreeMembershipResolver } from "./membership-resolver.ts";

let db: TestDatabase;
let resolver: TreeMembershipResolver;
beforeAll(async () => {
  db = await createTestDatabase();
  resolver = new TreeMembershipResolver(new MembershipsLookupRepository(queryOf(db)));
});
afterAll(async () => {
  await db?.close();
});

describe("the effective role in an organization (today's memberships up the tree)", () => {
  it("holds a role in the organization and in every organization below it, never above or beside", async () => {
    const msp = await makeUser(db);
    let parent = msp.organizationId;
    const levels: string[] = [];
    for (let level = 2; level <= 10; level++) {
      parent = (await makeChildOrganization(db, parent)).organizationId;
      levels.push(parent);
    }
    for (const organizationId of [msp.organizationId, ...levels]) {
      expect(await resolver.resolveMembership(msp.userId, organizationId)).toEqual({ role: "owner", teamId: null });
    }
    const customer = await makeUser(db);
    expect(await resolver.resolveMembership(customer.userId, levels[0] ?? "")).toBeNull();
    expect(await resolver.resolveMembership(msp.userId, customer.organizationId)).toBeNull();
    expect(await resolver.resolveMembership(msp.userId, crypto.randomUUID())).toBeNull();
    expect(await resolver.resolveMembership(msp.userId, "not-a-uuid")).toBeNull();
  });

  it("takes the highest role on the way up", async () => {
    const owner = await makeUser(db);
    const child = await makeChildOrganization(db, owner.organizationId);
    const member = await makeUser(db);
    await db.query(
      `insert into organization_members (id, organization_id, user_id, role, created_at) values ($1, $2, $3, 'viewer', now()), ($4, $5, $3, 'admin', now())`,
      [crypto.randomUUID(), child.organizationId, member.userId, crypto.randomUUID(), owner.organizationId],
    );
    expect(await resolver.resolveMembership(member.userId, child.organizationId)).toEqual({
      role: "admin",
      teamId: null,
    });
    expect(ROLE_SCOPES.viewer).toEqual(["routers:read"]);
  });
});
