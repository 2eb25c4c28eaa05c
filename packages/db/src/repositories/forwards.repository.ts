import { isUuid } from "@fleet/shared";
import type { Query, Row } from "../database.ts";
import type { AuditActor } from "./audit-log.repository.ts";
import { SessionRepository, type SessionTable } from "./entry-point-sessions.ts";

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

/** The columns {@link forwardFromRow} reads. */
export type ForwardRow = Pick<
  Row<"forwards">,
  | "id"
  | "router_id"
  | "entry_point"
  | "port"
  | "dst_address"
  | "dst_port"
  | "allow_only_cidr"
  | "status"
  | "expires_at"
  | "created_at"
  | "closed_at"
  | "applied_at"
  | "failure_reason"
>;

export const forwardFromRow = (row: ForwardRow): ForwardRecord => ({
  id: row.id,
  routerId: row.router_id,
  entryPoint: row.entry_point,
  port: row.port,
  dstAddress: row.dst_address,
  dstPort: row.dst_port,
  allowOnlyCidr: row.allow_only_cidr,
  status: row.status,
  expiresAt: row.expires_at,
  createdAt: row.created_at,
  closedAt: row.closed_at,
  appliedAt: row.applied_at,
  failureReason: row.failure_reason,
});

const FORWARDS_TABLE: SessionTable<ForwardRecord, Row<"forwards">> = { table: "forwards", fromRow: forwardFromRow };

/** Characters of a failure reason kept (the column's width). */
const FAILURE_REASON_MAX = 500;

/**
 * The `forwards` table (docs/api.md "Transient Port Forward"): reads and writes only. Built on the
 * `query` of the caller's transaction (or `queryOf(db)`); the use cases that decide quotas, ports,
 * jobs and audit entries are the services' (the API's `ForwardsService`, the agent's
 * `ForwardLifecycle`), which run these statements in their own transaction. Listing, closing and
 * expiring are the rules it shares with temporary access (`SessionRepository`).
 */
export class ForwardsRepository extends SessionRepository<ForwardRecord, Row<"forwards">> {
  constructor(query: Query) {
    super(query, FORWARDS_TABLE);
  }

  /** Inserts an active forward; null when an active forward of the entry point holds the port already. */
  async insertActive(row: NewForwardRow): Promise<ForwardRecord | null> {
    const inserted = await this.query.kysely
      .insertInto("forwards")
      .values({
        id: row.id,
        router_id: row.routerId,
        entry_point: row.entryPoint,
        port: row.port,
        dst_address: row.dstAddress,
        dst_port: row.dstPort,
        allow_only_cidr: row.allowOnlyCidr,
        status: "active",
        expires_at: row.expiresAt,
        created_at: row.createdAt,
        created_by_type: row.createdBy.type,
        created_by_id: row.createdBy.id,
      })
      .onConflict((oc) => oc.columns(["entry_point", "port"]).where("status", "=", "active").doNothing())
      .returningAll()
      .executeTakeFirst();
    return inserted ? forwardFromRow(inserted) : null;
  }

  /** An active forward becomes `failed` with the reason; null when it was no longer active. */
  async markFailed(id: string, reason: string, now: Date): Promise<ForwardRecord | null> {
    if (!isUuid(id)) return null;
    const row = await this.query.kysely
      .updateTable("forwards")
      .set({ status: "failed", failure_reason: reason.slice(0, FAILURE_REASON_MAX), closed_at: now })
      .where("id", "=", id)
      .where("status", "=", "active")
      .returningAll()
      .executeTakeFirst();
    return row ? forwardFromRow(row) : null;
  }

  /** The agent put the forward's rule on the router (state `active`, served by the relay). */
  async markApplied(id: string, now: Date): Promise<void> {
    await this.query.kysely.updateTable("forwards").set({ applied_at: now }).where("id", "=", id).execute();
  }
}
