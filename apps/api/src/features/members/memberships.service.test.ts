import { type AuditOrigin, MembershipsRepository, queryOf } from "@fleet/db";
import {
  createTestDatabase,
  databaseFingerprint,
  makeChildOrganization,
  makeUser,
  type TestDatabase,
} from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { claimsOf, makeMember } from "../organizations/testing/tenancy-fixtures.ts";
import { MembershipsService, ROLE_CACHE_TTL_MS } from "./memberships.service.ts";

// The service tier: roles down the tree, what a credential keeps of its scopes, and the member
// rules (escalation, owners, the last owner) on a real database; only time is faked.

let db: TestDatabase;
const clock = new ManualClock(new Date("2026-11-29T10:00:00Z"));
const origin: AuditOrigin = { actor: { type: "user", id: null }, sourceIp: null };
let svc: MembershipsService;

beforeAll(async () => {
  db = await createTestDatabase();
  svc = new MembershipsService({ db, clock });
});
afterAll(async () => {
  await db?.close();
});

const teamOf = async (organizationId: string, name = "T2") => {
  const id = crypto.randomUUID();
  await db.query(
    "insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, $3, false, now())",
    [id, organizationId, name],
  );
  return id;
};

/** A tree top > mid > leaf under a new owner. */
const tree = async () => {
  const owner = await makeUser(db);
  const mid = (await makeChildOrganization(db, owner.organizationId)).organizationId;
  const leaf = (await makeChildOrganization(db, mid)).organizationId;
  return { owner, top: owner.organizationId, mid, leaf };
};

describe("effective roles (service tier)", () => {
  it("is the highest role held in the organization or any above it, with where it comes from", async () => {
    const { top, mid, leaf } = await tree();
    const person = await makeMember(db, top, "viewer");
    await new MembershipsRepository(queryOf(db)).upsert({
      organizationId: mid,
      userId: person.userId,
      role: "technician",
      teamId: null,
      createdAt: new Date(),
    });
    expect(await svc.effectiveRole(person.userId, top)).toEqual({
      role: "viewer",
      teamId: null,
      sourceOrganizationId: top,
    });
    expect(await svc.effectiveRole(person.userId, leaf)).toEqual({
      role: "technician",
      teamId: null,
      sourceOrganizationId: mid,
    });
    const stranger = await makeUser(db);
    expect(await svc.effectiveRole(stranger.userId, leaf)).toBeNull();
  });

  it("holds a role held at the top in all 10 levels below it, never above or beside", async () => {
    const msp = await makeUser(db);
    const levels = [msp.organizationId];
    for (let level = 2; level <= 10; level++) {
      levels.push((await makeChildOrganization(db, levels[levels.length - 1] as string)).organizationId);
    }
    for (const organizationId of levels) {
      expect(await svc.effectiveRole(msp.userId, organizationId)).toMatchObject({ role: "owner", teamId: null });
    }
    const customer = await makeUser(db);
    expect(await svc.effectiveRole(customer.userId, levels[1] as string)).toBeNull();
    expect(await svc.effectiveRole(msp.userId, customer.organizationId)).toBeNull();
    expect(await svc.effectiveRole(msp.userId, crypto.randomUUID())).toBeNull();
    expect(await svc.effectiveRole(msp.userId, "not-a-uuid")).toBeNull();
  });

  it("binds a team-bound membership's tokens to its team, in its own organization only", async () => {
    const { top, mid } = await tree();
    const team = await teamOf(top);
    const bound = await makeMember(db, top, "technician", team);
    expect(await svc.effectiveRole(bound.userId, top)).toEqual({
      role: "technician",
      teamId: team,
      sourceOrganizationId: top,
    });
    expect(await svc.effectiveRole(bound.userId, mid)).toBeNull();
    const limited = await svc.limit(claimsOf(bound.userId, top));
    expect(limited.teamId).toBe(team);
  });

  it("narrows a user's credential to the role's scopes; platform scopes pass; a stranger's token is its own", async () => {
    const { top, leaf } = await tree();
    const viewer = await makeMember(db, top, "viewer");
    const limited = await svc.limit(
      claimsOf(viewer.userId, leaf, ["routers:read", "routers:write", "account:read", "tunnel:assign"]),
    );
    expect([...limited.scopes].sort()).toEqual(["routers:read", "tunnel:assign"]);
    expect(limited.role).toBe("viewer");
    const external = claimsOf(`ext-${crypto.randomUUID()}`, leaf);
    expect(await svc.limit(external)).toBe(external);
    const outsider = await makeUser(db);
    expect((await rejection(Promise.resolve().then(() => svc.limit(claimsOf(outsider.userId, leaf))))).status).toBe(
      401,
    );
  });

  it("names the organizations of a user's memberships with the effective role in each", async () => {
    const { top, mid } = await tree();
    const person = await makeMember(db, top, "technician");
    await new MembershipsRepository(queryOf(db)).upsert({
      organizationId: mid,
      userId: person.userId,
      role: "viewer",
      teamId: null,
      createdAt: new Date(),
    });
    const own = await db.query<{ current_organization_id: string }>(
      "select current_organization_id from users where id = $1",
      [person.userId],
    );
    const found = await svc.organizationsOf(person.userId);
    expect(found.map((o) => [o.id, o.role]).sort()).toEqual(
      [
        [own[0]?.current_organization_id, "owner"],
        [top, "technician"],
        [mid, "technician"],
      ].sort(),
    );
    expect(found.every((o) => typeof o.name === "string" && o.name.length > 0)).toBe(true);
  });

  it("answers from its cache without a query, and a change in another process within the TTL", async () => {
    const { top } = await tree();
    const tech = await makeMember(db, top, "technician");
    const claims = claimsOf(tech.userId, top);
    await svc.limit(claims);
    // Cached: the answer is synchronous (no await, no query on the request path).
    expect(svc.limit(claims)).not.toBeInstanceOf(Promise);
    // Another process demotes the member: this one still trusts its entry until the TTL passes.
    await db.query("update organization_members set role = 'viewer' where user_id = $1", [tech.userId]);
    const stale = svc.limit(claims);
    expect(stale).not.toBeInstanceOf(Promise);
    clock.advance(ROLE_CACHE_TTL_MS);
    const fresh = await svc.limit(claims);
    expect([...fresh.scopes]).toEqual(["routers:read"]);
    expect(await svc.problem(claimsOf(tech.userId, top, ["routers:read", "routers:write"]))).toBe(
      "Your role in this organization has changed.",
    );
    await db.query("delete from organization_members where user_id = $1", [tech.userId]);
    expect(await svc.problem(fresh)).toBe("You are no longer a member of this organization.");
  });
});

