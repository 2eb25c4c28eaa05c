import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import type { AuditActor } from "./audit-log.repository.ts";
import { SessionRepository, type SessionTable } from "./entry-point-sessions.ts";
import { toDate, toNumber } from "./sql-values.ts";

export type TForwardStatus = "active" | "expired" | "revoked" | "failed";

/** A forward as stored (the response body is `TForward` of `@fleet/shared`, made by the API's mapper). */
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

/** The row of a new active forward; its port is chosen by the caller (`claimEntryPointPort`). */
export interface NewForwardRow {
  id: string;
  routerId: string;
  entryPoint: string;
  port: number;
  dstAddress: string;
  dstPort: number;
  allowOnlyCidr: string;
  expiresAt: Date;
  createdAt: Date;
  createdBy: AuditActor;
}

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

export const FORWARD_COLUMNS = `f.id, f.router_id, f.entry_point, f.port, f.dst_address, f.dst_port, f.allow_only_cidr, f.status,
  f.expires_at, f.created_at, f.closed_at, f.applied_at, f.failure_reason`;

// Columns straight off an UPDATE ... RETURNING, without the table alias.
const RETURNING = FORWARD_COLUMNS.replaceAll("f.", "");

type Row = Record<string, unknown>;

export const forwardFromRow = (row: Row): ForwardRecord => ({
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

const FORWARDS_TABLE: SessionTable<ForwardRecord> = {
  table: "forwards",
  alias: "f",
  columns: FORWARD_COLUMNS,
  fromRow: forwardFromRow,
};

/** Characters of a failure reason kept (the column's width). */
const FAILURE_REASON_MAX = 500;

/**
 * The `forwards` table (docs/api.md "Transient Port Forward"): reads and writes only. Built on the
 * `query` of the caller's transaction (or `queryOf(db)`); the use cases that decide quotas, ports,
 * jobs and audit entries are the services' (the API's `ForwardsService`, the agent's
 * `ForwardLifecycle`), which run these statements in their own transaction. Listing, closing and
 * expiring are the rules it shares with temporary access (`SessionRepository`).
 */
export class ForwardsRepository extends SessionRepository<ForwardRecord> {
  constructor(query: Query) {
    super(query, FORWARDS_TABLE);
  }

  /** Inserts an active forward; null when an active forward of the entry point holds the port already. */
  async insertActive(row: NewForwardRow): Promise<ForwardRecord | null> {
    const [inserted] = await this.query<Row>(
      `insert into forwards (id, router_id, entry_point, port, dst_address, dst_port, allow_only_cidr, status, expires_at, created_at,
         created_by_type, created_by_id)
       values ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $9, $10, $11)
       on conflict (entry_point, port) where status = 'active' do nothing
       returning ${RETURNING}`,
      [
        row.id,
        row.routerId,
        row.entryPoint,
        row.port,
        row.dstAddress,
        row.dstPort,
        row.allowOnlyCidr,
        row.expiresAt,
        row.createdAt,
        row.createdBy.type,
        row.createdBy.id,
      ],
    );
    return inserted ? forwardFromRow(inserted) : null;
  }

  /** An active forward becomes `failed` with the reason; null when it was no longer active. */
  async markFailed(id: string, reason: string, now: Date): Promise<ForwardRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.query<Row>(
      `update forwards set status = 'failed', failure_reason = $1, closed_at = $2
       where id = $3 and status = 'active' returning ${RETURNING}`,
      [reason.slice(0, FAILURE_REASON_MAX), now, id],
    );
    return rows[0] ? forwardFromRow(rows[0]) : null;
  }

  /** The agent put the forward's rule on the router (state `active`, served by the relay). */
  async markApplied(id: string, now: Date): Promise<void> {
    await this.query(`update forwards set applied_at = $1 where id = $2`, [now, id]);
  }
}
