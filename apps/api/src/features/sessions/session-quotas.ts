import { type Query, type SessionRouter, SessionCountsRepository } from "@fleet/db";
import { AppError, FORWARD_LIMITS, type TunnelNetwork, tunnelAddressProblem } from "@fleet/shared";

/**
 * `Retry-After` of a full quota: whole seconds until the earliest counted session expires (a slot
 * is certain to free then; a revoke may free one sooner), at least 1 and at most an hour, so a
 * client holding day-long sessions is not told to wait a day when revokes are the usual way out.
 */
const QUOTA_RETRY_AFTER_MAX_SECONDS = 3_600;

const retryAfterSeconds = (freesAt: Date | null, now: Date): number =>
  freesAt === null
    ? QUOTA_RETRY_AFTER_MAX_SECONDS
    : Math.min(QUOTA_RETRY_AFTER_MAX_SECONDS, Math.max(1, Math.ceil((freesAt.getTime() - now.getTime()) / 1000)));

/** The limits of sessions (forwards and temporary router access counted together). */
export interface SessionQuotas {
  /** Active forwards plus access sessions one router may hold (20). */
  maxActivePerRouter: number;
  /** `FORWARDS_PER_ORG`: active forwards plus access sessions of a billing root's whole tree. */
  maxActivePerOrg: number;
  /** `TRIAL_FORWARDS`: the same while the billing root has no payment method on file. */
  trialForwards?: number;
}

/** The quotas from a service's configuration (the per-router cap defaults to the contract's 20). */
export const sessionQuotas = (config: {
  maxActivePerRouter?: number | undefined;
  maxActivePerOrg: number;
  trialForwards?: number | undefined;
}): SessionQuotas => ({
  maxActivePerRouter: config.maxActivePerRouter ?? FORWARD_LIMITS.activePerRouter,
  maxActivePerOrg: config.maxActivePerOrg,
  ...(config.trialForwards === undefined ? {} : { trialForwards: config.trialForwards }),
});

/** A quota is full; `freesAt` is when the earliest of the sessions counted against it expires. */
export type QuotaRefusal =
  | { reason: "router_cap"; limit: number; freesAt: Date | null }
  /** The billing root's quota; `trial`: the smaller one of a root without a payment method. */
  | { reason: "org_cap"; limit: number; freesAt: Date | null; trial: boolean };

/**
 * The one home of the session quotas (docs/api.md "Tunnel agent and entry point"): per router, then
 * per billing root over its whole tree. Call inside the creating transaction with the router row
 * already locked; the billing root's row is locked on the way. Null when there is room.
 */
export const checkSessionQuotas = async (
  counts: SessionCountsRepository,
  router: { id: string; organizationId: string },
  quotas: SessionQuotas,
  now: Date,
): Promise<QuotaRefusal | null> => {
  const onRouter = await counts.activeOnRouter(router.id, now);
  if (onRouter.count >= quotas.maxActivePerRouter) {
    return { reason: "router_cap", limit: quotas.maxActivePerRouter, freesAt: onRouter.freesAt };
  }
  const tree = await counts.activeInTree(await counts.lockBillingRoot(router.organizationId), now);
  const trial = !tree.hasCard && quotas.trialForwards !== undefined && quotas.trialForwards < quotas.maxActivePerOrg;
  const limit = trial ? (quotas.trialForwards ?? 0) : quotas.maxActivePerOrg;
  return tree.count >= limit ? { reason: "org_cap", limit, freesAt: tree.freesAt, trial } : null;
};

/**
 * The contract's 429 for a full quota (`rate_limited` with `limit`, `trial` and
 * `retry_after_seconds`); `messages` words it for the kind of session being created.
 */
export const quotaError = (
  refusal: QuotaRefusal,
  now: Date,
  messages: {
    routerCap: (limit: number) => string;
    trialCap: (limit: number) => string;
    orgCap: (limit: number) => string;
  },
): AppError => {
  const retryAfter = retryAfterSeconds(refusal.freesAt, now);
  if (refusal.reason === "router_cap") {
    return new AppError("rate_limited", messages.routerCap(refusal.limit), {
      extra: { limit: refusal.limit, retry_after_seconds: retryAfter },
      retryAfterSeconds: retryAfter,
    });
  }
  const { limit, trial } = refusal;
  return new AppError("rate_limited", trial ? messages.trialCap(limit) : messages.orgCap(limit), {
    extra: { limit, trial, retry_after_seconds: retryAfter },
    retryAfterSeconds: retryAfter,
  });
};

/**
 * The admission of a new session (forward or temporary access), in the creating transaction: the
 * router in the team, locked (else 404), a tunnel address inside the network (else 409), room in
 * the quotas (else 429). The router, or the error the service answers with.
 */
export const admitSession = async (
  query: Query,
  request: { teamId: string; routerId: string; now: Date },
  rules: {
    tunnelNetwork: TunnelNetwork | undefined;
    quotas: SessionQuotas;
    messages: Parameters<typeof quotaError>[2] & { noTunnel: string };
  },
): Promise<SessionRouter | AppError> => {
  const counts = new SessionCountsRepository(query);
  const router = await counts.router(request.routerId, request.teamId, { forUpdate: true });
  if (!router) return new AppError("not_found", "Router not found.");
  if (tunnelAddressProblem(rules.tunnelNetwork, router.tunnelIp))
    return new AppError("conflict", rules.messages.noTunnel);
  const refusal = await checkSessionQuotas(counts, router, rules.quotas, request.now);
  return refusal ? quotaError(refusal, request.now, rules.messages) : router;
};
