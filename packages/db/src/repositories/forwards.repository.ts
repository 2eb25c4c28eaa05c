import type { SqlEntityManager } from "@mikro-orm/sql";
import type { Database } from "../database.ts";
import { type AuditOrigin, auditFromCte, auditInsertForOrm, SYSTEM_ORIGIN } from "./audit-log.repository.ts";
import { JOB_DEFAULT_MAX_ATTEMPTS } from "./jobs.repository.ts";
import { toDate, toNumber } from "./sql-values.ts";

export type TForwardStatus = "active" | "expired" | "revoked";

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
  /** The creator: kept on the forward and recorded as `forward.created` in the same transaction (default: system). */
  origin?: AuditOrigin;
}

export type CreateForwardResult =
  | { ok: true; forward: ForwardRecord }
  | { ok: false; reason: "router_not_found" | "no_tunnel_ip" | "router_cap" | "ports_exhausted" };

/** What the relay needs to serve one forward. */
export interface RelayTarget {
  id: string;
  port: number;
  allowOnlyCidr: string;
  tunnelIp: string;
  expiresAt: Date;
}

/** Job kinds written here; the agent's handlers are keyed by the same strings (shared schema). */
const APPLY_JOB = "forward.apply";
const REMOVE_JOB = "forward.remove";

const COLUMNS = `f.id, f.router_id, f.entry_point, f.port, f.dst_address, f.dst_port, f.allow_only_cidr, f.status,
  f.expires_at, f.created_at, f.closed_at, f.applied_at`;

// Columns straight off an UPDATE ... RETURNING, without the table alias.
const RETURNING = COLUMNS.replaceAll("f.", "");

type Row = Record<string, unknown>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID; anything else cannot name a row and must not reach a uuid column. */
const isUuid = (value: string): boolean => UUID.test(value);

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
});

// Every way a forward closes is one statement that changes its state AND queues the removal job,
// so no crash can leave a closed forward whose rule nobody will remove.
const queueRemovalFrom = (cte: string) => `
  insert into jobs (id, kind, group_key, dedupe_key, payload, status, attempts, max_attempts, run_at, created_at, updated_at)
  select gen_random_uuid(), '${REMOVE_JOB}', ${cte}.router_id::text, null,
    jsonb_build_object('forward_id', ${cte}.id, 'router_id', ${cte}.router_id), 'pending', 0, ${JOB_DEFAULT_MAX_ATTEMPTS}, ?::timestamptz, ?::timestamptz, ?::timestamptz
  from ${cte}
  returning id`;

const FORWARD_DETAILS = (t: string) =>
  `jsonb_build_object('entry_point', ${t}.entry_point, 'port', ${t}.port, 'dst_address', ${t}.dst_address, 'dst_port', ${t}.dst_port)`;

// Every close is audited in its own statement too: `forward.expired` or `forward.revoked`. Takes
// three parameters (actor type, actor id, source address) at its position in the statement.
const auditClosedFrom = (cte: string) =>
  auditFromCte({
    from: `${cte} join routers ar on ar.id = ${cte}.router_id`,
    organizationId: "ar.organization_id",
    occurredAt: `${cte}.closed_at`,
    action: `case when ${cte}.status = 'expired' then 'forward.expired' else 'forward.revoked' end`,
    actorType: "?::text",
    actorId: "?::text",
    targetType: "'forward'",
    targetId: `${cte}.id::text`,
    routerId: `${cte}.router_id`,
    sourceIp: "?::text",
    details: FORWARD_DETAILS(cte),
  });

// How often one create retries after losing a port to a concurrent create.
const PORT_ATTEMPTS = 25;

