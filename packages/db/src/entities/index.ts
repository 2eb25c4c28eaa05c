import { BillingAccount } from "./billing-account.entity.ts";
import { OrganizationMember } from "./organization-member.entity.ts";
import { Organization } from "./organization.entity.ts";
import { Router } from "./router.entity.ts";
import { Team } from "./team.entity.ts";
import { User } from "./user.entity.ts";

/** Every entity, listed explicitly (no folder discovery): add new ones here. */
export const ENTITIES = [User, Organization, OrganizationMember, Team, BillingAccount, Router];

export { BillingAccount, Organization, OrganizationMember, Router, Team, User };
