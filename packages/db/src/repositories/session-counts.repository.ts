import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import { toDate, toNumber } from "./sql-values.ts";

type Row = Record<string, unknown>;

// The billing root (the organization that pays) of organization `$1`: the top of its parent chain.
const BILLING_ROOT_SQL = `
with recursive chain (id, parent_id, depth) as (
  select id, parent_id, 0 from organizations where id = $1
  union all
  select o.id, o.parent_id, c.depth + 1 from organizations o join chain c on o.id = c.parent_id where c.depth < 32
)
select id as root_id from chain where parent_id is null limit 1`;

// Active sessions (forwards and temporary router access) of every organization under (and
// including) billing root `$1`, and whether the root has a payment method on file.
const TREE_SESSIONS_SQL = `
with recursive tree (id, depth) as (
  select id, 0 from organizations where id = $1
  union all
  select o.id, t.depth + 1 from organizations o join tree t on o.parent_id = t.id where t.depth < 32
)
select count(*)::int as n, min(x.expires_at) as frees_at,
  exists (select 1 from billing_accounts a join billing_payment_methods pm on pm.account_id = a.id
          where a.organization_id = $1) as has_card
from (
  select f.expires_at from forwards f join routers r on r.id = f.router_id
  where r.organization_id in (select id from tree) and f.status = 'active' and f.expires_at > $2
  union all
  select a.expires_at from router_access a join routers r on r.id = a.router_id
  where r.organization_id in (select id from tree) and a.status = 'active' and a.expires_at > $2
) x`;

const ROUTER_SESSIONS_SQL = `
select count(*)::int as n, min(expires_at) as frees_at from (
  select expires_at from forwards where router_id = $1 and status = 'active' and expires_at > $2
  union all
  select expires_at from router_access where router_id = $1 and status = 'active' and expires_at > $2) x`;

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
    const [router] = await this.#query<Row>(
      `select id, organization_id, tunnel_ip from routers where id = $1 and team_id = $2${options.forUpdate ? " for update" : ""}`,
      [routerId, teamId],
    );
    if (!router) return null;
    return {
      id: String(router.id),
      organizationId: String(router.organization_id),
      tunnelIp: router.tunnel_ip === null || router.tunnel_ip === undefined ? null : String(router.tunnel_ip),
    };
  }

  async activeOnRouter(routerId: string, now: Date): Promise<ActiveSessions> {
    const [row] = await this.#query<Row>(ROUTER_SESSIONS_SQL, [routerId, now]);
    return { count: toNumber(row?.n ?? 0), freesAt: row?.frees_at ? toDate(row.frees_at) : null };
  }

  /**
   * The billing root of the organization, its row locked until the transaction ends: creates
   * across one tree serialize here (routers are always locked before their billing root: no cycle).
   */
  async lockBillingRoot(organizationId: string): Promise<string> {
    const [root] = await this.#query<Row>(BILLING_ROOT_SQL, [organizationId]);
    const rootId = String(root?.root_id ?? organizationId);
    await this.#query("select id from organizations where id = $1 for update", [rootId]);
    return rootId;
  }

  /** Active sessions of the billing root's whole tree, and whether the root has a payment method on file. */
  async activeInTree(rootId: string, now: Date): Promise<ActiveSessions & { hasCard: boolean }> {
    const [row] = await this.#query<Row>(TREE_SESSIONS_SQL, [rootId, now]);
    return {
      count: toNumber(row?.n ?? 0),
      freesAt: row?.frees_at ? toDate(row.frees_at) : null,
      hasCard: row?.has_card === true,
    };
  }
}
