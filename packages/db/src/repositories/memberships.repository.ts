import { isRole, isUuid, type TRole } from "@fleet/shared";
import type { Query } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** A membership held in an organization, seen from an organization at or below it. */
export interface MembershipRecord {
  userId: string;
  email: string;
  organizationId: string;
  role: TRole;
  teamId: string | null;
  createdAt: Date;
  /** 0: held in the organization asked about; n: held n levels above it. */
  depth: number;
}

const MAX_WALK = 32;

// Raw, like every walk of the tree: recursive statements read plainer in SQL than in a builder.
const CHAIN = `with recursive chain (id, parent_id, depth) as (
  select id, parent_id, 0 from organizations where id = $1
  union all
  select o.id, o.parent_id, c.depth + 1 from organizations o join chain c on o.id = c.parent_id where c.depth < ${MAX_WALK}
)`;

const SELECT = `select m.user_id, u.email, m.organization_id, m.role, m.team_id, c.depth,
  (extract(epoch from m.created_at) * 1000)::float8 as created_ms
  from chain c join organization_members m on m.organization_id = c.id join users u on u.id = m.user_id`;

const fromRow = (row: Record<string, unknown>): MembershipRecord => {
  const role = String(row.role);
  return {
    userId: String(row.user_id),
    email: String(row.email),
    organizationId: String(row.organization_id),
    role: isRole(role) ? role : "viewer",
    teamId: row.team_id === null || row.team_id === undefined ? null : String(row.team_id),
    createdAt: new Date(toNumber(row.created_ms)),
    depth: toNumber(row.depth),
  };
};

