import {
  type AccessRecord,
  AccessRepository,
  type AuditOrigin,
  claimEntryPointPort,
  type Database,
  insertAuditEntry,
  type JobEngine,
  queryOf,
  SessionCountsRepository,
  queueAccessJob,
  recordAccessClosed,
} from "@fleet/db";
import {
  accessUsername,
  AppError,
  type Clock,
  deriveAccessPassword,
  ROUTER_JOB_KINDS,
  formatIsoUtc,
  type TAccess,
  type TCreateAccessInput,
  type TCreatedAccess,
  type TunnelNetwork,
} from "@fleet/shared";
import { admitSession, sessionQuotas } from "../sessions/session-quotas.ts";

export interface AccessServiceDeps {
  /** Each use case runs in one transaction of its own; the repository gets its `query`. */
  db: Pick<Database, "query" | "transaction">;
  /** Queues the router jobs (`access.apply`, `access.remove`) inside that transaction. */
  jobs: JobEngine;
  clock: Clock;
  entryPoint: { host: string; ports: readonly [number, number] };
  /** Active forwards plus access sessions one router may hold; defaults to {@link FORWARD_LIMITS.activePerRouter}. */
  maxActivePerRouter?: number;
  /** FORWARDS_PER_ORG: forwards and access sessions together. */
  maxActivePerOrg: number;
  /** `TRIAL_FORWARDS`: the billing root's quota while it has no payment method on file. */
  trialForwards?: number;
  tunnelNetwork?: TunnelNetwork;
  /** ACCESS_PASSWORD_KEY: the temporary users' passwords are derived from it, never stored. */
  passwordKey: string;
}

// How often one create tries another port after losing one to a concurrent create.
const PORT_ATTEMPTS = 5;

/** The admission refusals' words for an access session (docs/api.md "Temporary router access"). */
const SESSION_MESSAGES = {
  noTunnel:
    "This router has no assigned management tunnel address (tunnel_ip) inside the tunnel network, so it cannot be reached.",
  routerCap: (max: number) =>
    `This router already has ${max} active forwards and access sessions, the most allowed at once. Revoke one or wait for one to expire.`,
  trialCap: (limit: number) =>
    `Without a payment method on file, the organizations of one billing account may hold ${limit} active forwards and access sessions at once, and they do. Save a card with POST /v1/account/payment-methods, revoke one, or wait for one to expire.`,
  orgCap: (limit: number) =>
    `The organizations of this billing account already hold ${limit} active forwards and access sessions, the most allowed at once. Revoke one or wait for one to expire.`,
};

const routerNotFound = () => new AppError("not_found", "Router not found.");
const accessNotFound = () => new AppError("not_found", "Router access not found.");
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

  /**
   * One transaction: the router row is locked so the per-router cap (forwards and sessions together)
   * holds under concurrent creates (the billing root's row is locked by the quota check), the port
   * is claimed from the entry point's range shared with forwards, and the session, its
   * `access.apply` job and its `router.access.created` entry commit together.
   */
  async create(teamId: string, input: TCreateAccessInput, origin: AuditOrigin): Promise<TCreatedAccess["data"]> {
    const now = this.#deps.clock.now();
    const { host: entryPoint, ports } = this.#deps.entryPoint;
    const created = await this.#deps.db.transaction(async (query): Promise<AccessRecord | AppError> => {
      const router = await admitSession(
        query,
        { teamId, routerId: input.router_id, now },
        { tunnelNetwork: this.#deps.tunnelNetwork, quotas: sessionQuotas(this.#deps), messages: SESSION_MESSAGES },
      );
      if (router instanceof AppError) return router;
      const sessions = new AccessRepository(query);
      const access = await claimEntryPointPort(query, {
        entryPoint,
        ports,
        attempts: PORT_ATTEMPTS,
        insert: (port) => {
          const id = crypto.randomUUID();
          return sessions.insertActive({
            id,
            routerId: router.id,
            entryPoint,
            port,
            service: input.service,
            level: input.level,
            username: accessUsername(id),
            allowOnlyCidr: input.allow_from,
            expiresAt: new Date(now.getTime() + input.expire_after_minutes * 60_000),
            createdAt: now,
            createdBy: origin.actor,
          });
        },
      });
      if (!access) {
        return new AppError("capacity_exhausted", "Every entry-point port is in use. Try again after one frees.");
      }
      await queueAccessJob(this.#deps.jobs, ROUTER_JOB_KINDS.accessApply, access, query);
      await insertAuditEntry(query, {
        organizationId: router.organizationId,
        occurredAt: now,
        action: "router.access.created",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "router_access", id: access.id },
        routerId: access.routerId,
        details: {
          service: access.service,
          level: access.level,
          username: access.username,
          entry_point: access.entryPoint,
          port: access.port,
          allow_from: access.allowOnlyCidr,
          expires_at: access.expiresAt.toISOString(),
        },
      });
      return access;
    });
    if (created instanceof AppError) throw created;
    return { ...toAccess(created, now), password: deriveAccessPassword(this.#deps.passwordKey, created.id) };
  }

  async list(teamId: string, routerId: string): Promise<TAccess[]> {
    const sessions = await this.#inTeam(teamId, routerId);
    const now = this.#deps.clock.now();
    return (await sessions.listActive(routerId, now)).map((a) => toAccess(a, now));
  }

  async get(teamId: string, routerId: string, id: string): Promise<TAccess> {
    const sessions = await this.#inTeam(teamId, routerId);
    const access = await sessions.get(routerId, id);
    if (!access) throw accessNotFound();
    return toAccess(access, this.#deps.clock.now());
  }

  /**
   * Revokes an active session (or marks it expired when its time passed unswept) with its removal
   * job and audit entry; one already closed answers the same (idempotent).
   */
  async revoke(teamId: string, routerId: string, id: string, origin: AuditOrigin): Promise<void> {
    const sessions = await this.#inTeam(teamId, routerId);
    const now = this.#deps.clock.now();
    const closed = await this.#deps.db.transaction(async (query) => {
      const access = await new AccessRepository(query).closeActive(routerId, id, now);
      if (access) await recordAccessClosed(query, this.#deps.jobs, [access], origin);
      return access;
    });
    if (closed) return;
    if (!(await sessions.get(routerId, id))) throw accessNotFound();
  }

  /** The sessions of the router, once the router is known to be in the team (else 404). */
  async #inTeam(teamId: string, routerId: string): Promise<AccessRepository> {
    const query = queryOf(this.#deps.db);
    if (!(await new SessionCountsRepository(query).router(routerId, teamId))) throw routerNotFound();
    return new AccessRepository(query);
  }
}
