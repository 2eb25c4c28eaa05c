import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import type { AuditActor } from "./audit-log.repository.ts";
import { SessionRepository, type SessionTable } from "./entry-point-sessions.ts";
import type { RelayTarget } from "./forwards.repository.ts";
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

/** The row of a new active session; its port is chosen by the caller (`claimEntryPointPort`). */
export interface NewAccessRow {
  id: string;
  routerId: string;
  entryPoint: string;
  port: number;
  service: AccessRecord["service"];
  level: AccessRecord["level"];
  username: string;
  allowOnlyCidr: string;
  expiresAt: Date;
  createdAt: Date;
  createdBy: AuditActor;
}

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

// Columns straight off an UPDATE ... RETURNING, without the table alias.
const RETURNING = COLUMNS.replaceAll("a.", "");

const ACCESS_TABLE: SessionTable<AccessRecord> = { table: "router_access", alias: "a", columns: COLUMNS, fromRow };

/**
 * The `router_access` table (docs/api.md "Temporary router access"): reads and writes only. Built on
 * the `query` of the caller's transaction (or `queryOf(db)`); quotas, ports, jobs and audit entries
 * are the services' (the API's `AccessService`, the agent's `AccessLifecycle`), which run these
 * statements in their own transaction.
 * Listing, closing and expiring are the rules it shares with forwards (`SessionRepository`).
 */
export class AccessRepository extends SessionRepository<AccessRecord> {
  constructor(query: Query) {
    super(query, ACCESS_TABLE);
  }

  /** Inserts an active session; null when an active session of the entry point holds the port already. */
  async insertActive(row: NewAccessRow): Promise<AccessRecord | null> {
    const [inserted] = await this.query<Row>(
      `insert into router_access (id, router_id, entry_point, port, service, level, username, allow_only_cidr, status,
         expires_at, created_at, created_by_type, created_by_id)
       values ($1, $2, $3, $4, $5, $6, $7, $8, 'active', $9, $10, $11, $12)
       on conflict (entry_point, port) where status = 'active' do nothing
       returning ${RETURNING}`,
      [
        row.id,
        row.routerId,
        row.entryPoint,
        row.port,
        row.service,
        row.level,
        row.username,
        row.allowOnlyCidr,
        row.expiresAt,
        row.createdAt,
        row.createdBy.type,
        row.createdBy.id,
      ],
    );
    return inserted ? fromRow(inserted) : null;
  }

  /** A session with its router's tunnel address, for the agent's job handlers. */
  async findForAgent(id: string): Promise<{ access: AccessRecord; tunnelIp: string | null } | null> {
    if (!isUuid(id)) return null;
    const [row] = await this.query<Row>(
      `select ${COLUMNS}, r.tunnel_ip from router_access a join routers r on r.id = a.router_id where a.id = $1`,
      [id],
    );
    if (!row) return null;
    return { access: fromRow(row), tunnelIp: row.tunnel_ip === null ? null : String(row.tunnel_ip) };
  }

  async markApplied(id: string, now: Date): Promise<void> {
    await this.query("update router_access set applied_at = $2 where id = $1 and applied_at is null", [id, now]);
  }

  /** Every session the relay at `entryPoint` should serve now, piped to the router's own service port. */
  async relayTargets(
    entryPoint: string,
    now: Date,
    servicePorts: Readonly<Record<AccessRecord["service"], number>>,
  ): Promise<RelayTarget[]> {
    const rows = await this.query<Row>(
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
