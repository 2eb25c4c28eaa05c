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
    return this.#query<UserOrganization>(
      `select o.id, o.name, m.role from organization_members m join organizations o on o.id = m.organization_id
       where m.user_id = $1 order by o.name, o.id`,
      [userId],
    );
  }

  async userEmail(userId: string): Promise<string | null> {
    if (!isUuid(userId)) return null;
    const rows = await this.#query<{ email: string }>(`select email from users where id = $1`, [userId]);
    return rows[0]?.email ?? null;
  }

  /** docs/api.md "Sign-in": the chosen organization becomes the user's current one. */
  async setCurrentOrganization(userId: string, organizationId: string): Promise<void> {
    await this.#query(
      `update users set current_organization_id = $2 where id = $1 and current_organization_id is distinct from $2`,
      [userId, organizationId],
    );
  }
}
