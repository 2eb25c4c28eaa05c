import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";

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

/**
 * Users, organizations, owners and default teams: the statements of the authentication workflow
 * (`IdentityWorkflow` runs them in its transactions).
 */
export class IdentityRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /** The user with this (lowercase) email and their current organization, if any. */
  async findUser(email: string): Promise<{ userId: string; organizationId: string | null } | null> {
    const rows = await this.#query<{ user_id: string; organization_id: string | null }>(
      `select u.id as user_id, u.current_organization_id as organization_id from users u where u.email = $1`,
      [email],
    );
    const row = rows[0];
    return row ? { userId: row.user_id, organizationId: row.organization_id } : null;
  }

  /** The organization of the user's oldest membership, if any. */
  async firstMembership(userId: string): Promise<string | null> {
    const rows = await this.#query<{ organization_id: string }>(
      `select organization_id from organization_members where user_id = $1 order by created_at limit 1`,
      [userId],
    );
    return rows[0]?.organization_id ?? null;
  }

  async setCurrentOrganization(userId: string, organizationId: string): Promise<void> {
    await this.#query(`update users set current_organization_id = $1 where id = $2`, [organizationId, userId]);
  }

  async insertUser(email: string, organizationId: string): Promise<string> {
    const userId = crypto.randomUUID();
    await this.#query(`insert into users (id, email, current_organization_id, created_at) values ($1, $2, $3, now())`, [
      userId,
      email,
      organizationId,
    ]);
    return userId;
  }

  async insertOrganization(
    name: string,
    parentId: string | null = null,
    id: string = crypto.randomUUID(),
  ): Promise<string> {
    await this.#query(`insert into organizations (id, name, parent_id, created_at) values ($1, $2, $3, now())`, [
      id,
      name,
      parentId,
    ]);
    return id;
  }

  async insertOwner(organizationId: string, userId: string): Promise<void> {
    await this.#query(
      `insert into organization_members (id, organization_id, user_id, role, created_at) values ($1, $2, $3, 'owner', now())`,
      [crypto.randomUUID(), organizationId, userId],
    );
  }

  async insertDefaultTeam(organizationId: string): Promise<string> {
    const id = crypto.randomUUID();
    await this.#query(
      `insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, 'Default', true, now())`,
      [id, organizationId],
    );
    return id;
  }

  async insertExternalId(externalId: string, organizationId: string): Promise<void> {
    await this.#query(
      `insert into organization_external_ids (external_id, organization_id, created_at) values ($1, $2, now())`,
      [externalId, organizationId],
    );
  }

  /** The organization a token's claim names: by id for a UUID, else by its remembered external id. */
  async findClaimedOrganization(claimedId: string): Promise<string | null> {
    const rows = isUuid(claimedId)
      ? await this.#query<{ id: string }>(`select id from organizations where id = $1`, [claimedId])
      : await this.#query<{ id: string }>(
          `select organization_id as id from organization_external_ids where external_id = $1`,
          [claimedId],
        );
    return rows[0]?.id ?? null;
  }

  /** The organization's default team, if it has one. */
  async findDefaultTeam(organizationId: string): Promise<string | null> {
    const rows = await this.#query<{ id: string }>(
      `select id from teams where organization_id = $1 and is_default limit 1`,
      [organizationId],
    );
    return rows[0]?.id ?? null;
  }

  /** The team if it exists, with its organization; null otherwise. */
  async findTeam(teamId: string): Promise<TeamRef | null> {
    if (!isUuid(teamId)) return null;
    const rows = await this.#query<{ id: string; organization_id: string }>(
      `select id, organization_id from teams where id = $1`,
      [teamId],
    );
    const row = rows[0];
    return row ? { id: row.id, organizationId: row.organization_id } : null;
  }

  async organizationExists(organizationId: string): Promise<boolean> {
    if (!isUuid(organizationId)) return false;
    const rows = await this.#query(`select 1 from organizations where id = $1`, [organizationId]);
    return rows.length > 0;
  }
}
