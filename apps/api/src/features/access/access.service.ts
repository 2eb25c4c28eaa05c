import type { AccessRecord, AccessRepository, AuditOrigin, RouterRecord } from "@fleet/db";
import {
  accessUsername,
  AppError,
  type Clock,
  deriveAccessPassword,
  FORWARD_LIMITS,
  formatIsoUtc,
  type TAccess,
  type TCreateAccessInput,
  type TCreatedAccess,
  type TunnelNetwork,
  tunnelAddressProblem,
} from "@fleet/shared";

export interface AccessServiceDeps {
  access: Pick<AccessRepository, "create" | "listActive" | "get" | "close">;
  routers: { findInTeam(teamId: string, routerId: string): Promise<RouterRecord | null> };
  clock: Clock;
  entryPoint: { host: string; ports: readonly [number, number] };
  /** FORWARDS_PER_ORG: forwards and access sessions together. */
  maxActivePerOrg: number;
  /** `TRIAL_FORWARDS`: the billing root's quota while it has no payment method on file. */
  trialForwards?: number;
  tunnelNetwork?: TunnelNetwork;
  /** ACCESS_PASSWORD_KEY: the temporary users' passwords are derived from it, never stored. */
  passwordKey: string;
}

const QUOTA_RETRY_AFTER_MAX_SECONDS = 3_600;

const retryAfterSeconds = (freesAt: Date | null, now: Date): number =>
  freesAt === null
    ? QUOTA_RETRY_AFTER_MAX_SECONDS
    : Math.min(QUOTA_RETRY_AFTER_MAX_SECONDS, Math.max(1, Math.ceil((freesAt.getTime() - now.getTime()) / 1000)));

const routerNotFound = () => new AppError("not_found", "Router not found.");
const accessNotFound = () => new AppError("not_found", "Router access not found.");
const noTunnel = () =>
  new AppError(
    "conflict",
    "This router has no assigned management tunnel address (tunnel_ip) inside the tunnel network, so it cannot be reached.",
  );

const toAccess = (a: AccessRecord, now: Date): TAccess => ({
  id: a.id,
  service: a.service,
  level: a.level,
  username: a.username,
  entry_point: a.entryPoint,
  port: a.port,
  allow_only_cidr: a.allowOnlyCidr,
  expires_at: formatIsoUtc(a.expiresAt),
  expired: a.status === "expired" || (a.status === "active" && a.expiresAt <= now),
  revoked_early: a.status === "revoked",
  created_at: formatIsoUtc(a.createdAt),
});

/** Temporary access to a router itself (docs/api.md "Temporary router access"). */
export class AccessService {
  readonly #deps: AccessServiceDeps;
  constructor(deps: AccessServiceDeps) {
    this.#deps = deps;
  }

  async #router(teamId: string, routerId: string): Promise<RouterRecord> {
    const router = await this.#deps.routers.findInTeam(teamId, routerId);
    if (!router) throw routerNotFound();
    return router;
  }

  async create(teamId: string, input: TCreateAccessInput, origin: AuditOrigin): Promise<TCreatedAccess> {
    const router = await this.#router(teamId, input.router_id);
    if (tunnelAddressProblem(this.#deps.tunnelNetwork, router.tunnelIp)) throw noTunnel();
    const now = this.#deps.clock.now();
    const max = FORWARD_LIMITS.activePerRouter;
    const result = await this.#deps.access.create(
      {
        routerId: router.id,
        teamId,
        entryPoint: this.#deps.entryPoint.host,
        ports: this.#deps.entryPoint.ports,
        service: input.service,
        level: input.level,
        allowOnlyCidr: input.allow_from,
        expiresAt: new Date(now.getTime() + input.expire_after_minutes * 60_000),
        maxActivePerRouter: max,
        maxActivePerOrg: this.#deps.maxActivePerOrg,
        ...(this.#deps.trialForwards === undefined ? {} : { trialForwards: this.#deps.trialForwards }),
        origin,
        username: accessUsername,
      },
      now,
    );
    if (result.ok) {
      return {
        status: "success",
        data: {
          ...toAccess(result.access, now),
          password: deriveAccessPassword(this.#deps.passwordKey, result.access.id),
        },
      };
    }
    switch (result.reason) {
      case "router_not_found":
        throw routerNotFound();
      case "no_tunnel_ip":
        throw noTunnel();
      case "ports_exhausted":
        throw new AppError("capacity_exhausted", "Every entry-point port is in use. Try again after one frees.");
      case "router_cap": {
        const retryAfter = retryAfterSeconds(result.freesAt, now);
        throw new AppError(
          "rate_limited",
          `This router already has ${max} active forwards and access sessions, the most allowed at once. Revoke one or wait for one to expire.`,
          { extra: { limit: max, retry_after_seconds: retryAfter }, retryAfterSeconds: retryAfter },
        );
      }
      case "org_cap": {
        const { limit, trial } = result;
        const retryAfter = retryAfterSeconds(result.freesAt, now);
        const message = trial
          ? `Without a payment method on file, the organizations of one billing account may hold ${limit} active forwards and access sessions at once, and they do. Save a card with POST /v1/account/payment-methods, revoke one, or wait for one to expire.`
          : `The organizations of this billing account already hold ${limit} active forwards and access sessions, the most allowed at once. Revoke one or wait for one to expire.`;
        throw new AppError("rate_limited", message, {
          extra: { limit, trial, retry_after_seconds: retryAfter },
          retryAfterSeconds: retryAfter,
        });
      }
    }
  }

  async list(teamId: string, routerId: string): Promise<TAccess[]> {
    const router = await this.#router(teamId, routerId);
    const now = this.#deps.clock.now();
    return (await this.#deps.access.listActive(router.id, now)).map((a) => toAccess(a, now));
  }

  async get(teamId: string, routerId: string, id: string): Promise<TAccess> {
    const router = await this.#router(teamId, routerId);
    const access = await this.#deps.access.get(router.id, id);
    if (!access) throw accessNotFound();
    return toAccess(access, this.#deps.clock.now());
  }

  /** Revokes an active session; one already closed answers the same (idempotent). */
  async revoke(teamId: string, routerId: string, id: string, origin: AuditOrigin): Promise<void> {
    const router = await this.#router(teamId, routerId);
    if (await this.#deps.access.close(router.id, id, this.#deps.clock.now(), origin)) return;
    if (!(await this.#deps.access.get(router.id, id))) throw accessNotFound();
  }
}
