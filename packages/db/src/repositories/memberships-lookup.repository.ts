import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";

/** An organization the user is a member of, for `GET /v1/me`. */
export interface UserOrganization {
  id: string;
  name: string;
  role: string;
}

/**
 * What sign-in reads of a user (docs/api.md "Sign-in"): the organizations of their memberships,
 * their email, their current organization. Effective roles are MembershipsRepository's walk.
 */
export class MembershipsLookupRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async organizationsOf(userId: string): Promise<UserOrganization[]> {
    if (!isUuid(userId)) return [];
    return this.#query.kysely
      .selectFrom("organization_members as m")
      .innerJoin("organizations as o", "o.id", "m.organization_id")
      .select(["o.id", "o.name", "m.role"])
      .where("m.user_id", "=", userId)
      .orderBy("o.name")
      .orderBy("o.id")
      .execute();
  }

  async userEmail(userId: string): Promise<string | null> {
    if (!isUuid(userId)) return null;
    const row = await this.#query.kysely
      .selectFrom("users")
      .select("email")
      .where("id", "=", userId)
      .executeTakeFirst();
    return row?.email ?? null;
  }

  /** docs/api.md "Sign-in": the chosen organization becomes the user's current one. */
  async setCurrentOrganization(userId: string, organizationId: string): Promise<void> {
    await this.#query.kysely
      .updateTable("users")
      .set({ current_organization_id: organizationId })
      .where("id", "=", userId)
      .where("current_organization_id", "is distinct from", organizationId)
      .execute();
  }
}