/** Transient port forwards (docs/api.md "Transient Port Forward", docs/api.md "Tunnel agent and entry point"). */
export class ForwardsRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** The router if it is in the team, with its tunnel address; null for unknown or foreign ids. */
  async findRouterInTeam(routerId: string, teamId: string): Promise<RouterTunnel | null> {
    if (!isUuid(routerId) || !isUuid(teamId)) return null;
    const rows = await this.#db.query<Row>(`select id, tunnel_ip from routers where id = ? and team_id = ?`, [
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
    const origin = input.origin ?? SYSTEM_ORIGIN;
    return this.#db.em().transactional(async (tx: SqlEntityManager): Promise<CreateForwardResult> => {
      const [router] = await tx.execute<Row[]>(
        `select id, tunnel_ip, organization_id from routers where id = ? and team_id = ? for update`,
        [input.routerId, input.teamId],
      );
      if (!router) return { ok: false, reason: "router_not_found" };
      if (router.tunnel_ip === null || router.tunnel_ip === undefined || router.tunnel_ip === "") {
        return { ok: false, reason: "no_tunnel_ip" };
      }
      const [count] = await tx.execute<Row[]>(
        `select count(*)::int as n from forwards where router_id = ? and status = 'active' and expires_at > ?`,
        [input.routerId, now],
      );
      if (toNumber(count?.n ?? 0) >= input.maxActivePerRouter) return { ok: false, reason: "router_cap" };

      let freedStale = false;
      for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
        const [free] = await tx.execute<Row[]>(
          `select p::int as port from generate_series(?::int, ?::int) as p
           where not exists (select 1 from forwards f where f.entry_point = ? and f.port = p and f.status = 'active')
           order by random() limit 1`,
          [input.ports[0], input.ports[1], input.entryPoint],
        );
        if (!free) {
          // Forwards past expiry that no agent has swept yet still hold ports: close them here.
          if (freedStale || (await this.#expireDue(tx, now, input.entryPoint)).length === 0) {
            return { ok: false, reason: "ports_exhausted" };
          }
          freedStale = true;
          continue;
        }
        const id = crypto.randomUUID();
        const [inserted] = await tx.execute<Row[]>(
          `insert into forwards (id, router_id, entry_point, port, dst_address, dst_port, allow_only_cidr, status, expires_at, created_at,
             created_by_type, created_by_id)
           values (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)
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
        await tx.execute(
          `insert into jobs (id, kind, group_key, dedupe_key, payload, status, attempts, max_attempts, run_at, created_at, updated_at)
           values (?, '${APPLY_JOB}', ?, null, ?::jsonb, 'pending', 0, ${JOB_DEFAULT_MAX_ATTEMPTS}, ?, ?, ?)`,
          [
            crypto.randomUUID(),
            input.routerId,
            JSON.stringify({ forward_id: id, router_id: input.routerId }),
            now,
            now,
            now,
          ],
        );
        const forward = forwardFromRow(inserted);
        await tx.execute(
          ...auditInsertForOrm({
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
              expires_at: forward.expiresAt.toISOString(),
            },
          }),
        );
        return { ok: true, forward };
      }
      return { ok: false, reason: "ports_exhausted" };
    });
  }

  /** Active forwards of a router (not closed, not past expiry), oldest first. */
  async listActive(routerId: string, now: Date): Promise<ForwardRecord[]> {
    if (!isUuid(routerId)) return [];
    const rows = await this.#db.query<Row>(
      `select ${COLUMNS} from forwards f where f.router_id = ? and f.status = 'active' and f.expires_at > ?
       order by f.created_at, f.id`,
      [routerId, now],
    );
    return rows.map(forwardFromRow);
  }

  /** One forward of a router, in any state. */
  async get(routerId: string, id: string): Promise<ForwardRecord | null> {
    if (!isUuid(routerId) || !isUuid(id)) return null;
    const rows = await this.#db.query<Row>(`select ${COLUMNS} from forwards f where f.id = ? and f.router_id = ?`, [
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
    const rows = await this.#db.query<Row>(
      `with target as (
         select id from forwards where id = ? and router_id = ? and status = 'active' for update
       ), closed as (
         update forwards f set status = case when f.expires_at <= ? then 'expired' else 'revoked' end, closed_at = ?
         from target where f.id = target.id
         returning ${COLUMNS}
       ), queued as (${queueRemovalFrom("closed")}
       ), audited as (${auditClosedFrom("closed")})
       select * from closed`,
      [id, routerId, now, now, now, now, now, origin.actor.type, origin.actor.id, origin.sourceIp],
    );
    return rows[0] ? forwardFromRow(rows[0]) : null;
  }

  /** The expiry sweep: closes every active forward whose time has come and queues its removal. */
  async expireDue(now: Date): Promise<ForwardRecord[]> {
    return this.#db.em().transactional((tx: SqlEntityManager) => this.#expireDue(tx, now));
  }

  async #expireDue(tx: SqlEntityManager, now: Date, entryPoint?: string): Promise<ForwardRecord[]> {
    const rows = await tx.execute<Row[]>(
      `with due as (
         select id from forwards
         where status = 'active' and expires_at <= ? ${entryPoint === undefined ? "" : "and entry_point = ?"}
         order by expires_at limit 500
         for update skip locked
       ), closed as (
         update forwards f set status = 'expired', closed_at = ? from due where f.id = due.id
         returning ${COLUMNS}
       ), queued as (${queueRemovalFrom("closed")}
       ), audited as (${auditClosedFrom("closed")})
       select * from closed`,
      [now, ...(entryPoint === undefined ? [] : [entryPoint]), now, now, now, now, "system", null, null],
    );
    return rows.map(forwardFromRow);
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
      `select ${COLUMNS}, r.tunnel_ip from forwards f join routers r on r.id = f.router_id where f.id = ?`,
      [id],
    );
    const row = rows[0];
    if (!row) return null;
    return { forward: forwardFromRow(row), tunnelIp: row.tunnel_ip === null ? null : String(row.tunnel_ip) };
  }

  async markApplied(id: string, now: Date): Promise<void> {
    await this.#db.query(`update forwards set applied_at = ? where id = ?`, [now, id]);
  }

  /** The router's tunnel address, or null when the router is gone or never reported one. */
  async routerTunnelIp(routerId: string): Promise<string | null> {
    if (!isUuid(routerId)) return null;
    const rows = await this.#db.query<Row>(`select tunnel_ip from routers where id = ?`, [routerId]);
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
       where r.tunnel_ip = ? and f.status = 'active' and f.expires_at > ?
       order by f.created_at, f.id`,
      [tunnelIp, now],
    );
    return rows.map(forwardFromRow);
  }

  /** Every forward the relay at `entryPoint` should serve now. */
  async relayTargets(entryPoint: string, now: Date): Promise<RelayTarget[]> {
    const rows = await this.#db.query<Row>(
      `select f.id, f.port, f.allow_only_cidr, f.expires_at, r.tunnel_ip
       from forwards f join routers r on r.id = f.router_id
       where f.entry_point = ? and f.status = 'active' and f.expires_at > ? and r.tunnel_ip is not null`,
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
   * closed since `since` (a removal may have failed or been lost).
   */
  async routersToReconcile(since: Date): Promise<string[]> {
    const rows = await this.#db.query<Row>(
      `select distinct f.router_id from forwards f join routers r on r.id = f.router_id
       where r.tunnel_ip is not null and (f.status = 'active' or f.closed_at >= ?)`,
      [since],
    );
    return rows.map((row) => String(row.router_id));
  }
}
