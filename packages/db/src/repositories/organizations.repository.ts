import { isUuid } from "@fleet/shared";
import { sql } from "kysely";
import type { Query } from "../database.ts";
import { toDate, toNumber } from "./sql-values.ts";

/** An organization with its place in its tree (docs/api.md "Organizations"). */
export interface OrganizationNode {
  id: string;
  name: string;
  parentId: string | null;
  /** 1 for the top of the tree. */
  level: number;
  /** The top of the tree: it pays for everything below it. */
  billingRootId: string;
  routers: number;
  /** Routers with a pulse now. */
  online: number;
  createdAt: Date;
}

/** What keeps an organization from being deleted (docs/api.md "Organizations"). */
export interface OrganizationContents {
  routers: number;
  children: number;
  activeForwards: number;
  activeAccess: number;
  billingAccount: boolean;
}

/** Deeper than any tree we allow: a guard against a cycle someone wrote by hand. */
const MAX_WALK = 32;

// The organization and every one above it, nearest first (depth 0 = itself). Raw, like the walks
// on it: recursive statements read plainer in SQL than in a builder.
const chainFrom = (organizationId: string) => sql`with recursive chain (id, parent_id, name, created_at, depth) as (
  select id, parent_id, name, created_at, 0 from organizations where id = ${organizationId}
  union all
  select o.id, o.parent_id, o.name, o.created_at, c.depth + 1
  from organizations o join chain c on o.id = c.parent_id where c.depth < ${sql.lit(MAX_WALK)}
)`;

/**
 * The organization tree: reads and writes of `organizations` on the `query` it is given. Trees are
 * at most 10 levels deep, so a recursive walk up or down is a handful of index lookups.
 */
export class OrganizationsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /** The organization and its ancestors, nearest first; empty for an unknown id. */
  async chain(organizationId: string): Promise<Array<{ id: string; parentId: string | null; name: string }>> {
    if (!isUuid(organizationId)) return [];
    const { rows } = await sql<{ id: string; parent_id: string | null; name: string }>`
      ${chainFrom(organizationId)} select id, parent_id, name from chain order by depth`.execute(this.#query.kysely);
    return rows.map((r) => ({ id: r.id, parentId: r.parent_id, name: r.name }));
  }

  /**
   * `rootId` and every organization below it, parents before children, with their levels (the
   * root's level counted from the top of its tree) and router counts.
   */
  async subtree(rootId: string): Promise<OrganizationNode[]> {
    if (!isUuid(rootId)) return [];
    const { rows } = await sql<{
      id: string;
      parent_id: string | null;
      name: string;
      level: number;
      billing_root_id: string;
      created_at: unknown;
      routers: unknown;
      online: unknown;
    }>`
      ${chainFrom(rootId)},
      top as (select id, (select count(*) from chain) as level from chain where parent_id is null),
      tree (id, parent_id, name, created_at, level) as (
        select o.id, o.parent_id, o.name, o.created_at, (select level from top)::int from organizations o where o.id = ${rootId}
        union all
        select o.id, o.parent_id, o.name, o.created_at, t.level + 1
        from organizations o join tree t on o.parent_id = t.id where t.level < ${sql.lit(MAX_WALK)}
      )
      select t.id, t.parent_id, t.name, t.level, (select id from top) as billing_root_id, t.created_at,
        (select count(*) from routers r where r.organization_id = t.id) as routers,
        (select count(*) from routers r join router_liveness l on l.router_id = r.id
          where r.organization_id = t.id and l.has_pulse) as online
      from tree t order by t.level, t.created_at, t.id`.execute(this.#query.kysely);
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      parentId: r.parent_id,
      level: toNumber(r.level),
      billingRootId: r.billing_root_id,
      routers: toNumber(r.routers),
      online: toNumber(r.online),
      createdAt: toDate(r.created_at),
    }));
  }

  /** Locks the organization's row until the transaction ends (children and members change under it). */
  async lock(organizationId: string): Promise<boolean> {
    if (!isUuid(organizationId)) return false;
    const rows = await this.#query.kysely
      .selectFrom("organizations")
      .select("id")
      .where("id", "=", organizationId)
      .forUpdate()
      .execute();
    return rows.length > 0;
  }

  async countChildren(organizationId: string): Promise<number> {
    const row = await this.#query.kysely
      .selectFrom("organizations")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("parent_id", "=", organizationId)
      .executeTakeFirstOrThrow();
    return toNumber(row.n);
  }

  async countRouters(organizationId: string): Promise<number> {
    const row = await this.#query.kysely
      .selectFrom("routers")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("organization_id", "=", organizationId)
      .executeTakeFirstOrThrow();
    return toNumber(row.n);
  }

  async createdAt(organizationId: string): Promise<Date | null> {
    const row = await this.#query.kysely
      .selectFrom("organizations")
      .select("created_at")
      .where("id", "=", organizationId)
      .executeTakeFirst();
    return row?.created_at ?? null;
  }

  async insert(input: { id: string; name: string; parentId: string; createdAt: Date }): Promise<void> {
    await this.#query.kysely
      .insertInto("organizations")
      .values({ id: input.id, name: input.name, parent_id: input.parentId, created_at: input.createdAt })
      .execute();
  }

  async rename(organizationId: string, name: string): Promise<void> {
    await this.#query.kysely.updateTable("organizations").set({ name }).where("id", "=", organizationId).execute();
  }

  /** What is left in the organization (routers, children, live sessions, its own billing account). */
  async contents(organizationId: string, now: Date): Promise<OrganizationContents> {
    const row = await this.#query.kysely
      .selectNoFrom((eb) => [
        eb
          .selectFrom("routers")
          .select(eb.fn.countAll().as("n"))
          .where("organization_id", "=", organizationId)
          .as("routers"),
        eb
          .selectFrom("organizations")
          .select(eb.fn.countAll().as("n"))
          .where("parent_id", "=", organizationId)
          .as("children"),
        eb
          .selectFrom("forwards as f")
          .innerJoin("routers as r", "r.id", "f.router_id")
          .select(eb.fn.countAll().as("n"))
          .where("r.organization_id", "=", organizationId)
          .where("f.status", "=", "active")
          .where("f.expires_at", ">", now)
          .as("forwards"),
        eb
          .selectFrom("router_access as a")
          .innerJoin("routers as r", "r.id", "a.router_id")
          .select(eb.fn.countAll().as("n"))
          .where("r.organization_id", "=", organizationId)
          .where("a.status", "=", "active")
          .where("a.expires_at", ">", now)
          .as("access"),
        eb
          .exists(
            eb.selectFrom("billing_accounts").select(eb.lit(1).as("one")).where("organization_id", "=", organizationId),
          )
          .as("account"),
      ])
      .executeTakeFirstOrThrow();
    return {
      routers: toNumber(row.routers ?? 0),
      children: toNumber(row.children ?? 0),
      activeForwards: toNumber(row.forwards ?? 0),
      activeAccess: toNumber(row.access ?? 0),
      billingAccount: row.account === true,
    };
  }

  /**
   * Deletes the organization; its teams, memberships, invitations, keys and webhooks go with it, and
   * users whose current organization it was have none (the next sign-in picks one).
   */
  async delete(organizationId: string): Promise<void> {
    await this.#query.kysely.deleteFrom("organizations").where("id", "=", organizationId).execute();
  }
}
