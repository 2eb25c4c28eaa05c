import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";
import { Team } from "./team.entity.ts";
import { User } from "./user.entity.ts";

/** Roles, highest first (docs/api.md "Roles and scopes"); the same list as `ROLES` in shared. */
export const MEMBER_ROLES = ["owner", "admin", "billing", "technician", "viewer"] as const;

/**
 * A membership: a role held in an organization and in every organization below it. With `team`,
 * the member's tokens are bound to that team (and the role holds in this organization only).
 */
export const OrganizationMember = defineEntity({
  name: "OrganizationMember",
  tableName: "organization_members",
  uniques: [{ properties: ["organization", "user"] }],
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    user: () => p.manyToOne(User).deleteRule("cascade").index(),
    role: p.enum(MEMBER_ROLES),
    team: () => p.manyToOne(Team).deleteRule("cascade").nullable().index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type TOrganizationMember = InferEntity<typeof OrganizationMember>;
