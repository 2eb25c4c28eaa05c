import type { TScope } from "../schemas/auth.schema.ts";

/** Roles, highest first (docs/api.md "Roles and scopes"). */
export const ROLES = ["owner", "admin", "billing", "technician", "viewer"] as const;
export type TRole = (typeof ROLES)[number];

/** The scopes a role's tokens carry (docs/api.md "Roles and scopes"). */
export const ROLE_SCOPES: Readonly<Record<TRole, readonly TScope[]>> = {
  owner: ["account:read", "account:write", "routers:read", "routers:write", "organizations:write"],
  admin: ["account:read", "account:write", "routers:read", "routers:write", "organizations:write"],
  billing: ["account:read", "account:write"],
  technician: ["routers:read", "routers:write"],
  viewer: ["routers:read"],
};

/** Higher is more: owner 5 ... viewer 1; no role 0. */
export const roleRank = (role: TRole | null | undefined): number => (role ? ROLES.length - ROLES.indexOf(role) : 0);

export const isRole = (value: unknown): value is TRole =>
  typeof value === "string" && (ROLES as readonly string[]).includes(value);

/** Roles that may change the tree, members and invitations (they carry `organizations:write`). */
export const managesOrganizations = (role: TRole | null | undefined): boolean => role === "owner" || role === "admin";

/**
 * The highest role whose scopes a credential holds all of: the role of a credential that names no
 * member of ours (a token from another identity provider, an admin CLI key), which its scopes alone
 * describe. Null when it holds not even `routers:read`.
 */
export const roleOfScopes = (scopes: ReadonlySet<string>): TRole | null =>
  ROLES.find((role) => ROLE_SCOPES[role].every((scope) => scopes.has(scope))) ?? null;

/** A role held in an organization (`depth` levels above the one asked about: 0 = there). */
export interface HeldRole {
  role: TRole;
  teamId: string | null;
  organizationId: string;
  depth: number;
}

/** Where a user's effective role in an organization comes from (docs/api.md "Roles and scopes"). */
export interface EffectiveRole {
  role: TRole;
  /** The team the user's tokens are bound to there; null: not bound. */
  teamId: string | null;
  /** The organization whose membership gives the role: this one or one above. */
  sourceOrganizationId: string;
}

/**
 * The effective role among the memberships held in an organization and above it: the highest;
 * between equals the unbound one, then the nearest. A membership bound to a team holds only in its
 * own organization (its team's routers are there, and nothing of that team exists below).
 */
export const effectiveRoleOf = (held: readonly HeldRole[]): EffectiveRole | null => {
  let best: HeldRole | undefined;
  for (const h of held) {
    if (h.teamId !== null && h.depth > 0) continue;
    if (!best) {
      best = h;
      continue;
    }
    const byRank = roleRank(h.role) - roleRank(best.role);
    const byBinding = (best.teamId === null ? 0 : 1) - (h.teamId === null ? 0 : 1);
    if (byRank > 0 || (byRank === 0 && (byBinding > 0 || (byBinding === 0 && h.depth < best.depth)))) best = h;
  }
  return best ? { role: best.role, teamId: best.teamId, sourceOrganizationId: best.organizationId } : null;
};
