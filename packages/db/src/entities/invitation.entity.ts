import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { MEMBER_ROLES } from "./organization-member.entity.ts";
import { Organization } from "./organization.entity.ts";
import { Team } from "./team.entity.ts";

/**
 * An invitation into an organization with a role (docs/api.md "Organizations, members and
 * invitations"): only the SHA-256 of its token is kept; accepted, revoked or past `expiresAt`, it is
 * spent.
 */
export const Invitation = defineEntity({
  name: "Invitation",
  tableName: "invitations",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade").index(),
    email: p.string().length(250),
    role: p.enum(MEMBER_ROLES),
    team: () => p.manyToOne(Team).deleteRule("cascade").nullable().index(),
    tokenHash: p.string().length(64).unique(),
    /** The inviting credential's subject (identity-provider subjects need not be our UUIDs). */
    invitedBy: p.string().length(255),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    acceptedAt: p.datetime().nullable(),
    acceptedBy: p.uuid().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
export type TInvitation = InferEntity<typeof Invitation>;
