import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import { toDate, toNumber } from "./sql-values.ts";

/** How many sessions (forwards and temporary router access) are active, and when the first of them expires. */
export interface ActiveSessions {
  count: number;
  freesAt: Date | null;
}

/** The router a session (forward or access) is created on, locked for the creating transaction. */
export interface SessionRouter {
  id: string;
  organizationId: string;
  tunnelIp: string | null;
}

// The tree walks stop 32 levels down, as a guard against a cycle in `parent_id`.
const MAX_DEPTH = 32;

/**
 * What the session quotas count (docs/api.md "Tunnel agent and entry point"): forwards and temporary
 * router access together, per router and per billing root over its whole tree. Reads and locks
 * only; the limits and what they answer are the services' (apps/api "session quotas").
 */
export class SessionCountsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /**
   * The router if it is in the team (null for unknown, foreign and malformed ids). `forUpdate` locks
   * its row for the creating transaction, so the per-router quota holds under concurrent creates.
   */
  async router(routerId: string, teamId: string, options: { forUpdate?: boolean } = {}): Promise<SessionRouter | null> {
    if (!isUuid(routerId) || !isUuid(teamId)) return null;
    const router = await this.#query.kysely
      .selectFrom("routers")
      .select(["id", "organization_id", "tunnel_ip"])
      .where("id", "=", routerId)
      .where("team_id", "=", teamId)
      .$if(options.forUpdate === true, (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!router) return null;
    return { id: router.id, organizationId: router.organization_id, tunnelIp: router.tunnel_ip };
  }

  async activeOnRouter(routerId: string, now: Date): Promise<ActiveSessions> {
    const row = await this.#query.kysely
      .selectFrom((eb) =>
        eb
          .selectFrom("forwards")
          .select("expires_at")
          .where("router_id", "=", routerId)
          .where("status", "=", "active")
          .where("expires_at", ">", now)
          .unionAll(
            eb
              .selectFrom("router_access")
              .select("expires_at")
              .where("router_id", "=", routerId)
              .where("status", "=", "active")
              .where("expires_at", ">", now),
          )
          .as("x"),
      )
      // An aggregate is not converted as its column is: min() comes back as the driver's text.
      .select((eb) => [eb.fn.countAll().as("n"), eb.fn.min<Date | string | null>("x.expires_at").as("frees_at")])
      .executeTakeFirstOrThrow();
    return { count: toNumber(row.n), freesAt: row.frees_at === null ? null : toDate(row.frees_at) };
  }

  /**
   * The billing root of the organization, its row locked until the transaction ends: creates
   * across one tree serialize here (routers are always locked before their billing root: no cycle).
   */
  async lockBillingRoot(organizationId: string): Promise<string> {
    // The billing root (the organization that pays): the top of the parent chain.
    const root = await this.#query.kysely
      .withRecursive("chain(id, parent_id, depth)", (db) =>
        db
          .selectFrom("organizations")
          .select(["id", "parent_id", (eb) => eb.lit(0).as("depth")])
          .where("id", "=", organizationId)
          .unionAll(
            db
              .selectFrom("organizations as o")
              .innerJoin("chain as c", "o.id", "c.parent_id")
              .select(["o.id", "o.parent_id", (eb) => eb("c.depth", "+", 1).as("depth")])
              .where("c.depth", "<", MAX_DEPTH),
          ),
      )
      .selectFrom("chain")
      .select("id")
      .where("parent_id", "is", null)
      .limit(1)
      .executeTakeFirst();
    const rootId = root?.id ?? organizationId;
    await this.#query.kysely.selectFrom("organizations").select("id").where("id", "=", rootId).forUpdate().execute();
    return rootId;
  }

  /** Active sessions of the billing root's whole tree, and whether the root has a payment method on file. */
  async activeInTree(rootId: string, now: Date): Promise<ActiveSessions & { hasCard: boolean }> {
    const row = await this.#query.kysely
      .withRecursive("tree(id, depth)", (db) =>
        db
          .selectFrom("organizations")
          .select(["id", (eb) => eb.lit(0).as("depth")])
          .where("id", "=", rootId)
          .unionAll(
            db
              .selectFrom("organizations as o")
              .innerJoin("tree as t", "o.parent_id", "t.id")
              .select(["o.id", (eb) => eb("t.depth", "+", 1).as("depth")])
              .where("t.depth", "<", MAX_DEPTH),
          ),
      )
      .selectFrom((eb) =>
        eb
          .selectFrom("forwards as f")
          .innerJoin("routers as r", "r.id", "f.router_id")
          .select("f.expires_at")
          .where("r.organization_id", "in", eb.selectFrom("tree").select("tree.id"))
          .where("f.status", "=", "active")
          .where("f.expires_at", ">", now)
          .unionAll(
            eb
              .selectFrom("router_access as a")
              .innerJoin("routers as r", "r.id", "a.router_id")
              .select("a.expires_at")
              .where("r.organization_id", "in", eb.selectFrom("tree").select("tree.id"))
              .where("a.status", "=", "active")
              .where("a.expires_at", ">", now),
          )
          .as("x"),
      )
      .select((eb) => [
        eb.fn.countAll().as("n"),
        // An aggregate is not converted as its column is: min() comes back as the driver's text.
        eb.fn.min<Date | string | null>("x.expires_at").as("frees_at"),
        eb
          .exists(
            eb
              .selectFrom("billing_accounts as a")
              .innerJoin("billing_payment_methods as pm", "pm.account_id", "a.id")
              .select(eb.lit(1).as("one"))
              .where("a.organization_id", "=", rootId),
          )
          .as("has_card"),
      ])
      .executeTakeFirstOrThrow();
    return {
      count: toNumber(row.n),
      freesAt: row.frees_at === null ? null : toDate(row.frees_at),
      hasCard: row.has_card === true,
    };
  }
}
