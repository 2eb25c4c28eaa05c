import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";

/** One membership of a user on the way from an organization up to the top of its tree. */
export interface HeldMembership {
  organizationId: string;
  role: string;
  /** The membership's team, when it is bound to one (null: none, or not recorded). */
  teamId: string | null;
  /** 0: in the organization itself; 1: its parent; ... */
  depth: number;
}

/** An organization the user is a member of, for `GET /v1/me`. */
export interface UserOrganization {
  id: string;
  name: string;
  role: string;
}

/** Deeper than the tree may be (10 levels, docs/api.md "Sign-in"): a cycle cannot loop forever. */
const MAX_WALK = 32;

/**
 * Who may act where (docs/api.md "Sign-in"): the memberships a user holds in an
 * organization and in every organization above it, on `organization_members` and the tree's
 * parent links. Reads only; which role wins is the caller's rule.
 */
export class MembershipsLookupRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /** The user's memberships in `organizationId` and above it, nearest first. */
  async heldOnPath(userId: string, organizationId: string): Promise<HeldMembership[]> {
    if (!isUuid(userId) || !isUuid(organizationId)) return [];
    // A recursive walk up the parent links: the tree's depth is not known to the statement.
    const rows = await this.#query<{ organization_id: string; role: string; depth: number | string }>(
      `with recursive chain (id, parent_id, depth) as (
         select id, parent_id, 0 from organizations where id = $2
         union all
         select o.id, o.parent_id, c.depth + 1 from organizations o join chain c on o.id = c.parent_id
         where c.depth < ${MAX_WALK}
       )
       select m.organization_id, m.role, c.depth from chain c
       join organization_members m on m.organization_id = c.id and m.user_id = $1
       order by c.depth`,
      [userId, organizationId],
    );
    return rows.map((row) => ({
      organizationId: row.organization_id,
      role: row.role,
      teamId: null,
      depth: Number(row.depth),
    }));
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
