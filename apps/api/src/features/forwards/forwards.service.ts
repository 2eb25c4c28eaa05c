import {
  type AuditOrigin,
  claimEntryPointPort,
  type Database,
  type ForwardRecord,
  ForwardsRepository,
  insertAuditEntry,
  type JobEngine,
  queryOf,
  SessionCountsRepository,
  queueForwardJob,
  recordForwardsClosed,
  SYSTEM_ORIGIN,
} from "@fleet/db";
import {
  AppError,
  type Clock,
  ROUTER_JOB_KINDS,
  formatIsoUtc,
  refuseLoopbackAllowFrom,
  type TCreateForwardInput,
  type TForward,
  type TunnelNetwork,
} from "@fleet/shared";
import { admitSession, sessionQuotas } from "../sessions/session-quotas.ts";
import { toForwardResponse } from "./forwards.mapper.ts";

export interface ForwardsServiceDeps {
  /** Each use case runs in one transaction of its own; repositories get its `query`. */
  db: Pick<Database, "query" | "transaction">;
  /** Queues the router jobs (`forward.apply`, `forward.remove`) inside that transaction. */
  jobs: JobEngine;
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

// How often one create tries another port after losing one to a concurrent create.
const PORT_ATTEMPTS = 25;

/** The admission refusals' words for a forward (docs/api.md "Tunnel agent and entry point"). */
const SESSION_MESSAGES = {
  noTunnel:
    "This router has no assigned management tunnel address (tunnel_ip) inside the tunnel network, so nothing can be forwarded through it. An operator must assign one.",
  routerCap: (max: number) =>
    `This router already has ${max} active transient forwards, the most allowed at once. Delete one or wait for one to expire.`,
  trialCap: (limit: number) =>
    `Without a payment method on file, the organizations of one billing account may hold ${limit} active transient forwards (and router access sessions) at once, and they do. Save a card with POST /v1/account/payment-methods, delete one, or wait for one to expire.`,
  orgCap: (limit: number) =>
    `The organizations of this billing account already hold ${limit} active transient forwards, the most allowed at once. Delete one or wait for one to expire.`,
};

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
    const forwards = await this.#inTeam(teamId, routerId);
    const now = this.#deps.clock.now();
    const rows = await forwards.listActive(routerId, now);
    return rows.map((row) => toForwardResponse(row, now));
  }

  async get(teamId: string, routerId: string, id: string): Promise<TForward> {
    const forwards = await this.#inTeam(teamId, routerId);
    const now = this.#deps.clock.now();
    const forward = await forwards.get(routerId, id);
    if (!forward) throw forwardNotFound();
    return toForwardResponse(forward, now);
  }

  /**
   * One transaction: the router row is locked so the per-router cap holds under concurrent creates
   * (the billing root's row is locked by the quota check), the port is claimed from the entry point's
   * range, and the forward, its `forward.apply` job and its `forward.created` entry commit together.
   */
  async create(teamId: string, input: TCreateForwardInput, origin: AuditOrigin): Promise<TForward> {
    if (!this.#deps.loopbackSources) {
      const source = refuseLoopbackAllowFrom(input.allow_from);
      if (!source.ok) {
        throw new AppError("validation_failed", `The given data was invalid: allow_from ${source.message}.`, {
          fields: { allow_from: [source.message] },
        });
      }
    }
    const now = this.#deps.clock.now();
    const { host: entryPoint, ports } = this.#deps.entryPoint;
    const created = await this.#deps.db.transaction(async (query): Promise<ForwardRecord | AppError> => {
      const router = await admitSession(
        query,
        { teamId, routerId: input.router_id, now },
        { tunnelNetwork: this.#deps.tunnelNetwork, quotas: sessionQuotas(this.#deps), messages: SESSION_MESSAGES },
      );
      if (router instanceof AppError) return router;
      const forwards = new ForwardsRepository(query);
      const forward = await claimEntryPointPort(query, {
        entryPoint,
        ports,
        attempts: PORT_ATTEMPTS,
        insert: (port) =>
          forwards.insertActive({
            id: crypto.randomUUID(),
            routerId: router.id,
            entryPoint,
            port,
            dstAddress: input.dst_address,
            dstPort: input.dst_port,
            allowOnlyCidr: input.allow_from,
            expiresAt: new Date(now.getTime() + input.expire_after_minutes * 60_000),
            createdAt: now,
            createdBy: origin.actor,
          }),
        // Forwards past expiry that no agent has swept yet still hold ports: close them here.
        freeStale: async () => {
          const stale = await forwards.expireDue(now, entryPoint);
          await recordForwardsClosed(query, this.#deps.jobs, stale, SYSTEM_ORIGIN);
          return stale.length > 0;
        },
      });
      if (!forward) return this.#portsExhausted();
      await queueForwardJob(this.#deps.jobs, ROUTER_JOB_KINDS.apply, forward, query);
      await insertAuditEntry(query, {
        organizationId: router.organizationId,
        occurredAt: now,
        action: "forward.created",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "forward", id: forward.id },
        routerId: forward.routerId,
        details: {
          entry_point: forward.entryPoint,
          port: forward.port,
          dst_address: forward.dstAddress,
          dst_port: forward.dstPort,
          allow_from: forward.allowOnlyCidr,
          expires_at: formatIsoUtc(forward.expiresAt),
        },
      });
      return forward;
    });
    if (created instanceof AppError) throw created;
    return toForwardResponse(created, now);
  }

  /**
   * Revokes an active forward (or marks it expired when its time passed unswept) with its removal
   * job and audit entry; a forward that is already closed answers the same (idempotent).
   */
  async delete(teamId: string, routerId: string, id: string, origin: AuditOrigin): Promise<void> {
    const forwards = await this.#inTeam(teamId, routerId);
    const now = this.#deps.clock.now();
    const closed = await this.#deps.db.transaction(async (query) => {
      const forward = await new ForwardsRepository(query).closeActive(routerId, id, now);
      if (forward) await recordForwardsClosed(query, this.#deps.jobs, [forward], origin);
      return forward;
    });
    if (closed) return;
    if (!(await forwards.get(routerId, id))) throw forwardNotFound();
  }

  #portsExhausted(): AppError {
    const [from, to] = this.#deps.entryPoint.ports;
    return new AppError(
      "capacity_exhausted",
      `Every port of entry point ${this.#deps.entryPoint.host} (${from}-${to}) is in use by an active forward. Try again after one expires or is deleted.`,
    );
  }

  /** The forwards of the router, once the router is known to be in the team (else 404). */
  async #inTeam(teamId: string, routerId: string): Promise<ForwardsRepository> {
    const query = queryOf(this.#deps.db);
    if (!(await new SessionCountsRepository(query).router(routerId, teamId))) throw routerNotFound();
    return new ForwardsRepository(query);
  }
}
