import { isUuid } from "@fleet/shared";
import type { Database } from "../database.ts";
import { OrganizationExternalId } from "../entities/organization-external-id.entity.ts";
import { OrganizationMember } from "../entities/organization-member.entity.ts";
import { Organization } from "../entities/organization.entity.ts";
import { Team } from "../entities/team.entity.ts";
import { User } from "../entities/user.entity.ts";
import { isUniqueViolation } from "./sql-values.ts";

export interface LoginIdentity {
  userId: string;
  organizationId: string;
  teamId: string;
  created: boolean;
}

export interface TeamRef {
  id: string;
  organizationId: string;
}

/** Users, organizations, memberships and teams: the authentication workflow of docs/api.md. */
export class IdentityRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /**
   * docs/api.md "Initial state and workflow rules" 1-2: a new user gets a default organization (owner,
   * current) and a default team, and no billing account. A known user keeps their current one.
   */
  async loginByEmail(email: string, organizationName?: string): Promise<LoginIdentity> {
    const normalized = email.toLowerCase();
    for (let attempt = 0; attempt < 3; attempt++) {
      const existing = await this.#existing(normalized);
      if (existing) return existing;
      try {
        return await this.#register(normalized, organizationName);
      } catch (error) {
        // Two first logins of the same address raced: the other one won, read its result.
        if (!isUniqueViolation(error)) throw error;
      }
    }
    throw new Error("login workflow did not converge");
  }

  async #existing(email: string): Promise<LoginIdentity | null> {
    const rows = await this.#db.query<{ user_id: string; organization_id: string | null }>(
      `select u.id as user_id, u.current_organization_id as organization_id from users u where u.email = ?`,
      [email],
    );
    const row = rows[0];
    if (!row) return null;
    let organizationId = row.organization_id;
    if (!organizationId) {
      // The current organization was deleted: fall back to any membership, else a new one.
      const member = await this.#db.query<{ organization_id: string }>(
        `select organization_id from organization_members where user_id = ? order by created_at limit 1`,
        [row.user_id],
      );
      organizationId = member[0]?.organization_id ?? (await this.#createOrganizationFor(row.user_id, email));
      await this.#db.query(`update users set current_organization_id = ? where id = ?`, [organizationId, row.user_id]);
    }
    const teamId = await this.defaultTeamId(organizationId);
    return { userId: row.user_id, organizationId, teamId, created: false };
  }

  async #register(email: string, organizationName?: string): Promise<LoginIdentity> {
    const em = this.#db.em();
    return em.transactional(async (tx) => {
      const organization = tx.create(Organization, {
        id: crypto.randomUUID(),
        name: organizationName ?? defaultOrganizationName(email),
      });
      const user = tx.create(User, { id: crypto.randomUUID(), email, currentOrganization: organization });
      tx.create(OrganizationMember, { id: crypto.randomUUID(), organization, user, role: "owner" });
      const team = tx.create(Team, { id: crypto.randomUUID(), organization, name: "Default", isDefault: true });
      await tx.flush();
      return { userId: user.id, organizationId: organization.id, teamId: team.id, created: true };
    });
  }

  async #createOrganizationFor(userId: string, email: string): Promise<string> {
    const em = this.#db.em();
    return em.transactional(async (tx) => {
      const organization = tx.create(Organization, { id: crypto.randomUUID(), name: defaultOrganizationName(email) });
      tx.create(OrganizationMember, { id: crypto.randomUUID(), organization, user: userId, role: "owner" });
      tx.create(Team, { id: crypto.randomUUID(), organization, name: "Default", isDefault: true });
      await tx.flush();
      return organization.id;
    });
  }

  /** The organization's default team, created on first use for organizations made elsewhere. */
  async defaultTeamId(organizationId: string): Promise<string> {
    const rows = await this.#db.query<{ id: string }>(
      `select id from teams where organization_id = ? and is_default limit 1`,
      [organizationId],
    );
    if (rows[0]) return rows[0].id;
    const em = this.#db.em();
    const team = em.create(Team, {
      id: crypto.randomUUID(),
      organization: organizationId,
      name: "Default",
      isDefault: true,
    });
    await em.flush();
    return team.id;
  }

  /** The team if it exists, with its organization; null otherwise. */
  async findTeam(teamId: string): Promise<TeamRef | null> {
    if (!isUuid(teamId)) return null;
    const rows = await this.#db.query<{ id: string; organization_id: string }>(
      `select id, organization_id from teams where id = ?`,
      [teamId],
    );
    const row = rows[0];
    return row ? { id: row.id, organizationId: row.organization_id } : null;
  }

  async organizationExists(organizationId: string): Promise<boolean> {
    if (!isUuid(organizationId)) return false;
    const rows = await this.#db.query(`select 1 from organizations where id = ?`, [organizationId]);
    return rows.length > 0;
  }

  /**
   * The organization a trusted token's `id` claim names, created on first sight with a default team
   * (the authentication workflow of docs/api.md, run just in time for tokens minted elsewhere). A UUID
   * is used as the organization's own id; anything else is remembered as an external id.
   */
  async resolveOrganization(claimedId: string): Promise<string> {
    const claimedUuid = isUuid(claimedId);
    for (let attempt = 0; attempt < 3; attempt++) {
      const rows = claimedUuid
        ? await this.#db.query<{ id: string }>(`select id from organizations where id = ?`, [claimedId])
        : await this.#db.query<{ id: string }>(
            `select organization_id as id from organization_external_ids where external_id = ?`,
            [claimedId],
          );
      if (rows[0]) return rows[0].id;
      try {
        return await this.#db.em().transactional(async (tx) => {
          const organization = tx.create(Organization, {
            id: claimedUuid ? claimedId.toLowerCase() : crypto.randomUUID(),
            name: `Organization ${claimedId}`.slice(0, 200),
          });
          tx.create(Team, { id: crypto.randomUUID(), organization, name: "Default", isDefault: true });
          if (!claimedUuid) tx.create(OrganizationExternalId, { externalId: claimedId, organization });
          await tx.flush();
          return organization.id;
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
    const em = this.#db.em();
    return em.transactional(async (tx) => {
      const organization = tx.create(Organization, {
        id: crypto.randomUUID(),
        name,
        parent: parentId ?? null,
      });
      const team = tx.create(Team, { id: crypto.randomUUID(), organization, name: "Default", isDefault: true });
      await tx.flush();
      return { organizationId: organization.id, teamId: team.id };
    });
  }
}

const defaultOrganizationName = (email: string): string => {
  const local = email.split("@")[0] ?? email;
  return `${local}'s organization`.slice(0, 200);
};
