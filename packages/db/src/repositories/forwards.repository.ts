import { formatIsoUtc, isUuid } from "@fleet/shared";
import type { Database } from "../database.ts";
import type { JobEngine } from "../jobs/job-engine.ts";
import { queueRouterJob } from "../jobs/router-jobs.ts";
import type { Query } from "../database.ts";
import { type AuditOrigin, insertAuditEntry, SYSTEM_ORIGIN } from "./audit-log.repository.ts";
import { checkSessionQuotas, type QuotaRefusal } from "./session-quotas.ts";
import { toDate, toNumber } from "./sql-values.ts";

export type TForwardStatus = "active" | "expired" | "revoked" | "failed";

export interface ForwardRecord {
  id: string;
  routerId: string;
  entryPoint: string;
  port: number;
  dstAddress: string;
  dstPort: number;
  allowOnlyCidr: string;
  status: TForwardStatus;
  expiresAt: Date;
  createdAt: Date;
  closedAt: Date | null;
  appliedAt: Date | null;
  /** Why the agent gave up (status `failed`), else null. */
  failureReason: string | null;
}

export interface RouterTunnel {
  id: string;
  tunnelIp: string | null;
}

export interface NewForward {
  routerId: string;
  teamId: string;
  entryPoint: string;
  /** Inclusive port range of the entry point (ENTRY_POINT_PORTS). */
  ports: readonly [number, number];
  dstAddress: string;
  dstPort: number;
  allowOnlyCidr: string;
  expiresAt: Date;
  maxActivePerRouter: number;
  /**
   * FORWARDS_PER_ORG: active forwards the router's billing root (the organization that pays, with
   * every organization below it) may hold in all.
   */
  maxActivePerOrg: number;
  /** TRIAL_FORWARDS: the same while the billing root has no payment method on file (default 5). */
  trialForwards?: number;
  /** The creator: kept on the forward and recorded as `forward.created` in the same transaction (default: system). */
  origin?: AuditOrigin;
}

export type CreateForwardResult =
  | { ok: true; forward: ForwardRecord }
  | { ok: false; reason: "router_not_found" | "no_tunnel_ip" | "ports_exhausted" }
  | QuotaRefusal;

/** What the relay needs to serve one forward. */
export interface RelayTarget {
  id: string;
  port: number;
  /** The port on the router to pipe to, when not `port` (temporary access: the router's own service port). */
  targetPort?: number;
  allowOnlyCidr: string;
  tunnelIp: string;
  expiresAt: Date;
}

/** Job kinds written here; the agent's handlers are keyed by the same strings (shared schema). */
const APPLY_JOB = "forward.apply";
const REMOVE_JOB = "forward.remove";

const COLUMNS = `f.id, f.router_id, f.entry_point, f.port, f.dst_address, f.dst_port, f.allow_only_cidr, f.status,
  f.expires_at, f.created_at, f.closed_at, f.applied_at, f.failure_reason`;

// Columns straight off an UPDATE ... RETURNING, without the table alias.
const RETURNING = COLUMNS.replaceAll("f.", "");

type Row = Record<string, unknown>;

const forwardFromRow = (row: Row): ForwardRecord => ({
  id: String(row.id),
  routerId: String(row.router_id),
  entryPoint: String(row.entry_point),
  port: toNumber(row.port),
  dstAddress: String(row.dst_address),
  dstPort: toNumber(row.dst_port),
  allowOnlyCidr: String(row.allow_only_cidr),
  status: String(row.status) as TForwardStatus,
  expiresAt: toDate(row.expires_at),
  createdAt: toDate(row.created_at),
  closedAt: row.closed_at === null || row.closed_at === undefined ? null : toDate(row.closed_at),
  appliedAt: row.applied_at === null || row.applied_at === undefined ? null : toDate(row.applied_at),
  failureReason: row.failure_reason === null || row.failure_reason === undefined ? null : String(row.failure_reason),
});

// Every way a forward closes changes its state AND queues the removal job in one transaction,
// so no crash can leave a closed forward whose rule nobody will remove.