/** `organization_members`, read along the tree: reads and writes only, on the `query` it is given. */
export class MembershipsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /** The user's memberships in the organization and every one above it (one walk up the tree). */
  async heldAbove(userId: string, organizationId: string): Promise<MembershipRecord[]> {
    if (!isUuid(userId) || !isUuid(organizationId)) return [];
    const rows = await this.#query<Record<string, unknown>>(`${CHAIN} ${SELECT} where m.user_id = $2`, [
      organizationId,
      userId,
    ]);
    return rows.map(fromRow);
  }

  /** Every membership in the organization and above it: who may act there, and from where. */
  async actingIn(organizationId: string): Promise<MembershipRecord[]> {
    if (!isUuid(organizationId)) return [];
    const rows = await this.#query<Record<string, unknown>>(`${CHAIN} ${SELECT} order by c.depth desc, m.created_at`, [
      organizationId,
    ]);
    return rows.map(fromRow);
  }

  /**
   * The organizations of the user's memberships with their names, and every membership the user
   * holds in the chain above each of them (depth from that organization): enough to know the
   * effective role in each.
   */
  async organizationsOf(userId: string): Promise<Array<{ id: string; name: string; held: MembershipRecord[] }>> {
    if (!isUuid(userId)) return [];
    const rows = await this.#query<Record<string, unknown>>(
      `with recursive chain (start_id, id, parent_id, depth) as (
         select o.id, o.id, o.parent_id, 0 from organizations o
           join organization_members m on m.organization_id = o.id and m.user_id = $1
         union all
         select c.start_id, o.id, o.parent_id, c.depth + 1
         from organizations o join chain c on o.id = c.parent_id where c.depth < ${MAX_WALK}
       )
       select c.start_id, s.name as start_name, m.user_id, u.email, m.organization_id, m.role, m.team_id, c.depth,
         (extract(epoch from m.created_at) * 1000)::float8 as created_ms
       from chain c join organizations s on s.id = c.start_id
       join organization_members m on m.organization_id = c.id and m.user_id = $1
       join users u on u.id = m.user_id
       order by s.name, c.start_id, c.depth`,
      [userId],
    );
    const byStart = new Map<string, { id: string; name: string; held: MembershipRecord[] }>();
    for (const row of rows) {
      const id = String(row.start_id);
      const entry = byStart.get(id) ?? { id, name: String(row.start_name), held: [] };
      entry.held.push(fromRow(row));
      byStart.set(id, entry);
    }
    return [...byStart.values()];
  }

  /** Every membership of the user, wherever it is held. */
  async ofUser(userId: string): Promise<Array<{ organizationId: string; role: TRole; teamId: string | null }>> {
    if (!isUuid(userId)) return [];
    const rows = await this.#query.kysely
      .selectFrom("organization_members")
      .select(["organization_id", "role", "team_id"])
      .where("user_id", "=", userId)
      .execute();
    return rows.map((r) => ({ organizationId: r.organization_id, role: r.role, teamId: r.team_id }));
  }

  /** The user's email, or null for a subject that is no user of ours. */
  async email(userId: string): Promise<string | null> {
    if (!isUuid(userId)) return null;
    const row = await this.#query.kysely
      .selectFrom("users")
      .select("email")
      .where("id", "=", userId)
      .executeTakeFirst();
    return row?.email ?? null;
  }

  async userExists(userId: string): Promise<boolean> {
    if (!isUuid(userId)) return false;
    const row = await this.#query.kysely.selectFrom("users").select("id").where("id", "=", userId).executeTakeFirst();
    return row !== undefined;
  }

  /** The user's membership in exactly this organization. */
  async find(organizationId: string, userId: string): Promise<MembershipRecord | null> {
    if (!isUuid(userId) || !isUuid(organizationId)) return null;
    const row = await this.#query.kysely
      .selectFrom("organization_members as m")
      .innerJoin("users as u", "u.id", "m.user_id")
      .select(["m.user_id", "u.email", "m.organization_id", "m.role", "m.team_id", "m.created_at"])
      .where("m.organization_id", "=", organizationId)
      .where("m.user_id", "=", userId)
      .executeTakeFirst();
    return row
      ? {
          userId: row.user_id,
          email: row.email,
          organizationId: row.organization_id,
          role: row.role,
          teamId: row.team_id,
          createdAt: row.created_at,
          depth: 0,
        }
      : null;
  }

  async countOwners(organizationId: string): Promise<number> {
    const row = await this.#query.kysely
      .selectFrom("organization_members")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("organization_id", "=", organizationId)
      .where("role", "=", "owner")
      .executeTakeFirstOrThrow();
    return toNumber(row.n);
  }

  /** Makes or replaces the user's membership in the organization. */
  async upsert(input: {
    organizationId: string;
    userId: string;
    role: TRole;
    teamId: string | null;
    createdAt: Date;
  }): Promise<void> {
    await this.#query.kysely
      .insertInto("organization_members")
      .values({
        id: crypto.randomUUID(),
        organization_id: input.organizationId,
        user_id: input.userId,
        role: input.role,
        team_id: input.teamId,
        created_at: input.createdAt,
      })
      .onConflict((oc) =>
        oc
          .columns(["organization_id", "user_id"])
          .doUpdateSet((eb) => ({ role: eb.ref("excluded.role"), team_id: eb.ref("excluded.team_id") })),
      )
      .execute();
  }

  async update(organizationId: string, userId: string, change: { role: TRole; teamId: string | null }): Promise<void> {
    await this.#query.kysely
      .updateTable("organization_members")
      .set({ role: change.role, team_id: change.teamId })
      .where("organization_id", "=", organizationId)
      .where("user_id", "=", userId)
      .execute();
  }

  async delete(organizationId: string, userId: string): Promise<boolean> {
    const deleted = await this.#query.kysely
      .deleteFrom("organization_members")
      .where("organization_id", "=", organizationId)
      .where("user_id", "=", userId)
      .executeTakeFirst();
    return deleted.numDeletedRows > 0n;
  }

  async setCurrentOrganization(userId: string, organizationId: string): Promise<void> {
    await this.#query.kysely
      .updateTable("users")
      .set({ current_organization_id: organizationId })
      .where("id", "=", userId)
      .execute();
  }
}
