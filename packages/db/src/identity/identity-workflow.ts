import { isUuid } from "@fleet/shared";
import { type Database, queryOf } from "../database.ts";
import { IdentityRepository, type LoginIdentity, type TeamRef } from "../repositories/identity.repository.ts";
import { MembershipsRepository } from "../repositories/memberships.repository.ts";
import { isUniqueViolation } from "../repositories/sql-values.ts";

/**
 * The authentication workflow of docs/api.md "Initial state and workflow rules", shared by the
 * API (dev-login, the login hook, sign-in, tokens minted elsewhere), the admin CLI and test
 * factories: it opens the transactions and retries a lost race; `IdentityRepository` holds the SQL.
 */
export class IdentityWorkflow {
  readonly #db: Pick<Database, "query" | "transaction">;
  readonly #read: IdentityRepository;
  readonly #members: MembershipsRepository;

  constructor(db: Pick<Database, "query" | "transaction">) {
    this.#db = db;
    this.#read = new IdentityRepository(queryOf(db));
    this.#members = new MembershipsRepository(queryOf(db));
  }

  /**
   * A new user gets a default organization (owner, current) and a default team, and no billing
   * account. A known user keeps their current one.
   */
  async loginByEmail(email: string, organizationName?: string): Promise<LoginIdentity> {
    const normalized = email.toLowerCase();
    for (let attempt = 0; attempt < 3; attempt++) {
      const existing = await this.#existing(normalized);
      if (existing) return existing;
      try {
        return await this.#db.transaction(async (query) => {
          const identity = new IdentityRepository(query);
          const organizationId = await identity.insertOrganization(
            organizationName ?? defaultOrganizationName(normalized),
          );
          const userId = await identity.insertUser(normalized, organizationId);
          await identity.insertOwner(organizationId, userId);
          const teamId = await identity.insertDefaultTeam(organizationId);
          return { userId, organizationId, teamId, created: true };
        });
      } catch (error) {
        // Two first logins of the same address raced: the other one won, read its result.
        if (!isUniqueViolation(error)) throw error;
      }
    }
    throw new Error("login workflow did not converge");
  }

  async #existing(email: string): Promise<LoginIdentity | null> {
    const user = await this.#read.findUser(email);
    if (!user) return null;
    let organizationId = user.organizationId;
    // A removed member keeps no current organization they may not act in.
    if (organizationId && !(await this.#actsIn(user.userId, organizationId))) organizationId = null;
    if (!organizationId) {
      // The current organization was deleted or left: fall back to any membership, else a new one.
      organizationId =
        (await this.#read.firstMembership(user.userId)) ??
        (await this.#db.transaction(async (query) => {
          const identity = new IdentityRepository(query);
          const created = await identity.insertOrganization(defaultOrganizationName(email));
          await identity.insertOwner(created, user.userId);
          await identity.insertDefaultTeam(created);
          return created;
        }));
      await this.#read.setCurrentOrganization(user.userId, organizationId);
    }
    const teamId = await this.defaultTeamId(organizationId);
    return { userId: user.userId, organizationId, teamId, created: false };
  }

  /**
   * Makes an organization the user acts in (a membership there or above) their current one, with its
   * default team; null when they act in none of that id.
   */
  async chooseOrganization(
    userId: string,
    organizationId: string,
  ): Promise<{ organizationId: string; teamId: string } | null> {
    if (!isUuid(organizationId)) return null;
    const id = organizationId.toLowerCase();
    if (!(await this.#actsIn(userId, id))) return null;
    await this.#read.setCurrentOrganization(userId, id);
    return { organizationId: id, teamId: await this.defaultTeamId(id) };
  }

  /** Whether the user has a role in the organization: a membership there or above it. */
  async #actsIn(userId: string, organizationId: string): Promise<boolean> {
    return (await this.#members.heldAbove(userId, organizationId)).length > 0;
  }

  /** The organization's default team, created on first use for organizations made elsewhere. */
  async defaultTeamId(organizationId: string): Promise<string> {
    return (await this.#read.findDefaultTeam(organizationId)) ?? this.#read.insertDefaultTeam(organizationId);
  }

  findTeam(teamId: string): Promise<TeamRef | null> {
    return this.#read.findTeam(teamId);
  }

  organizationExists(organizationId: string): Promise<boolean> {
    return this.#read.organizationExists(organizationId);
  }

  /**
   * The organization a trusted token's `id` claim names, created on first sight with a default team
   * (the workflow run just in time for tokens minted elsewhere). A UUID is used as the organization's
   * own id; anything else is remembered as an external id.
   */
  async resolveOrganization(claimedId: string): Promise<string> {
    const claimedUuid = isUuid(claimedId);
    for (let attempt = 0; attempt < 3; attempt++) {
      const found = await this.#read.findClaimedOrganization(claimedId);
      if (found) return found;
      try {
        return await this.#db.transaction(async (query) => {
          const identity = new IdentityRepository(query);
          const organizationId = await identity.insertOrganization(
            `Organization ${claimedId}`.slice(0, 200),
            null,
            claimedUuid ? claimedId.toLowerCase() : undefined,
          );
          await identity.insertDefaultTeam(organizationId);
          if (!claimedUuid) await identity.insertExternalId(claimedId, organizationId);
          return organizationId;
        });
      } catch (error) {
        // Two first requests of the same organization raced: read what the winner wrote.
        if (!isUniqueViolation(error)) throw error;
      }
    }
    throw new Error("organization provisioning did not converge");
  }

  /** Creates an organization under a parent (reseller trees); used by tests and admin tooling. */
  async createOrganization(name: string, parentId?: string): Promise<{ organizationId: string; teamId: string }> {
    return this.#db.transaction(async (query) => {
      const identity = new IdentityRepository(query);
      const organizationId = await identity.insertOrganization(name, parentId ?? null);
      const teamId = await identity.insertDefaultTeam(organizationId);
      return { organizationId, teamId };
    });
  }
}

const defaultOrganizationName = (email: string): string => {
  const local = email.split("@")[0] ?? email;
  return `${local}'s organization`.slice(0, 200);
};
