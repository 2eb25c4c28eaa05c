import { FORWARD_JOB_KINDS, isUuid, tunnelAddressProblem } from "@fleet/shared";
import type { Database, Query } from "../database.ts";
import type { JobEngine } from "../jobs/job-engine.ts";
import { queueRouterJob } from "../jobs/router-jobs.ts";
import { type AuditOrigin, insertAuditEntry, SYSTEM_ORIGIN } from "./audit-log.repository.ts";
import type { RelayTarget } from "./forwards.repository.ts";
import { claimEntryPointPort } from "./entry-point-ports.ts";
import { checkSessionQuotas, findSessionRouter, type QuotaRefusal } from "./session-quotas.ts";
import { toDate, toNumber } from "./sql-values.ts";

export type TAccessStatus = "active" | "expired" | "revoked";

export interface AccessRecord {
  id: string;
  routerId: string;
  entryPoint: string;
  port: number;
  service: "winbox" | "ssh" | "webfig";
  level: "read" | "full";
  username: string;
  allowOnlyCidr: string;
  status: TAccessStatus;
  expiresAt: Date;
  createdAt: Date;
  closedAt: Date | null;
  appliedAt: Date | null;
}

export interface NewAccess {
  routerId: string;
  teamId: string;
  entryPoint: string;
  ports: readonly [number, number];
  service: AccessRecord["service"];
  level: AccessRecord["level"];
  allowOnlyCidr: string;
  expiresAt: Date;
  /** Active forwards plus access sessions one router may hold. */
  maxActivePerRouter: number;
  /** FORWARDS_PER_ORG: active forwards plus access sessions of the billing root's tree. */
  maxActivePerOrg: number;
  /** TRIAL_FORWARDS: the same while the billing root has no payment method on file. */
  trialForwards?: number;
  origin?: AuditOrigin;
  /** The user name from the new id (`fleet-tmp-<short id>`). */
  username: (id: string) => string;
}

export type CreateAccessResult =
  | { ok: true; access: AccessRecord }
  | { ok: false; reason: "router_not_found" | "no_tunnel_ip" | "ports_exhausted" }
  | QuotaRefusal;

type Row = Record<string, unknown>;

const COLUMNS = `a.id, a.router_id, a.entry_point, a.port, a.service, a.level, a.username, a.allow_only_cidr, a.status,
  a.expires_at, a.created_at, a.closed_at, a.applied_at`;

const fromRow = (row: Row): AccessRecord => ({
  id: String(row.id),
  routerId: String(row.router_id),
  entryPoint: String(row.entry_point),
  port: toNumber(row.port),
  service: String(row.service) as AccessRecord["service"],
  level: String(row.level) as AccessRecord["level"],
  username: String(row.username),
  allowOnlyCidr: String(row.allow_only_cidr),
  status: String(row.status) as TAccessStatus,
  expiresAt: toDate(row.expires_at),
  createdAt: toDate(row.created_at),
  closedAt: row.closed_at === null || row.closed_at === undefined ? null : toDate(row.closed_at),
  appliedAt: row.applied_at === null || row.applied_at === undefined ? null : toDate(row.applied_at),
});

const APPLY_JOB = FORWARD_JOB_KINDS.accessApply;
const REMOVE_JOB = FORWARD_JOB_KINDS.accessRemove;
const PORT_ATTEMPTS = 5;

/**
 * Temporary router access (docs/api.md "Temporary router access"). Creates count against the same
 * quotas as forwards (forwards and access sessions together) and take a port from the same range,
 * free among both; the router and then the organization row are locked as forward creates lock them.
 */
export class AccessRepository {
  readonly #db: Database;
  readonly #engine: JobEngine;
  constructor(db: Database, engine: JobEngine) {
    this.#db = db;
    this.#engine = engine;
  }

  async create(input: NewAccess, now: Date): Promise<CreateAccessResult> {
    if (!isUuid(input.routerId) || !isUuid(input.teamId)) return { ok: false, reason: "router_not_found" };
    const origin = input.origin ?? SYSTEM_ORIGIN;
    return this.#db.transaction(async (query): Promise<CreateAccessResult> => {
      const router = await findSessionRouter(query, input.routerId, input.teamId, { forUpdate: true });
      if (!router) return { ok: false, reason: "router_not_found" };
      if (tunnelAddressProblem(undefined, router.tunnelIp)) return { ok: false, reason: "no_tunnel_ip" };
      const refusal = await checkSessionQuotas(query, router, input, now);
      if (refusal) return refusal;
      const access = await claimEntryPointPort(query, {
        entryPoint: input.entryPoint,
        ports: input.ports,
        attempts: PORT_ATTEMPTS,
        insert: async (port) => {
          const id = crypto.randomUUID();
          const [inserted] = await query<Row>(
            `insert into router_access as a (id, router_id, entry_point, port, service, level, username, allow_only_cidr, status,
               expires_at, created_at, created_by_type, created_by_id)
             values ($1, $2, $3, $4, $5, $6, $7, $8, 'active', $9, $10, $11, $12)
             on conflict (entry_point, port) where status = 'active' do nothing
             returning ${COLUMNS}`,
            [
              id,
              input.routerId,
              input.entryPoint,
              port,
              input.service,
              input.level,
              input.username(id),
              input.allowOnlyCidr,
              input.expiresAt,
              now,
              origin.actor.type,
              origin.actor.id,
            ],
          );
          return inserted ? fromRow(inserted) : null;
        },
      });
      if (!access) return { ok: false, reason: "ports_exhausted" };
      await queueRouterJob(this.#engine, { kind: APPLY_JOB, access_id: access.id, router_id: input.routerId }, query);
      await insertAuditEntry(query, {
        organizationId: router.organizationId,
        occurredAt: now,
        action: "router.access.created",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "router_access", id: access.id },
        routerId: input.routerId,
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
      return { ok: true, access };
    });
  }