const CANONICAL_IPV4_SQL =
  "^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$";

/** Characters of a failure reason kept (the column's width). */
const FAILURE_REASON_MAX = 500;

// How often one create retries after losing a port to a concurrent create.
const PORT_ATTEMPTS = 25;

/** Transient port forwards (docs/api.md "Transient Port Forward", docs/api.md "Tunnel agent and entry point"). */
export class ForwardsRepository {
  readonly #db: Database;
  readonly #jobs: JobEngine | undefined;
  /** `jobs` queues the router jobs; without it the repository only reads (the relay). */
  constructor(db: Database, jobs?: JobEngine) {
    this.#db = db;
    this.#jobs = jobs;
  }

  #engine(): JobEngine {
    if (!this.#jobs) throw new Error("ForwardsRepository needs the job engine to change forwards");
    return this.#jobs;
  }

  /** Queues the removal of each closed forward inside the transaction that closed it. */
  async #queueRemovals(query: Query, closed: readonly ForwardRecord[]): Promise<void> {
    for (const forward of closed) {
      await queueRouterJob(
        this.#engine(),
        { kind: REMOVE_JOB, forward_id: forward.id, router_id: forward.routerId },
        query,
      );
    }
  }

  /**
   * Every close is audited in the transaction that closes it: `forward.expired` or
   * `forward.revoked` (docs/api.md "Audit log and webhooks").
   */
  async #auditClosed(query: Query, closed: readonly ForwardRecord[], origin: AuditOrigin): Promise<void> {
    if (closed.length === 0) return;
    const orgs = await query<Row>(`select id, organization_id from routers where id = any($1::uuid[])`, [
      [...new Set(closed.map((f) => f.routerId))],
    ]);
    const orgOf = new Map(orgs.map((row) => [String(row.id), String(row.organization_id)]));
    for (const forward of closed) {
      const organizationId = orgOf.get(forward.routerId);
      if (!organizationId) continue;
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: forward.closedAt ?? new Date(),
        action: forward.status === "expired" ? "forward.expired" : "forward.revoked",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "forward", id: forward.id },
        routerId: forward.routerId,
        details: {
          entry_point: forward.entryPoint,
          port: forward.port,
          dst_address: forward.dstAddress,
          dst_port: forward.dstPort,
        },
      });
    }
  }

  /** The router if it is in the team, with its tunnel address; null for unknown or foreign ids. */
  async findRouterInTeam(routerId: string, teamId: string): Promise<RouterTunnel | null> {
    if (!isUuid(routerId) || !isUuid(teamId)) return null;
    const rows = await this.#db.query<Row>(`select id, tunnel_ip from routers where id = $1 and team_id = $2`, [
      routerId,
      teamId,
    ]);
    const row = rows[0];
    return row ? { id: String(row.id), tunnelIp: row.tunnel_ip === null ? null : String(row.tunnel_ip) } : null;
  }

  /**
   * Stores an active forward and its apply job in one transaction. The router row is locked so the
   * per-router cap holds under concurrent creates; the port is taken by an insert that the partial
   * unique index arbitrates (`on conflict do nothing`, then another free port).
   */
  async create(input: NewForward, now: Date): Promise<CreateForwardResult> {
    if (!isUuid(input.routerId) || !isUuid(input.teamId)) return { ok: false, reason: "router_not_found" };
    const engine = this.#engine();
    const origin = input.origin ?? SYSTEM_ORIGIN;
    return this.#db.transaction(async (query): Promise<CreateForwardResult> => {
      const [router] = await query<Row>(
        `select id, organization_id, tunnel_ip from routers where id = $1 and team_id = $2 for update`,
        [input.routerId, input.teamId],
      );
      if (!router) return { ok: false, reason: "router_not_found" };
      if (router.tunnel_ip === null || router.tunnel_ip === undefined || router.tunnel_ip === "") {
        return { ok: false, reason: "no_tunnel_ip" };
      }
      const refusal = await checkSessionQuotas(
        query,
        { id: input.routerId, organizationId: String(router.organization_id) },
        input,
        now,
      );
      if (refusal) return refusal;

      let freedStale = false;
      for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
        const [free] = await query<Row>(
          `select p::int as port from generate_series($1::int, $2::int) as p
           where not exists (select 1 from forwards f where f.entry_point = $3 and f.port = p and f.status = 'active')
             and not exists (select 1 from router_access a where a.entry_point = $3 and a.port = p and a.status = 'active')
           order by random() limit 1`,
          [input.ports[0], input.ports[1], input.entryPoint],
        );
        if (!free) {
          // Forwards past expiry that no agent has swept yet still hold ports: close them here.
          if (freedStale || (await this.#expireDue(query, now, input.entryPoint)).length === 0) {
            return { ok: false, reason: "ports_exhausted" };
          }
          freedStale = true;
          continue;
        }
        const id = crypto.randomUUID();
        const [inserted] = await query<Row>(
          `insert into forwards (id, router_id, entry_point, port, dst_address, dst_port, allow_only_cidr, status, expires_at, created_at,
             created_by_type, created_by_id)
           values ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $9, $10, $11)
           on conflict (entry_point, port) where status = 'active' do nothing
           returning ${RETURNING}`,
          [
            id,
            input.routerId,
            input.entryPoint,
            free.port,
            input.dstAddress,
            input.dstPort,
            input.allowOnlyCidr,
            input.expiresAt,
            now,
            origin.actor.type,
            origin.actor.id,
          ],
        );
        if (!inserted) continue; // a concurrent create took this port first
        await queueRouterJob(engine, { kind: APPLY_JOB, forward_id: id, router_id: input.routerId }, query);
        const forward = forwardFromRow(inserted);
        await insertAuditEntry(query, {
          organizationId: String(router.organization_id),
          occurredAt: now,
          action: "forward.created",
          actor: origin.actor,
          sourceIp: origin.sourceIp,
          target: { type: "forward", id },
          routerId: input.routerId,
          details: {
            entry_point: forward.entryPoint,
            port: forward.port,
            dst_address: forward.dstAddress,
            dst_port: forward.dstPort,
            allow_from: forward.allowOnlyCidr,
            expires_at: formatIsoUtc(forward.expiresAt),
          },
        });
        return { ok: true, forward };
      }
      return { ok: false, reason: "ports_exhausted" };
    });
  }

  /** Active forwards of a router (not closed, not past expiry), oldest first. */
  async listActive(routerId: string, now: Date): Promise<ForwardRecord[]> {
    if (!isUuid(routerId)) return [];
    const rows = await this.#db.query<Row>(
      `select ${COLUMNS} from forwards f where f.router_id = $1 and f.status = 'active' and f.expires_at > $2
       order by f.created_at, f.id`,
      [routerId, now],
    );
    return rows.map(forwardFromRow);
  }

  /** One forward of a router, in any state. */
  async get(routerId: string, id: string): Promise<ForwardRecord | null> {
    if (!isUuid(routerId) || !isUuid(id)) return null;
    const rows = await this.#db.query<Row>(`select ${COLUMNS} from forwards f where f.id = $1 and f.router_id = $2`, [
      id,
      routerId,
    ]);
    return rows[0] ? forwardFromRow(rows[0]) : null;
  }

  /**
   * Closes an active forward early (revoked) or, when its time has passed but no sweep ran yet,
   * as expired; queues its removal. Null when it was not active (already closed: nothing to do).
   */
  async close(
    routerId: string,
    id: string,
    now: Date,
    origin: AuditOrigin = SYSTEM_ORIGIN,
  ): Promise<ForwardRecord | null> {
    if (!isUuid(routerId) || !isUuid(id)) return null;
    return this.#db.transaction(async (query) => {
      const rows = await query<Row>(
        `update forwards f set status = case when f.expires_at <= $1 then 'expired' else 'revoked' end, closed_at = $1
         where f.id = $2 and f.router_id = $3 and f.status = 'active'
         returning ${COLUMNS}`,
        [now, id, routerId],
      );
      const closed = rows.map(forwardFromRow);
      await this.#queueRemovals(query, closed);
      await this.#auditClosed(query, closed, origin);
      return closed[0] ?? null;
    });
  }

  /** The expiry sweep: closes every active forward whose time has come and queues its removal. */
  async expireDue(now: Date): Promise<ForwardRecord[]> {
    return this.#db.transaction((query) => this.#expireDue(query, now));
  }

  async #expireDue(query: Query, now: Date, entryPoint?: string): Promise<ForwardRecord[]> {
    const rows = await query<Row>(
      `with due as (
         select id from forwards
         where status = 'active' and expires_at <= $1 and ($2::text is null or entry_point = $2)
         order by expires_at limit 500
         for update skip locked
       )
       update forwards f set status = 'expired', closed_at = $1 from due where f.id = due.id
       returning ${COLUMNS}`,
      [now, entryPoint ?? null],
    );
    const closed = rows.map(forwardFromRow);
    await this.#queueRemovals(query, closed);
    await this.#auditClosed(query, closed, SYSTEM_ORIGIN);
    return closed;
  }

  /** The earliest `expires_at` among active forwards (the expiry timer sleeps until then). */
  async nextExpiry(): Promise<Date | null> {
    const rows = await this.#db.query<Row>(`select min(expires_at) as t from forwards where status = 'active'`);
    const t = rows[0]?.t;
    return t === null || t === undefined ? null : toDate(t);
  }

  /** A forward with its router's current tunnel address, for the agent's job handlers. */
  async findForAgent(id: string): Promise<{ forward: ForwardRecord; tunnelIp: string | null } | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#db.query<Row>(
      `select ${COLUMNS}, r.tunnel_ip from forwards f join routers r on r.id = f.router_id where f.id = $1`,
      [id],
    );
    const row = rows[0];
    if (!row) return null;
    return { forward: forwardFromRow(row), tunnelIp: row.tunnel_ip === null ? null : String(row.tunnel_ip) };
  }

  async markApplied(id: string, now: Date): Promise<void> {
    await this.#db.query(`update forwards set applied_at = $1 where id = $2`, [now, id]);
  }

  /**
   * The agent gave up applying an active forward (docs/api.md "Transient Port Forward" `state`):
   * it becomes `failed` with the reason (its port and quota slot are free again) and
   * `forward.failed` is audited (and sent to webhooks) in the same transaction. Answers the
   * forward, or null when it was no longer active (closed meanwhile: nothing changes).
   */
  async markFailed(id: string, reason: string, now: Date): Promise<ForwardRecord | null> {
    if (!isUuid(id)) return null;
    return this.#db.transaction(async (query) => {
      const rows = await query<Row>(
        `update forwards set status = 'failed', failure_reason = $1, closed_at = $2
         where id = $3 and status = 'active' returning ${RETURNING}`,
        [reason.slice(0, FAILURE_REASON_MAX), now, id],
      );
      const failed = rows[0] ? forwardFromRow(rows[0]) : null;
      if (!failed) return null;
      const [router] = await query<Row>(`select organization_id from routers where id = $1`, [failed.routerId]);
      if (router) {
        await insertAuditEntry(query, {
          organizationId: String(router.organization_id),
          occurredAt: now,
          action: "forward.failed",
          actor: SYSTEM_ORIGIN.actor,
          sourceIp: null,
          target: { type: "forward", id: failed.id },
          routerId: failed.routerId,
          details: {
            entry_point: failed.entryPoint,
            port: failed.port,
            dst_address: failed.dstAddress,
            dst_port: failed.dstPort,
            failure_reason: failed.failureReason,
          },
        });
      }
      return failed;
    });
  }

  /**
   * Routers the agent cannot reach: no assigned tunnel address (migration 008 left them without
   * one) or one outside `networkCidr` (TUNNEL_NETWORK changed). Their forwards answer 409.
   */
  async routersWithoutReachableTunnel(
    networkCidr: string,
    limit: number,
  ): Promise<{ count: number; routers: Array<{ id: string; tunnelIp: string | null }> }> {
    // CASE keeps the inet cast away from text that is not a canonical address.
    const where = `r.tunnel_ip is null or case when r.tunnel_ip ~ '${CANONICAL_IPV4_SQL}'
      then not (r.tunnel_ip::inet << $1::inet) else true end`;
    const rows = await this.#db.query<Row>(
      `select r.id, r.tunnel_ip, count(*) over ()::int as total from routers r where ${where}
       order by r.created_at, r.id limit $2::int`,
      [networkCidr, limit],
    );
    return {
      count: toNumber(rows[0]?.total ?? 0),
      routers: rows.map((row) => ({
        id: String(row.id),
        tunnelIp: row.tunnel_ip === null || row.tunnel_ip === undefined ? null : String(row.tunnel_ip),
      })),
    };
  }

  /** The router's assigned tunnel address, or null when the router is gone or has none. */
  async routerTunnelIp(routerId: string): Promise<string | null> {
    if (!isUuid(routerId)) return null;
    const rows = await this.#db.query<Row>(`select tunnel_ip from routers where id = $1`, [routerId]);
    const ip = rows[0]?.tunnel_ip;
    return ip === null || ip === undefined ? null : String(ip);
  }

  /** Forwards of one router that should have a rule right now. */
  async activeForRouter(routerId: string, now: Date): Promise<ForwardRecord[]> {
    return this.listActive(routerId, now);
  }

  /**
   * Active forwards of every router now reachable at `tunnelIp`. Usually one router; after a tunnel
   * address moved between routers, a rule on that device may belong to either row.
   */
  async activeAtTunnel(tunnelIp: string, now: Date): Promise<ForwardRecord[]> {
    const rows = await this.#db.query<Row>(
      `select ${COLUMNS} from forwards f join routers r on r.id = f.router_id
       where r.tunnel_ip = $1 and f.status = 'active' and f.expires_at > $2
       order by f.created_at, f.id`,
      [tunnelIp, now],
    );
    return rows.map(forwardFromRow);
  }

  /**
   * Every forward the relay at `entryPoint` should serve now: active and applied (state `active`).
   * A pending forward gets no listener: until the agent has put its rule on the router (after
   * checking the device's host key), a connection to `tunnel_ip:port` could reach a stale rule of
   * another device at that address (docs/routeros.md "Offboarding").
   */
  async relayTargets(entryPoint: string, now: Date): Promise<RelayTarget[]> {
    const rows = await this.#db.query<Row>(
      `select f.id, f.port, f.allow_only_cidr, f.expires_at, r.tunnel_ip
       from forwards f join routers r on r.id = f.router_id
       where f.entry_point = $1 and f.status = 'active' and f.applied_at is not null and f.expires_at > $2
         and r.tunnel_ip is not null`,
      [entryPoint, now],
    );
    return rows.map((row) => ({
      id: String(row.id),
      port: toNumber(row.port),
      allowOnlyCidr: String(row.allow_only_cidr),
      tunnelIp: String(row.tunnel_ip),
      expiresAt: toDate(row.expires_at),
    }));
  }

  /**
   * Routers whose tagged rules reconciliation should check: any with an active forward, or one
   * closed since `since` (a removal may have failed or been lost). Only routers with a pulse: an
   * offline router cannot be reached, and a job for it would only fail its attempts and land in
   * the dead-letter queue; the first reconciliation after it comes back repairs it.
   */
  async routersToReconcile(since: Date): Promise<string[]> {
    const rows = await this.#db.query<Row>(
      `select distinct f.router_id from forwards f join routers r on r.id = f.router_id
         join router_liveness l on l.router_id = r.id
       where r.tunnel_ip is not null and l.has_pulse and (f.status = 'active' or f.closed_at >= $1)`,
      [since],
    );
    return rows.map((row) => String(row.router_id));
  }
}
