import type { MembershipsLookupRepository } from "@fleet/db";

/** Roles, highest first (docs/api.md "Sign-in"). */
export const ROLES = ["owner", "admin", "billing", "technician", "viewer"] as const;
export type TRole = (typeof ROLES)[number];

/** The scopes a role's tokens carry (docs/api.md "Sign-in"). */
export const ROLE_SCOPES: Record<TRole, readonly string[]> = {
  owner: ["account:read", "account:write", "routers:read", "routers:write", "organizations:write"],
  admin: ["account:read", "account:write", "routers:read", "routers:write", "organizations:write"],
  billing: ["account:read", "account:write"],
  technician: ["routers:read", "routers:write"],
  viewer: ["routers:read"],
};

/** A user's effective role in one organization, and the team their membership is bound to. */
export interface EffectiveMembership {
  role: TRole;
  teamId: string | null;
}

/**
 * Who may act in an organization, as sign-in needs it (the `scope` and `team` of a token). The
 * role rules of the organization tree implement it; this file's one reads today's memberships.
 */
export interface MembershipResolver {
  /** The effective membership of the user in the organization; null: they may not act there. */
  resolveMembership(userId: string, organizationId: string): Promise<EffectiveMembership | null>;
}

/** A stored role as a role of the table; the old `member` acts as a viewer. */
const asRole = (stored: string): TRole | undefined =>
  (ROLES as readonly string[]).includes(stored) ? (stored as TRole) : stored === "member" ? "viewer" : undefined;

/**
 * The highest role the user holds in the organization or any organization above it (the tree's
 * parent links), on `organization_members`.
 */
export class TreeMembershipResolver implements MembershipResolver {
  readonly #lookup: Pick<MembershipsLookupRepository, "heldOnPath">;
  constructor(lookup: Pick<MembershipsLookupRepository, "heldOnPath">) {
    this.#lookup = lookup;
  }

  async resolveMembership(userId: string, organizationId: string): Promise<EffectiveMembership | null> {
    let best: { role: TRole; rank: number; teamId: string | null } | undefined;
    for (const held of await this.#lookup.heldOnPath(userId, organizationId)) {
      const role = asRole(held.role);
      if (!role) continue;
      const rank = ROLES.indexOf(role);
      if (!best || rank < best.rank) best = { role, rank, teamId: held.teamId };
    }
    return best ? { role: best.role, teamId: best.teamId } : null;
  }
}
