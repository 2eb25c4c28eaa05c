import {
  type AuditOrigin,
  insertAuditEntry,
  MembershipsRepository,
  OrganizationsRepository,
  type Query,
  queryOf,
  TeamsRepository,
} from "@fleet/db";
import {
  AppError,
  type Clock,
  type EffectiveRole,
  effectiveRoleOf,
  formatIsoUtc,
  managesOrganizations,
  PLATFORM_SCOPES,
  ROLE_SCOPES,
  roleOfScopes,
  roleRank,
  type TMemberList,
  type TRole,
  type TUpdateMemberInput,
  type TMember,
} from "@fleet/shared";
import type { AuthClaims } from "../auth/token-verifier.ts";
import { chainInSubtree, type TenancyDb } from "../organizations/organization-scope.ts";

export interface MembershipsServiceDeps {
  db: TenancyDb;
  /** Wall time of the role cache. */
  clock: Clock;
  /**
   * How long a looked-up role is trusted without asking the database again: a removal or demotion
   * in this process evicts at once, another API process sees it within this time (docs/api.md
   * "Members and invitations": within 10 s).
   */
  cacheTtlMs?: number;
}

/** What the cache knows of a user in an organization. */
interface RoleEntry {
  /** False: the subject is no user of ours (a token from elsewhere); its scopes alone speak for it. */
  known: boolean;
  role: EffectiveRole | null;
  checkedAtMs: number;
  /** Replaced or forgotten: a credential narrowed with it must look again. */
  stale?: boolean;
}

const CACHE_LIMIT = 50_000;
export const ROLE_CACHE_TTL_MS = 5_000;

const forbidden = (message: string) => new AppError("forbidden", message);
const roleTooHigh = (mine: TRole | null) =>
  new AppError("validation_failed", "Nobody grants a role above their own.", {
    fields: { role: [`must not be above your own role here (${mine ?? "none"})`] },
  });

/**
 * Roles down the tree (docs/api.md "Roles and scopes"): the effective role of a user in an
 * organization, what a credential may do with it, and the members of an organization.
 *
 * Effective roles are cached per user and organization, like API keys: the request path costs a
 * map lookup, and a change reaches every API process within `cacheTtlMs`.
 */
export class MembershipsService {
  readonly #d: Required<MembershipsServiceDeps>;
  readonly #cache = new Map<string, RoleEntry>();
  /** Claims already narrowed to an entry's role: a repeat of a request costs no new Set. */
  readonly #limited = new WeakMap<AuthClaims, { entry: RoleEntry; claims: AuthClaims }>();

  constructor(deps: MembershipsServiceDeps) {
    this.#d = { cacheTtlMs: ROLE_CACHE_TTL_MS, ...deps };
  }

