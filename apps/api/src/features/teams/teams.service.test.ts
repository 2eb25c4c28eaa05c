import { MembershipsRepository, queryOf } from "@fleet/db";
import {
  createTestDatabase,
  databaseFingerprint,
  makeChildOrganization,
  makeRouter,
  makeUser,
  type TestDatabase,
} from "@fleet/db/testing";
import { ManualClock, TENANCY_LIMITS } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { MembershipsService } from "../members/memberships.service.ts";
import { claimsOf, makeMember } from "../organizations/testing/tenancy-fixtures.ts";
import { TeamsService } from "./teams.service.ts";

// The service tier: teams of an organization and moving routers between them, on a real database.

let db: TestDatabase;
const clock = new ManualClock(new Date("2026-11-29T10:00:00Z"));
let svc: TeamsService;

beforeAll(async () => {
  db = await createTestDatabase();
  svc = new TeamsService({ db, clock, memberships: new MembershipsService({ db, clock }) });
});
afterAll(async () => {
  await db?.close();
});

describe("teams (service tier)", () => {
  it("lists the default team first, creates, renames; 100 teams and the 101st refused with 429", async () => {
    const owner = await makeUser(db);
    const auth = claimsOf(owner.userId, owner.organizationId);
    const created = await svc.create(auth, { id: owner.organizationId, name: "Field" });
    expect(created).toMatchObject({
      name: "Field",
      is_default: false,
      routers: 0,
      created_at: "2026-11-29T10:00:00+00:00",
    });
    const renamed = await svc.update(auth, { id: owner.organizationId, team_id: created.id, name: "Field crew" });
    expect(renamed.name).toBe("Field crew");
    const listed = await svc.list(auth, owner.organizationId);
    expect(listed.data.map((t) => [t.id, t.is_default])).toEqual([
      [owner.teamId, true],
      [created.id, false],
    ]);
    for (let i = listed.data.length; i < TENANCY_LIMITS.teamsPerOrganization; i++) {
      await svc.create(auth, { id: owner.organizationId, name: `team ${i}` });
    }
    const before = await databaseFingerprint(db);
    const error = await rejection(svc.create(auth, { id: owner.organizationId, name: "one too many" }));
    expect(error.status).toBe(429);
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("deletes only an empty team that is not the default one (else 409 naming what is left)", async () => {
    const owner = await makeUser(db);
    const auth = claimsOf(owner.userId, owner.organizationId);
    let error = await rejection(svc.delete(auth, owner.organizationId, owner.teamId));
    expect([error.status, error.message]).toEqual([409, "The default team of an organization cannot be deleted."]);
    const team = await svc.create(auth, { id: owner.organizationId, name: "busy" });
    await makeRouter(db, { organizationId: owner.organizationId, teamId: team.id });
    await makeMember(db, owner.organizationId, "technician", team.id);
    error = await rejection(svc.delete(auth, owner.organizationId, team.id));
    expect(error.status).toBe(409);
    expect(error.message).toContain("1 router(s)");
    expect(error.message).toContain("1 member(s)");
    const empty = await svc.create(auth, { id: owner.organizationId, name: "empty" });
    await svc.delete(auth, owner.organizationId, empty.id);
    expect((await svc.list(auth, owner.organizationId)).data.map((t) => t.id)).not.toContain(empty.id);
    expect((await rejection(svc.delete(auth, owner.organizationId, empty.id))).status).toBe(404);
  });

  it("manages teams of customers below, never outside the subtree (404), and needs owner or admin (403)", async () => {
    const owner = await makeUser(db);
    const child = (await makeChildOrganization(db, owner.organizationId)).organizationId;
    const auth = claimsOf(owner.userId, owner.organizationId);
    expect((await svc.create(auth, { id: child, name: "customer team" })).name).toBe("customer team");
    const stranger = await makeUser(db);
    expect((await rejection(svc.list(claimsOf(stranger.userId, stranger.organizationId), child))).status).toBe(404);
    expect(
      (await rejection(svc.create(claimsOf(stranger.userId, stranger.organizationId), { id: child, name: "x" })))
        .status,
    ).toBe(404);
    const tech = await makeMember(db, owner.organizationId, "technician");
    expect(
      (await rejection(svc.create(claimsOf(tech.userId, owner.organizationId), { id: child, name: "x" }))).status,
    ).toBe(403);
  });

  it("moves a router to another team of its organization; a team-bound credential may not; others' ids refused", async () => {
    const owner = await makeUser(db);
    const auth = claimsOf(owner.userId, owner.organizationId);
    const team = await svc.create(auth, { id: owner.organizationId, name: "B" });
    const router = await makeRouter(db, { organizationId: owner.organizationId, teamId: owner.teamId });
    expect(await svc.moveRouter(auth, { router_id: router.id, team_id: team.id })).toEqual({
      id: router.id,
      team_id: team.id,
    });
    const rows = await db.query<{ team_id: string }>("select team_id from routers where id = $1", [router.id]);
    expect(rows[0]?.team_id).toBe(team.id);
    const stranger = await makeUser(db);
    const before = await databaseFingerprint(db);
    let error = await rejection(svc.moveRouter(auth, { router_id: router.id, team_id: stranger.teamId }));
    expect([error.status, Object.keys(error.fields ?? {})]).toEqual([422, ["team_id"]]);
    error = await rejection(
      svc.moveRouter(claimsOf(stranger.userId, stranger.organizationId), {
        router_id: router.id,
        team_id: stranger.teamId,
      }),
    );
    expect(error.status).toBe(404);
    error = await rejection(
      svc.moveRouter(claimsOf(owner.userId, owner.organizationId, undefined, { teamId: team.id }), {
        router_id: router.id,
        team_id: owner.teamId,
      }),
    );
    expect(error.status).toBe(403);
    expect(await databaseFingerprint(db)).toBe(before);
    // Memberships are untouched by a move.
    expect(await new MembershipsRepository(queryOf(db)).find(owner.organizationId, owner.userId)).toMatchObject({
      role: "owner",
    });
  });
});
