import { createSecretKey } from "node:crypto";
import { IdentityWorkflow } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, type TestDatabase } from "@fleet/db/testing";
import { jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { AuthService } from "./auth.service.ts";
import { OrganizationResolver } from "./organization-resolver.ts";
import { TokenSigner } from "./token-verifier.ts";

// The service tier (docs/contributing.md "Add a test"): AuthService and OrganizationResolver on a
// real database with the real identity repository, wired as wiring/auth.wiring.ts wires them.

const SECRET = "auth-service-tier-secret-0123456789abcdef";
const HOOK_SECRET = "hook-secret-0123456789-0123456789-abcdef";
let db: TestDatabase;
let identity: IdentityWorkflow;
let auth: AuthService;

beforeAll(async () => {
  db = await createTestDatabase();
  identity = new IdentityWorkflow(db);
  auth = new AuthService({ identity, signer: new TokenSigner({ secret: SECRET }), loginHookSecret: HOOK_SECRET });
});
afterAll(async () => {
  await db?.close();
});

const uniqueEmail = () => `Flow-${crypto.randomUUID()}@Example.com`;

describe("AuthService.devLogin", () => {
  it("creates a user owning a default organization and team, no account; the same email (any case) logs in as the same user", async () => {
    const email = uniqueEmail();
    const first = await auth.devLogin({ email });
    expect(first).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    const again = await auth.devLogin({ email: email.toLowerCase() });
    expect([again.user_id, again.organization_id, again.team_id]).toEqual([
      first.user_id,
      first.organization_id,
      first.team_id,
    ]);
    const owners = await db.query<{ role: string }>(
      "select role from organization_members where user_id = $1 and organization_id = $2",
      [first.user_id, first.organization_id],
    );
    expect(owners).toEqual([{ role: "owner" }]);
    expect(
      await db.query("select id from billing_accounts where organization_id = $1", [first.organization_id]),
    ).toEqual([]);

    const { payload } = await jwtVerify(first.access_token, createSecretKey(Buffer.from(SECRET)));
    expect(payload).toMatchObject({ sub: first.user_id, id: first.organization_id });
    expect(String(payload.scope).split(" ").sort()).toEqual([
      "account:read",
      "account:write",
      "organizations:write",
      "routers:read",
      "routers:write",
    ]);
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(3600);
  });

  it("carries a narrower scope and a time zone into the token", async () => {
    const login = await auth.devLogin({ email: uniqueEmail(), scope: "routers:read", timezone: "Asia/Tokyo" });
    const { payload } = await jwtVerify(login.access_token, createSecretKey(Buffer.from(SECRET)));
    expect(payload).toMatchObject({ scope: "routers:read", timezone: "Asia/Tokyo" });
  });

  it("refuses an unknown scope or time zone naming the field, changing nothing", async () => {
    const before = await databaseFingerprint(db);
    const scope = await rejection(auth.devLogin({ email: uniqueEmail(), scope: "routers:read admin:all" }));
    expect(scope.code).toBe("validation_failed");
    expect(scope.message).toBe("Unknown scope: admin:all.");
    expect(Object.keys(scope.fields ?? {})).toEqual(["scope"]);
    const zone = await rejection(auth.devLogin({ email: uniqueEmail(), timezone: "Mars/Base" }));
    expect(zone.code).toBe("validation_failed");
    expect(Object.keys(zone.fields ?? {})).toEqual(["timezone"]);
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("is not found while dev login is off (no signer), changing nothing", async () => {
    const off = new AuthService({ identity, signer: undefined, loginHookSecret: undefined });
    expect(off.devLoginEnabled).toBe(false);
    const before = await databaseFingerprint(db);
    expect((await rejection(off.devLogin({ email: uniqueEmail() }))).status).toBe(404);
    expect(await databaseFingerprint(db)).toBe(before);
  });
});

describe("AuthService.loginHook", () => {
  it("answers the claim ids of the email's user with the shared secret; 401 without it, 404 while the hook is off", async () => {
    const email = uniqueEmail();
    const before = await databaseFingerprint(db);
    for (const authorization of [undefined, "Bearer wrong", `Bearer ${HOOK_SECRET}x`, HOOK_SECRET]) {
      expect((await rejection(auth.loginHook(authorization, email))).status, authorization).toBe(401);
    }
    const off = new AuthService({ identity, signer: undefined, loginHookSecret: undefined });
    expect((await rejection(off.loginHook(`Bearer ${HOOK_SECRET}`, email))).status).toBe(404);
    expect(await databaseFingerprint(db)).toBe(before);

    const hooked = await auth.loginHook(`Bearer ${HOOK_SECRET}`, email);
    const dev = await auth.devLogin({ email });
    expect(hooked).toEqual({ user_id: dev.user_id, organization_id: dev.organization_id, team_id: dev.team_id });
  });
});

describe("OrganizationResolver", () => {
  it("provisions an organization named by a UUID claim under that id, with its default team, once", async () => {
    const resolver = new OrganizationResolver(identity);
    const uuid = crypto.randomUUID();
    expect(await resolver.resolve(uuid)).toBe(uuid);
    expect(await new OrganizationResolver(identity).resolve(uuid)).toBe(uuid);
    expect(await db.query("select id from organizations where id = $1", [uuid])).toHaveLength(1);
    expect(await db.query("select id from teams where organization_id = $1", [uuid])).toHaveLength(1);
  });

  it("maps an external id to one organization, also when first seen by concurrent requests", async () => {
    const external = `org_${crypto.randomUUID().slice(0, 8)}`;
    const ids = await Promise.all(
      Array.from({ length: 4 }, () => new OrganizationResolver(identity).resolve(external)),
    );
    expect(new Set(ids).size).toBe(1);
    const mapped = await db.query<{ organization_id: string }>(
      "select organization_id from organization_external_ids where external_id = $1",
      [external],
    );
    expect(mapped).toEqual([{ organization_id: ids[0] }]);
  });

  it("accepts a claim of 255 characters and refuses 256 as unauthenticated, writing nothing", async () => {
    const resolver = new OrganizationResolver(identity);
    const longest = `${crypto.randomUUID()}${"x".repeat(255 - 36)}`;
    expect(longest).toHaveLength(255);
    expect(await resolver.resolve(longest)).toEqual(expect.any(String));
    const before = await databaseFingerprint(db);
    const refused = await rejection(resolver.resolve(`${longest}y`));
    expect(refused.status).toBe(401);
    expect(refused.code).toBe("unauthenticated");
    expect(await databaseFingerprint(db)).toBe(before);
  });
});
