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

export interface SessionQuotas {
  /** Active forwards plus access sessions one router may hold (20). */
  maxActivePerRouter: number;
  /** `FORWARDS_PER_ORG`: active forwards plus access sessions of a billing root's whole tree. */
  maxActivePerOrg: number;
  /** `TRIAL_FORWARDS`: the same while the billing root has no payment method on file. */
  trialForwards?: number;
}

/** A quota is full; `freesAt` is when the earliest of the sessions counted against it expires. */
export type QuotaRefusal =
  | { ok: false; reason: "router_cap"; freesAt: Date | null }
  /** The billing root's quota; `trial`: the smaller one of a root without a payment method. */
  | { ok: false; reason: "org_cap"; freesAt: Date | null; limit: number; trial: boolean };

/**
 * The one home of the session quotas (docs/api.md "Tunnel agent and entry point"): forwards and
 * temporary router access count together, per router and per billing root over its whole tree.
 * Call inside the creating transaction with the router row already locked: the billing root's row
 * is locked here, which serializes creates across the tree (routers are always locked before their
 * billing root: no lock cycle). Answers null when there is room.
 */
export const checkSessionQuotas = async (
  query: Query,
  router: { id: string; organizationId: string },
  quotas: SessionQuotas,
  now: Date,
): Promise<QuotaRefusal | null> => {
  const [count] = await query<Row>(ROUTER_SESSIONS_SQL, [router.id, now]);
  if (toNumber(count?.n ?? 0) >= quotas.maxActivePerRouter) {
    return { ok: false, reason: "router_cap", freesAt: count?.frees_at ? toDate(count.frees_at) : null };
  }
  const [root] = await query<Row>(BILLING_ROOT_SQL, [router.organizationId]);
  const rootId = String(root?.root_id ?? router.organizationId);
  await query(`select id from organizations where id = $1 for update`, [rootId]);
  const [tree] = await query<Row>(TREE_SESSIONS_SQL, [rootId, now]);
  const trial =
    tree?.has_card !== true && quotas.trialForwards !== undefined && quotas.trialForwards < quotas.maxActivePerOrg;
  const limit = trial ? (quotas.trialForwards ?? 0) : quotas.maxActivePerOrg;
  if (toNumber(tree?.n ?? 0) >= limit) {
    return { ok: false, reason: "org_cap", freesAt: tree?.frees_at ? toDate(tree.frees_at) : null, limit, trial };
  }
  return null;
};

/** The router a session (forward or access) is created on, locked for the creating transaction. */
export interface SessionRouter {
  id: string;
  organizationId: string;
  tunnelIp: string | null;
}

/**
 * The router if it is in the team (null for unknown, foreign and malformed ids). `forUpdate` locks
 * its row for the creating transaction, so the per-router quota holds under concurrent creates.
 */
export const findSessionRouter = async (
  query: Query,
  routerId: string,
  teamId: string,
  options: { forUpdate?: boolean } = {},
): Promise<SessionRouter | null> => {
  if (!isUuid(routerId) || !isUuid(teamId)) return null;
  const [router] = await query<Row>(
    `select id, organization_id, tunnel_ip from routers where id = $1 and team_id = $2${options.forUpdate ? " for update" : ""}`,
    [routerId, teamId],
  );
  if (!router) return null;
  return {
    id: String(router.id),
    organizationId: String(router.organization_id),
    tunnelIp: router.tunnel_ip === null || router.tunnel_ip === undefined ? null : String(router.tunnel_ip),
  };
};
