import { isUuid } from "@fleet/shared";
import { sql } from "kysely";
import type { Query } from "../database.ts";

const now = sql<Date>`now()`;

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
    const row = await this.#query.kysely
      .selectFrom("users")
      .select(["id", "current_organization_id"])
      .where("email", "=", email)
      .executeTakeFirst();
    return row ? { userId: row.id, organizationId: row.current_organization_id } : null;
  }

  /** The organization of the user's oldest membership, if any. */
  async firstMembership(userId: string): Promise<string | null> {
    const row = await this.#query.kysely
      .selectFrom("organization_members")
      .select("organization_id")
      .where("user_id", "=", userId)
      .orderBy("created_at")
      .limit(1)
      .executeTakeFirst();
    return row?.organization_id ?? null;
  }

  async setCurrentOrganization(userId: string, organizationId: string): Promise<void> {
    await this.#query.kysely
      .updateTable("users")
      .set({ current_organization_id: organizationId })
      .where("id", "=", userId)
      .execute();
  }

  async insertUser(email: string, organizationId: string): Promise<string> {
    const userId = crypto.randomUUID();
    await this.#query.kysely
      .insertInto("users")
      .values({ id: userId, email, current_organization_id: organizationId, created_at: now })
      .execute();
    return userId;
  }

  async insertOrganization(
    name: string,
    parentId: string | null = null,
    id: string = crypto.randomUUID(),
  ): Promise<string> {
    await this.#query.kysely
      .insertInto("organizations")
      .values({ id, name, parent_id: parentId, created_at: now })
      .execute();
    return id;
  }

  async insertOwner(organizationId: string, userId: string): Promise<void> {
    await this.#query.kysely
      .insertInto("organization_members")
      .values({
        id: crypto.randomUUID(),
        organization_id: organizationId,
        user_id: userId,
        role: "owner",
        created_at: now,
      })
      .execute();
  }

  async insertDefaultTeam(organizationId: string): Promise<string> {
    const id = crypto.randomUUID();
    await this.#query.kysely
      .insertInto("teams")
      .values({ id, organization_id: organizationId, name: "Default", is_default: true, created_at: now })
      .execute();
    return id;
  }

  async insertExternalId(externalId: string, organizationId: string): Promise<void> {
    await this.#query.kysely
      .insertInto("organization_external_ids")
      .values({ external_id: externalId, organization_id: organizationId, created_at: now })
      .execute();
  }

  /** The organization a token's claim names: by id for a UUID, else by its remembered external id. */
  async findClaimedOrganization(claimedId: string): Promise<string | null> {
    const db = this.#query.kysely;
    const row = isUuid(claimedId)
      ? await db.selectFrom("organizations").select("id").where("id", "=", claimedId).executeTakeFirst()
      : await db
          .selectFrom("organization_external_ids")
          .select("organization_id as id")
          .where("external_id", "=", claimedId)
          .executeTakeFirst();
    return row?.id ?? null;
  }

  /** The organization's default team, if it has one. */
  async findDefaultTeam(organizationId: string): Promise<string | null> {
    const row = await this.#query.kysely
      .selectFrom("teams")
      .select("id")
      .where("organization_id", "=", organizationId)
      .where("is_default", "=", true)
      .limit(1)
      .executeTakeFirst();
    return row?.id ?? null;
  }

  /** The team if it exists, with its organization; null otherwise. */
  async findTeam(teamId: string): Promise<TeamRef | null> {
    if (!isUuid(teamId)) return null;
    const row = await this.#query.kysely
      .selectFrom("teams")
      .select(["id", "organization_id"])
      .where("id", "=", teamId)
      .executeTakeFirst();
    return row ? { id: row.id, organizationId: row.organization_id } : null;
  }

  async organizationExists(organizationId: string): Promise<boolean> {
    if (!isUuid(organizationId)) return false;
    const row = await this.#query.kysely
      .selectFrom("organizations")
      .select("id")
      .where("id", "=", organizationId)
      .executeTakeFirst();
    return row !== undefined;
  }
}
