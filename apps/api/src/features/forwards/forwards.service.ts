import type { AuditOrigin, ForwardsRepository, RouterTunnel } from "@fleet/db";
import {
  AppError,
  type Clock,
  FORWARD_LIMITS,
  isTunnelHostAddress,
  refuseLoopbackAllowFrom,
  type TCreateForwardInput,
  type TForward,
  type TunnelNetwork,
} from "@fleet/shared";
import { toForwardResponse } from "./forwards.mapper.ts";

export interface ForwardsServiceDeps {
  forwards: ForwardsRepository;
  clock: Clock;
  /** ENTRY_POINT_HOST and ENTRY_POINT_PORTS (docs/operations.md "Configuration"). */
  entryPoint: { host: string; ports: readonly [number, number] };
  /** Active forwards one router may have; defaults to {@link FORWARD_LIMITS.activePerRouter}. */
  maxActivePerRouter?: number;
  /** FORWARDS_PER_ORG: active forwards one billing root may hold (docs/operations.md "Configuration"). */
  maxActivePerOrg: number;
  /** TRIAL_FORWARDS: the same while the billing root has no payment method on file (default 5). */
  trialForwards?: number;
  /**
   * TUNNEL_NETWORK: a router whose address lies outside it (the network was changed) is as
   * unreachable as one without an address: the agent never connects there, so 409.
   */
  tunnelNetwork?: TunnelNetwork;
  /** Development only: `allow_from` may be a loopback range, so a forward can be tried from the same machine. */
  loopbackSources?: boolean;
}

const noTunnel = () =>
  new AppError(
    "conflict",
    "This router has no assigned management tunnel address (tunnel_ip) inside the tunnel network, so nothing can be forwarded through it. An operator must assign one.",
  );

/**
 * `Retry-After` of a full quota: whole seconds until the earliest counted forward expires (a slot
 * is certain to free then; a DELETE may free one sooner), at least 1 and at most an hour, so a
 * client holding day-long forwards is not told to wait a day when deletes are the usual way out.
 */
export const QUOTA_RETRY_AFTER_MAX_SECONDS = 3_600;

const retryAfterSeconds = (freesAt: Date | null, now: Date): number =>
  freesAt === null
    ? QUOTA_RETRY_AFTER_MAX_SECONDS
    : Math.min(QUOTA_RETRY_AFTER_MAX_SECONDS, Math.max(1, Math.ceil((freesAt.getTime() - now.getTime()) / 1000)));

const routerNotFound = () => new AppError("not_found", "Router not found.");
const forwardNotFound = () => new AppError("not_found", "Transient forward not found.");

/**
 * Transient port forwards of the token's team (docs/api.md "Transient port forwarding"). Creating stores
 * the forward and its apply job in one transaction and answers at once; the tunnel agent does the
 * router side (docs/api.md "Tunnel agent and entry point").
 */
export class ForwardsService {
  readonly #deps: ForwardsServiceDeps;
  constructor(deps: ForwardsServiceDeps) {
    this.#deps = deps;
  }

  async list(teamId: string, routerId: string): Promise<TForward[]> {
    await this.#router(teamId, routerId);
    const now = this.#deps.clock.now();
    const rows = await this.#deps.forwards.listActive(routerId, now);
    return rows.map((row) => toForwardResponse(row, now));
  }

  async get(teamId: string, routerId: string, id: string): Promise<TForward> {
    await this.#router(teamId, routerId);
    const now = this.#deps.clock.now();
    const forward = await this.#deps.forwards.get(routerId, id);
    if (!forward) throw forwardNotFound();
    return toForwardResponse(forward, now);
  }

  async create(teamId: string, input: TCreateForwardInput, origin: AuditOrigin): Promise<TForward> {
    if (!this.#deps.loopbackSources) {
      const source = refuseLoopbackAllowFrom(input.allow_from);
      if (!source.ok) {
        throw new AppError("validation_failed", `The given data was invalid: allow_from ${source.message}.`, {
          fields: { allow_from: [source.message] },
        });
      }
    }
    const network = this.#deps.tunnelNetwork;
    if (network) {
      const router = await this.#router(teamId, input.router_id);
      if (router.tunnelIp !== null && !isTunnelHostAddress(network, router.tunnelIp)) throw noTunnel();
    }
    const now = this.#deps.clock.now();
    const max = this.#deps.maxActivePerRouter ?? FORWARD_LIMITS.activePerRouter;
    const result = await this.#deps.forwards.create(
      {
        routerId: input.router_id,
        teamId,
        entryPoint: this.#deps.entryPoint.host,
        ports: this.#deps.entryPoint.ports,
        dstAddress: input.dst_address,
        dstPort: input.dst_port,
        allowOnlyCidr: input.allow_from,
        expiresAt: new Date(now.getTime() + input.expire_after_minutes * 60_000),
        maxActivePerRouter: max,
        maxActivePerOrg: this.#deps.maxActivePerOrg,
        ...(this.#deps.trialForwards === undefined ? {} : { trialForwards: this.#deps.trialForwards }),
        origin,
      },
      now,
    );
    if (result.ok) return toForwardResponse(result.forward, now);
    switch (result.reason) {
      case "router_not_found":
        throw routerNotFound();
      case "no_tunnel_ip":
        throw noTunnel();
      case "router_cap": {
        const retryAfter = retryAfterSeconds(result.freesAt, now);
        throw new AppError(
          "rate_limited",
          `This router already has ${max} active transient forwards, the most allowed at once. Delete one or wait for one to expire.`,
          { extra: { limit: max, retry_after_seconds: retryAfter }, retryAfterSeconds: retryAfter },
        );
      }
      case "org_cap": {
        const { limit, trial } = result;
        const retryAfter = retryAfterSeconds(result.freesAt, now);
        const message = trial
          ? `Without a payment method on file, the organizations of one billing account may hold ${limit} active transient forwards (and router access sessions) at once, and they do. Save a card with POST /v1/account/payment-methods, delete one, or wait for one to expire.`
          : `The organizations of this billing account already hold ${limit} active transient forwards, the most allowed at once. Delete one or wait for one to expire.`;
        throw new AppError("rate_limited", message, {
          extra: { limit, trial, retry_after_seconds: retryAfter },
          retryAfterSeconds: retryAfter,
        });
      }
      case "ports_exhausted": {
        const [from, to] = this.#deps.entryPoint.ports;
        throw new AppError(
          "capacity_exhausted",
          `Every port of entry point ${this.#deps.entryPoint.host} (${from}-${to}) is in use by an active forward. Try again after one expires or is deleted.`,
        );
      }
    }
  }

  /** Revokes an active forward; a forward that is already closed answers the same (idempotent). */
  async delete(teamId: string, routerId: string, id: string, origin: AuditOrigin): Promise<void> {
    await this.#router(teamId, routerId);
    const closed = await this.#deps.forwards.close(routerId, id, this.#deps.clock.now(), origin);
    if (closed) return;
    if (!(await this.#deps.forwards.get(routerId, id))) throw forwardNotFound();
  }

  async #router(teamId: string, routerId: string): Promise<RouterTunnel> {
    const router = await this.#deps.forwards.findRouterInTeam(routerId, teamId);
    if (!router) throw routerNotFound();
    return router;
  }
}