  /** Active sessions of a router (not closed, not past expiry), oldest first. */
  async listActive(routerId: string, now: Date): Promise<AccessRecord[]> {
    if (!isUuid(routerId)) return [];
    const rows = await this.#db.query<Row>(
      `select ${COLUMNS} from router_access a where a.router_id = $1 and a.status = 'active' and a.expires_at > $2
       order by a.created_at, a.id`,
      [routerId, now],
    );
    return rows.map(fromRow);
  }

  async get(routerId: string, id: string): Promise<AccessRecord | null> {
    if (!isUuid(routerId) || !isUuid(id)) return null;
    const [row] = await this.#db.query<Row>(
      `select ${COLUMNS} from router_access a where a.id = $1 and a.router_id = $2`,
      [id, routerId],
    );
    return row ? fromRow(row) : null;
  }

  /** Revokes an active session (or marks it expired when its time passed unswept); queues the removal. */
  async close(
    routerId: string,
    id: string,
    now: Date,
    origin: AuditOrigin = SYSTEM_ORIGIN,
  ): Promise<AccessRecord | null> {
    if (!isUuid(routerId) || !isUuid(id)) return null;
    return this.#db.transaction(async (query) => {
      const rows = await query<Row>(
        `update router_access a set status = case when a.expires_at <= $1 then 'expired' else 'revoked' end, closed_at = $1
         where a.id = $2 and a.router_id = $3 and a.status = 'active' returning ${COLUMNS}`,
        [now, id, routerId],
      );
      const closed = rows.map(fromRow);
      await this.#afterClose(query, closed, origin);
      return closed[0] ?? null;
    });
  }

  /** The expiry sweep: closes every active session whose time has come and queues its removal. */
  async expireDue(now: Date): Promise<AccessRecord[]> {
    return this.#db.transaction(async (query) => {
      const rows = await query<Row>(
        `with due as (
           select id from router_access where status = 'active' and expires_at <= $1
           order by expires_at limit 500 for update skip locked
         )
         update router_access a set status = 'expired', closed_at = $1 from due where a.id = due.id
         returning ${COLUMNS}`,
        [now],
      );
      const closed = rows.map(fromRow);
      await this.#afterClose(query, closed, SYSTEM_ORIGIN);
      return closed;
    });
  }

  async #afterClose(query: Query, closed: AccessRecord[], origin: AuditOrigin): Promise<void> {
    for (const access of closed) {
      await queueRouterJob(this.#engine, { kind: REMOVE_JOB, access_id: access.id, router_id: access.routerId }, query);
      const [router] = await query<Row>("select organization_id from routers where id = $1", [access.routerId]);
      if (!router) continue;
      await insertAuditEntry(query, {
        organizationId: String(router.organization_id),
        occurredAt: access.closedAt ?? access.expiresAt,
        action: access.status === "expired" ? "router.access.expired" : "router.access.revoked",
        actor: access.status === "expired" ? SYSTEM_ORIGIN.actor : origin.actor,
        sourceIp: access.status === "expired" ? null : origin.sourceIp,
        target: { type: "router_access", id: access.id },
        routerId: access.routerId,
        details: { service: access.service, level: access.level, username: access.username },
      });
    }
  }

  /** A session with its router's tunnel address, for the agent's job handlers. */
  async findForAgent(id: string): Promise<{ access: AccessRecord; tunnelIp: string | null } | null> {
    if (!isUuid(id)) return null;
    const [row] = await this.#db.query<Row>(
      `select ${COLUMNS}, r.tunnel_ip from router_access a join routers r on r.id = a.router_id where a.id = $1`,
      [id],
    );
    if (!row) return null;
    return { access: fromRow(row), tunnelIp: row.tunnel_ip === null ? null : String(row.tunnel_ip) };
  }

  async markApplied(id: string, now: Date): Promise<void> {
    await this.#db.query("update router_access set applied_at = $2 where id = $1 and applied_at is null", [id, now]);
  }

  /** Every session the relay at `entryPoint` should serve now, piped to the router's own service port. */
  async relayTargets(
    entryPoint: string,
    now: Date,
    servicePorts: Readonly<Record<AccessRecord["service"], number>>,
  ): Promise<RelayTarget[]> {
    const rows = await this.#db.query<Row>(
      `select a.id, a.port, a.service, a.allow_only_cidr, a.expires_at, r.tunnel_ip
       from router_access a join routers r on r.id = a.router_id
       where a.entry_point = $1 and a.status = 'active' and a.expires_at > $2 and a.applied_at is not null
         and r.tunnel_ip is not null`,
      [entryPoint, now],
    );
    return rows.map((row) => ({
      id: String(row.id),
      port: toNumber(row.port),
      targetPort: servicePorts[String(row.service) as AccessRecord["service"]],
      allowOnlyCidr: String(row.allow_only_cidr),
      tunnelIp: String(row.tunnel_ip),
      expiresAt: toDate(row.expires_at),
    }));
  }
}
