import type { TRole } from "@fleet/shared";

/** The roles and their scopes are the tree's rule, kept once in shared (docs/api.md "Roles and scopes"). */
export { ROLE_SCOPES, ROLES, type TRole } from "@fleet/shared";

/** A user's effective role in one organization, and the team their membership is bound to. */
export interface EffectiveMembership {
  role: TRole;
  teamId: string | null;
}

/**
 * Who may act in an organization, as sign-in needs it (the `scope` and `team` of a token):
 * `MembershipsService.effectiveRole` in production (auth.wiring.ts).
 */
export interface MembershipResolver {
  /** The effective membership of the user in the organization; null: they may not act there. */
  resolveMembership(userId: string, organizationId: string): Promise<EffectiveMembership | null>;
}
