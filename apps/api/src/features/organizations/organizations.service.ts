import {
  type AuditOrigin,
  insertAuditEntries,
  MembershipsRepository,
  type OrganizationContents,
  OrganizationsRepository,
  queryOf,
  TeamsRepository,
} from "@fleet/db";
import {
  AppError,
  type Clock,
  effectiveRoleOf,
  formatIsoUtc,
  type HeldRole,
  roleOfScopes,
  type TCreateOrganizationInput,
  TENANCY_LIMITS,
  type TOrganization,
  type TOrganizationList,
  type TRole,
  type TUpdateOrganizationInput,
} from "@fleet/shared";
import type { AuthClaims } from "../auth/token-verifier.ts";
import type { MembershipsService } from "../members/memberships.service.ts";
import { chainInSubtree, type OrganizationChain, type TenancyDb } from "./organization-scope.ts";

export interface OrganizationsServiceDeps {
  db: TenancyDb;
  clock: Clock;
  memberships: MembershipsService;
}

const parentError = (message: string, field: string) =>
  new AppError("validation_failed", message, { fields: { parent_id: [field] } });

/** What is left in an organization, in words, or null when nothing keeps it. */
const leftover = (c: OrganizationContents): string | null => {
  const parts = [
    c.children > 0 ? `${c.children} child organization(s)` : null,
    c.routers > 0 ? `${c.routers} router(s)` : null,
    c.activeForwards > 0 ? `${c.activeForwards} active forward(s)` : null,
    c.activeAccess > 0 ? `${c.activeAccess} active access session(s)` : null,
    c.billingAccount ? "a billing account of its own" : null,
  ].filter((p): p is string => p !== null);
  return parts.length === 0 ? null : parts.join(", ");
};

/** The organization tree below a token's organization (docs/api.md "Organizations"). */
export class OrganizationsService {
  readonly #d: OrganizationsServiceDeps;
  constructor(deps: OrganizationsServiceDeps) {
    this.#d = deps;
  }