describe("members (service tier)", () => {
  it("lists who acts in an organization and where each role comes from", async () => {
    const { owner, top, mid } = await tree();
    const tech = await makeMember(db, mid, "technician");
    const listed = await svc.list(claimsOf(owner.userId, top), mid);
    expect(listed.data.map((m) => [m.user_id, m.role, m.organization_id]).sort()).toEqual(
      [
        [owner.userId, "owner", top],
        [tech.userId, "technician", mid],
      ].sort(),
    );
    // A customer's people never see the MSP's tree: from their organization, the MSP is outside.
    expect((await rejection(svc.list(claimsOf(tech.userId, mid), top))).status).toBe(404);
  });

  it("refuses escalation: above your own role (422 naming role), an admin changing an owner (403), a technician at all (403)", async () => {
    const { owner, top } = await tree();
    const admin = await makeMember(db, top, "admin");
    const tech = await makeMember(db, top, "technician");
    const before = await databaseFingerprint(db);
    let error = await rejection(
      svc.update(claimsOf(admin.userId, top), origin, { id: top, user_id: tech.userId, role: "owner" }),
    );
    expect([error.status, Object.keys(error.fields ?? {})]).toEqual([422, ["role"]]);
    error = await rejection(
      svc.update(claimsOf(admin.userId, top), origin, { id: top, user_id: admin.userId, role: "owner" }),
    );
    expect([error.status, Object.keys(error.fields ?? {})]).toEqual([422, ["role"]]);
    error = await rejection(
      svc.update(claimsOf(admin.userId, top), origin, { id: top, user_id: owner.userId, role: "viewer" }),
    );
    expect(error.status).toBe(403);
    error = await rejection(svc.remove(claimsOf(admin.userId, top), origin, top, owner.userId));
    expect(error.status).toBe(403);
    error = await rejection(
      svc.update(claimsOf(tech.userId, top), origin, { id: top, user_id: tech.userId, role: "admin" }),
    );
    expect(error.status).toBe(403);
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("keeps the last owner of a top organization (409), allows it once there is another", async () => {
    const { owner, top, mid } = await tree();
    const auth = claimsOf(owner.userId, top);
    const before = await databaseFingerprint(db);
    expect((await rejection(svc.update(auth, origin, { id: top, user_id: owner.userId, role: "admin" }))).status).toBe(
      409,
    );
    expect((await rejection(svc.remove(auth, origin, top, owner.userId))).status).toBe(409);
    expect(await databaseFingerprint(db)).toBe(before);
    // Below the top, an owner membership may go (the top's owners still act there).
    const midOwner = await makeMember(db, mid, "owner");
    await svc.remove(auth, origin, mid, midOwner.userId);
    const second = await makeMember(db, top, "owner");
    await svc.update(auth, origin, { id: top, user_id: owner.userId, role: "admin" });
    expect(await svc.effectiveRole(owner.userId, top)).toMatchObject({ role: "admin" });
    await svc.remove(claimsOf(second.userId, top), origin, top, owner.userId);
    expect(await svc.effectiveRole(owner.userId, top)).toBeNull();
    const actions = await db.query<{ action: string }>(
      "select action from audit_log where organization_id = $1 and action like 'member.%' order by occurred_at, id",
      [top],
    );
    expect(actions.map((a) => a.action).sort()).toEqual(["member.removed", "member.updated"]);
  });

  it("changes a member's team to one of the organization's (another's: 422 naming team_id), and the role takes effect at once here", async () => {
    const { owner, top } = await tree();
    const tech = await makeMember(db, top, "technician");
    const team = await teamOf(top);
    await svc.limit(claimsOf(tech.userId, top));
    const updated = await svc.update(claimsOf(owner.userId, top), origin, {
      id: top,
      user_id: tech.userId,
      team_id: team,
    });
    expect(updated).toMatchObject({ role: "technician", team_id: team, organization_id: top });
    expect((await svc.limit(claimsOf(tech.userId, top))).teamId).toBe(team);
    const other = await makeUser(db);
    const error = await rejection(
      svc.update(claimsOf(owner.userId, top), origin, { id: top, user_id: tech.userId, team_id: other.teamId }),
    );
    expect([error.status, Object.keys(error.fields ?? {})]).toEqual([422, ["team_id"]]);
  });

  it("answers 404 for an unknown member and 409 for one whose role is held above", async () => {
    const { owner, top, mid } = await tree();
    const auth = claimsOf(owner.userId, top);
    expect((await rejection(svc.remove(auth, origin, mid, crypto.randomUUID()))).status).toBe(404);
    const error = await rejection(svc.remove(auth, origin, mid, owner.userId));
    expect(error.status).toBe(409);
    expect(error.extra).toEqual({ organization_id: top });
  });
});