  /** The user's effective role in the organization (highest held there or above), or null. */
  async effectiveRole(userId: string, organizationId: string): Promise<EffectiveRole | null> {
    return (await this.#entry(userId, organizationId)).role;
  }

  /**
   * The credential as its holder's role allows it in the organization it acts in: a user of ours
   * keeps only the scopes of their effective role there (platform scopes pass), is bound to the
   * team of that membership, and is refused with no role at all; a subject we do not know (a token
   * from another issuer, an admin CLI key) keeps its own scopes. Synchronous when the cache answers.
   */
  limit(claims: AuthClaims): AuthClaims | Promise<AuthClaims> {
    // The same verified claims object comes back with every request of a credential: a repeat
    // costs one WeakMap lookup and a clock read.
    const done = this.#limited.get(claims);
    if (done && !done.entry.stale && this.#d.clock.nowMs() - done.entry.checkedAtMs < this.#d.cacheTtlMs) {
      return done.claims;
    }
    const entry = this.#fresh(claims.userId, claims.organizationId);
    if (entry) return this.#narrow(claims, entry);
    return this.#load(claims.userId, claims.organizationId).then((loaded) => this.#narrow(claims, loaded));
  }

  /**
   * Why a credential narrowed by `limit` no longer holds what it held (removed, demoted, moved to
   * another team), asked afresh of the database; null while it does. Open streams ask this.
   */
  async problem(claims: AuthClaims): Promise<string | null> {
    const entry = await this.#load(claims.userId, claims.organizationId);
    if (!entry.known) return null;
    if (!entry.role) return "You are no longer a member of this organization.";
    const allowed = allowedScopes(entry.role.role);
    if ([...claims.scopes].some((scope) => !allowed.has(scope))) return "Your role in this organization has changed.";
    if (entry.role.teamId !== null && entry.role.teamId !== claims.teamId) return "Your team has changed.";
    return null;
  }

  /**
   * The role a credential acts with in an organization: its user's effective role there, or for a
   * subject we do not know, the highest role its scopes cover.
   */
  async actorRole(auth: AuthClaims, organizationId: string): Promise<TRole | null> {
    const entry = await this.#entry(auth.userId, organizationId);
    return entry.known ? (entry.role?.role ?? null) : roleOfScopes(auth.scopes);
  }

  /**
   * The organizations of the user's memberships, each with the user's effective role there (a
   * role held above may be higher than the membership's own): `GET /v1/me`'s `organizations`.
   */
  async organizationsOf(userId: string): Promise<Array<{ id: string; name: string; role: TRole }>> {
    const found = await new MembershipsRepository(queryOf(this.#d.db)).organizationsOf(userId);
    return found.flatMap((o) => {
      const role = effectiveRoleOf(o.held)?.role;
      return role ? [{ id: o.id, name: o.name, role }] : [];
    });
  }

  /** Refuses (403) a credential whose role in the organization is neither owner nor admin. */
  async requireManager(auth: AuthClaims, organizationId: string): Promise<TRole> {
    const role = await this.actorRole(auth, organizationId);
    if (!role || !managesOrganizations(role)) {
      throw forbidden("Changing organizations, members and invitations needs the owner or admin role there.");
    }
    return role;
  }

  /** Refuses (422 naming `role`) a grant above the granter's own role. */
  assertMayGrant(mine: TRole, granted: TRole): void {
    if (roleRank(granted) > roleRank(mine)) throw roleTooHigh(mine);
  }

  /** Drops what this process remembers of a user's roles (their membership just changed here). */
  forget(userId: string): void {
    const prefix = `${userId}\u0000`;
    for (const [key, entry] of this.#cache) {
      if (!key.startsWith(prefix)) continue;
      entry.stale = true;
      this.#cache.delete(key);
    }
  }

  /** Who acts in the organization and where each role comes from (one entry per person). */
  async list(auth: AuthClaims, organizationId: string): Promise<TMemberList> {
    const query = queryOf(this.#d.db);
    await chainInSubtree(query, auth.organizationId, organizationId);
    const held = await new MembershipsRepository(query).actingIn(organizationId);
    const byUser = new Map<string, typeof held>();
    for (const m of held) byUser.set(m.userId, [...(byUser.get(m.userId) ?? []), m]);
    const data: TMember[] = [];
    for (const memberships of byUser.values()) {
      const effective = effectiveRoleOf(memberships);
      const source = memberships.find(
        (m) => effective && m.organizationId === effective.sourceOrganizationId && m.role === effective.role,
      );
      if (!effective || !source) continue;
      data.push({
        user_id: source.userId,
        email: source.email,
        role: effective.role,
        team_id: effective.teamId,
        organization_id: effective.sourceOrganizationId,
        created_at: formatIsoUtc(source.createdAt),
      });
    }
    return { data };
  }

  /** Changes a membership held in this organization (role, team). */
  async update(auth: AuthClaims, origin: AuditOrigin, input: TUpdateMemberInput): Promise<TMember> {
    const organizationId = input.id;
    const mine = await this.#managerIn(auth, organizationId);
    if (input.role !== undefined) this.assertMayGrant(mine, input.role);
    const result = await this.#d.db.transaction(async (query) => {
      const organizations = new OrganizationsRepository(query);
      const chain = await chainInSubtree(query, auth.organizationId, organizationId);
      await organizations.lock(organizationId);
      const members = new MembershipsRepository(query);
      const current = await this.#membershipHere(members, organizationId, input.user_id);
      if (current.role === "owner" && mine !== "owner") throw forbidden("Only an owner changes an owner's membership.");
      const role = input.role ?? current.role;
      let teamId = current.teamId;
      if (input.team_id !== undefined) {
        teamId = input.team_id === null ? null : await teamOf(query, organizationId, input.team_id, "team_id");
      }
      if (current.role === "owner" && role !== "owner" && chain.length === 1) {
        await this.#keepLastOwner(members, organizationId, "demoted");
      }
      await members.update(organizationId, input.user_id, { role, teamId });
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: this.#d.clock.now(),
        action: "member.updated",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "user", id: input.user_id },
        details: { email: current.email, role, previous_role: current.role, team_id: teamId },
      });
      return {
        user_id: current.userId,
        email: current.email,
        role,
        team_id: teamId,
        organization_id: organizationId,
        created_at: formatIsoUtc(current.createdAt),
      } satisfies TMember;
    });
    this.forget(input.user_id);
    return result;
  }

  /** Removes a membership held in this organization. */
  async remove(auth: AuthClaims, origin: AuditOrigin, organizationId: string, userId: string): Promise<void> {
    const mine = await this.#managerIn(auth, organizationId);
    await this.#d.db.transaction(async (query) => {
      const chain = await chainInSubtree(query, auth.organizationId, organizationId);
      await new OrganizationsRepository(query).lock(organizationId);
      const members = new MembershipsRepository(query);
      const current = await this.#membershipHere(members, organizationId, userId);
      if (current.role === "owner" && mine !== "owner") throw forbidden("Only an owner removes an owner.");
      if (current.role === "owner" && chain.length === 1) await this.#keepLastOwner(members, organizationId, "removed");
      await members.delete(organizationId, userId);
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: this.#d.clock.now(),
        action: "member.removed",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "user", id: userId },
        details: { email: current.email, role: current.role },
      });
    });
    this.forget(userId);
  }

  /** The caller's role in an organization of its subtree, when it may manage members there. */
  async #managerIn(auth: AuthClaims, organizationId: string): Promise<TRole> {
    await chainInSubtree(queryOf(this.#d.db), auth.organizationId, organizationId);
    return this.requireManager(auth, organizationId);
  }

  async #membershipHere(members: MembershipsRepository, organizationId: string, userId: string) {
    const current = await members.find(organizationId, userId);
    if (current) return current;
    // Someone acting here through a role held above is changed where that role is held.
    const above = (await members.heldAbove(userId, organizationId)).find((m) => m.depth > 0);
    if (above) {
      throw new AppError(
        "conflict",
        `This member's role is held in organization ${above.organizationId}, above this one: change it there.`,
        { extra: { organization_id: above.organizationId } },
      );
    }
    throw new AppError("not_found", "Member not found.");
  }

  async #keepLastOwner(members: MembershipsRepository, organizationId: string, what: string): Promise<void> {
    if ((await members.countOwners(organizationId)) <= 1) {
      throw new AppError(
        "conflict",
        `The last owner of a top organization cannot be ${what}: make another owner first.`,
      );
    }
  }

  #key = (userId: string, organizationId: string) => `${userId}\u0000${organizationId}`;

  #fresh(userId: string, organizationId: string): RoleEntry | undefined {
    const entry = this.#cache.get(this.#key(userId, organizationId));
    return entry && this.#d.clock.nowMs() - entry.checkedAtMs < this.#d.cacheTtlMs ? entry : undefined;
  }

  async #entry(userId: string, organizationId: string): Promise<RoleEntry> {
    return this.#fresh(userId, organizationId) ?? this.#load(userId, organizationId);
  }

  /** One walk up the tree (and, only when it finds nothing, one look at `users`). */
  async #load(userId: string, organizationId: string): Promise<RoleEntry> {
    const checkedAtMs = this.#d.clock.nowMs();
    const members = new MembershipsRepository(queryOf(this.#d.db));
    const held = await members.heldAbove(userId, organizationId);
    const known = held.length > 0 || (await members.userExists(userId));
    const entry: RoleEntry = { known, role: effectiveRoleOf(held), checkedAtMs };
    if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
    const key = this.#key(userId, organizationId);
    const previous = this.#cache.get(key);
    if (previous) previous.stale = true;
    this.#cache.set(key, entry);
    return entry;
  }

  #narrow(claims: AuthClaims, entry: RoleEntry): AuthClaims {
    if (!entry.known) {
      this.#limited.set(claims, { entry, claims });
      return claims;
    }
    const role = entry.role;
    if (!role) throw new AppError("unauthenticated", "You are not a member of this organization (or no longer).");
    const allowed = allowedScopes(role.role);
    const narrowed: AuthClaims = {
      ...claims,
      scopes: new Set([...claims.scopes].filter((scope) => allowed.has(scope))),
      teamId: role.teamId ?? claims.teamId,
      role: role.role,
    };
    this.#limited.set(claims, { entry, claims: narrowed });
    return narrowed;
  }
}

const allowedCache = new Map<TRole, ReadonlySet<string>>();
/** A role's scopes plus the platform scopes, which no role grants or takes (docs/api.md "Authentication"). */
const allowedScopes = (role: TRole): ReadonlySet<string> => {
  let set = allowedCache.get(role);
  if (!set) {
    set = new Set<string>([...ROLE_SCOPES[role], ...PLATFORM_SCOPES]);
    allowedCache.set(role, set);
  }
  return set;
};

/** The team when it is one of the organization's; else 422 naming the field. */
export const teamOf = async (query: Query, organizationId: string, teamId: string, field: string): Promise<string> => {
  const team = await new TeamsRepository(query).find(organizationId, teamId);
  if (!team) {
    throw new AppError("validation_failed", "No such team in this organization.", {
      fields: { [field]: ["must be a team of this organization"] },
    });
  }
  return team.id;
};