  /** The token's organization and everything below it, with the caller's role in each. */
  async list(auth: AuthClaims): Promise<TOrganizationList> {
    const query = queryOf(this.#d.db);
    const organizations = new OrganizationsRepository(query);
    const nodes = await organizations.subtree(auth.organizationId);
    const above = await organizations.chain(auth.organizationId);
    const roleIn = await this.#rolesOf(auth, [...above, ...nodes.map((n) => ({ id: n.id, parentId: n.parentId }))]);
    return {
      data: nodes.map((n) => ({
        id: n.id,
        name: n.name,
        parent_id: n.parentId,
        level: n.level,
        billing_root_id: n.billingRootId,
        role: roleIn(n.id),
        routers: n.routers,
        online: n.online,
        created_at: formatIsoUtc(n.createdAt),
      })),
    };
  }

  /** A customer below the token's organization (or below one of its descendants). */
  async create(auth: AuthClaims, origin: AuditOrigin, input: TCreateOrganizationInput): Promise<TOrganization> {
    const parentId = input.parent_id ?? auth.organizationId;
    await chainInSubtree(queryOf(this.#d.db), auth.organizationId, parentId);
    await this.#d.memberships.requireManager(auth, parentId);
    const now = this.#d.clock.now();
    const id = crypto.randomUUID();
    const chain = await this.#d.db.transaction(async (query) => {
      const organizations = new OrganizationsRepository(query);
      // The parent's row is locked, so parallel creates cannot all see room for one more child.
      await organizations.lock(parentId);
      const chain = await chainInSubtree(query, auth.organizationId, parentId);
      if (chain.length + 1 > TENANCY_LIMITS.levels) {
        throw parentError(
          `A tree has at most ${TENANCY_LIMITS.levels} levels.`,
          `is at level ${chain.length}: a child there would be deeper than ${TENANCY_LIMITS.levels} levels`,
        );
      }
      if ((await organizations.countChildren(parentId)) >= TENANCY_LIMITS.children) {
        throw parentError(
          `An organization has at most ${TENANCY_LIMITS.children} child organizations.`,
          `already has ${TENANCY_LIMITS.children} child organizations`,
        );
      }
      await organizations.insert({ id, name: input.name, parentId, createdAt: now });
      await new TeamsRepository(query).insert({
        id: crypto.randomUUID(),
        organizationId: id,
        name: "Default",
        isDefault: true,
        createdAt: now,
      });
      // In the new organization and in its parent, whose people made it.
      await insertAuditEntries(
        query,
        [id, parentId].map((organizationId) => ({
          organizationId,
          occurredAt: now,
          action: "organization.created",
          actor: origin.actor,
          sourceIp: origin.sourceIp,
          target: { type: "organization", id },
          details: { name: input.name, parent_id: parentId },
        })),
      );
      return chain;
    });
    return {
      id,
      name: input.name,
      parent_id: parentId,
      level: chain.length + 1,
      billing_root_id: chain[chain.length - 1]?.id ?? parentId,
      role: await this.#d.memberships.actorRole(auth, id),
      routers: 0,
      created_at: formatIsoUtc(now),
    };
  }

  async update(auth: AuthClaims, origin: AuditOrigin, input: TUpdateOrganizationInput): Promise<TOrganization> {
    await chainInSubtree(queryOf(this.#d.db), auth.organizationId, input.id);
    await this.#d.memberships.requireManager(auth, input.id);
    const now = this.#d.clock.now();
    const { chain, routers, createdAt } = await this.#d.db.transaction(async (query) => {
      const organizations = new OrganizationsRepository(query);
      await organizations.lock(input.id);
      const chain = await chainInSubtree(query, auth.organizationId, input.id);
      const previous = chain[0]?.name;
      await organizations.rename(input.id, input.name);
      const parentId = chain[0]?.parentId ?? null;
      await insertAuditEntries(
        query,
        [input.id, ...(parentId ? [parentId] : [])].map((organizationId) => ({
          organizationId,
          occurredAt: now,
          action: "organization.updated",
          actor: origin.actor,
          sourceIp: origin.sourceIp,
          target: { type: "organization", id: input.id },
          details: { name: input.name, previous_name: previous },
        })),
      );
      return {
        chain,
        routers: await organizations.countRouters(input.id),
        createdAt: (await organizations.createdAt(input.id)) ?? now,
      };
    });
    return {
      id: input.id,
      name: input.name,
      parent_id: chain[0]?.parentId ?? null,
      level: chain.length,
      billing_root_id: chain[chain.length - 1]?.id ?? input.id,
      role: await this.#d.memberships.actorRole(auth, input.id),
      routers,
      created_at: formatIsoUtc(createdAt),
    };
  }

  /** Deletes an empty organization below the token's one (docs/api.md "Organizations"). */
  async delete(auth: AuthClaims, origin: AuditOrigin, organizationId: string): Promise<void> {
    const chain = await chainInSubtree(queryOf(this.#d.db), auth.organizationId, organizationId);
    const parentId = chain[0]?.parentId ?? null;
    if (parentId === null) throw new AppError("conflict", "The top organization of a tree cannot be deleted.");
    if (organizationId === auth.organizationId) {
      throw new AppError(
        "conflict",
        "An organization is deleted from the organization above it: choose its parent first.",
      );
    }
    await this.#d.memberships.requireManager(auth, organizationId);
    const now = this.#d.clock.now();
    await this.#d.db.transaction(async (query) => {
      const organizations = new OrganizationsRepository(query);
      // The parent first, then the organization: the order every create and delete locks in.
      await organizations.lock(parentId);
      await organizations.lock(organizationId);
      const left = leftover(await organizations.contents(organizationId, now));
      if (left) throw new AppError("conflict", `The organization still has ${left}: remove them first.`);
      await organizations.delete(organizationId);
      await insertAuditEntries(query, [
        {
          organizationId: parentId,
          occurredAt: now,
          action: "organization.deleted",
          actor: origin.actor,
          sourceIp: origin.sourceIp,
          target: { type: "organization", id: organizationId },
          details: { name: chain[0]?.name },
        },
      ]);
    });
  }

  /**
   * The caller's effective role in each organization of `tree` (every node with its parent, the
   * ancestors of the subtree included): computed in memory from the user's memberships, one query.
   */
  async #rolesOf(auth: AuthClaims, tree: OrganizationChain | Array<{ id: string; parentId: string | null }>) {
    const members = new MembershipsRepository(queryOf(this.#d.db));
    const held = await members.ofUser(auth.userId);
    const known = held.length > 0 || (await members.userExists(auth.userId));
    if (!known) {
      const role = roleOfScopes(auth.scopes);
      return (_id: string): TRole | null => role;
    }
    const parentOf = new Map(tree.map((o) => [o.id, o.parentId]));
    const heldIn = new Map(held.map((m) => [m.organizationId, m]));
    return (id: string): TRole | null => {
      const roles: HeldRole[] = [];
      let at: string | null | undefined = id;
      for (let depth = 0; at && depth < 32; depth++) {
        const m = heldIn.get(at);
        if (m) roles.push({ ...m, depth });
        at = parentOf.get(at);
      }
      return effectiveRoleOf(roles)?.role ?? null;
    };
  }
}
