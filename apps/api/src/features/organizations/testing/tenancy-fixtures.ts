import { MembershipsRepository, queryOf } from "@fleet/db";
import { makeUser, type TestDatabase } from "@fleet/db/testing";
import { ALL_SCOPES, type Clock, type TRole } from "@fleet/shared";
import type { AuthClaims } from "../../auth/token-verifier.ts";
import { MembershipsService } from "../../members/memberships.service.ts";
import { OrganizationsService } from "../organizations.service.ts";

/** The claims a verified token of `userId` acting in `organizationId` carries (scopes: all by default). */
export const claimsOf = (
  userId: string,
  organizationId: string,
  scopes: readonly string[] = ALL_SCOPES,
  extra: Partial<AuthClaims> = {},
): AuthClaims => ({
  userId,
  organizationId,
  teamId: undefined,
  scopes: new Set(scopes),
  timezone: undefined,
  exp: Math.floor(Date.now() / 1000) + 3600,
  credential: { type: "token", id: userId },
  credentialId: `sub:${userId}`,
  ...extra,
});

/** A user of ours holding `role` in `organizationId` (their own default organization aside). */
export const makeMember = async (
  db: TestDatabase,
  organizationId: string,
  role: TRole,
  teamId: string | null = null,
): Promise<{ userId: string; email: string }> => {
  const user = await makeUser(db);
  const members = new MembershipsRepository(queryOf(db));
  await members.upsert({ organizationId, userId: user.userId, role, teamId, createdAt: new Date() });
  const email = (await members.email(user.userId)) ?? "";
  return { userId: user.userId, email };
};

/** The tenancy services on a test database, wired as the API wires them. */
export const tenancyServices = (db: TestDatabase, clock: Clock) => {
  const memberships = new MembershipsService({ db, clock });
  return { memberships, organizations: new OrganizationsService({ db, clock, memberships }) };
};
