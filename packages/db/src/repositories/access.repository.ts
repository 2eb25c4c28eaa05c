import { isUuid } from "@fleet/shared";
import type { Query, Row } from "../database.ts";
import type { AuditActor } from "./audit-log.repository.ts";
import { SessionRepository, type SessionTable } from "./entry-point-sessions.ts";
import type { RelayTarget } from "./forwards.repository.ts";

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

const fromRow = (row: Row<"router_access">): AccessRecord => ({
  id: row.id,
  routerId: row.router_id,
  entryPoint: row.entry_point,
  port: row.port,
  service: row.service,
  level: row.level,
  username: row.username,
  allowOnlyCidr: row.allow_only_cidr,
  status: row.status,
  expiresAt: row.expires_at,
  createdAt: row.created_at,
  closedAt: row.closed_at,
  appliedAt: row.applied_at,
});

const ACCESS_TABLE: SessionTable<AccessRecord, Row<"router_access">> = { table: "router_access", fromRow };

/**
 * The `router_access` table (docs/api.md "Temporary router access"): reads and writes only. Built on
 * the `query` of the caller's transaction (or `queryOf(db)`); quotas, ports, jobs and audit entries
 * are the services' (the API's `AccessService`, the agent's `AccessLifecycle`), which run these
 * statements in their own transaction.
 * Listing, closing and expiring are the rules it shares with forwards (`SessionRepository`).
 */
export class AccessRepository extends SessionRepository<AccessRecord, Row<"router_access">> {
  constructor(query: Query) {
    super(query, ACCESS_TABLE);
  }

  /** Inserts an active session; null when an active session of the entry point holds the port already. */
  async insertActive(row: NewAccessRow): Promise<AccessRecord | null> {
    const inserted = await this.query.kysely
      .insertInto("router_access")
      .values({
        id: row.id,
        router_id: row.routerId,
        entry_point: row.entryPoint,
        port: row.port,
        service: row.service,
        level: row.level,
        username: row.username,
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
    return inserted ? fromRow(inserted) : null;
  }

  /** A session with its router's tunnel address, for the agent's job handlers. */
  async findForAgent(id: string): Promise<{ access: AccessRecord; tunnelIp: string | null } | null> {
    if (!isUuid(id)) return null;
    const row = await this.query.kysely
      .selectFrom("router_access as a")
      .innerJoin("routers as r", "r.id", "a.router_id")
      .selectAll("a")
      .select("r.tunnel_ip")
      .where("a.id", "=", id)
      .executeTakeFirst();
    if (!row) return null;
    return { access: fromRow(row), tunnelIp: row.tunnel_ip };
  }

  async markApplied(id: string, now: Date): Promise<void> {
    await this.query.kysely
      .updateTable("router_access")
      .set({ applied_at: now })
      .where("id", "=", id)
      .where("applied_at", "is", null)
      .execute();
  }

  /** Every session the relay at `entryPoint` should serve now, piped to the router's own service port. */
  async relayTargets(
    entryPoint: string,
    now: Date,
    servicePorts: Readonly<Record<AccessRecord["service"], number>>,
  ): Promise<RelayTarget[]> {
    const rows = await this.query.kysely
      .selectFrom("router_access as a")
      .innerJoin("routers as r", "r.id", "a.router_id")
      .select(["a.id", "a.port", "a.service", "a.allow_only_cidr", "a.expires_at", "r.tunnel_ip"])
      .where("a.entry_point", "=", entryPoint)
      .where("a.status", "=", "active")
      .where("a.expires_at", ">", now)
      .where("a.applied_at", "is not", null)
      .where("r.tunnel_ip", "is not", null)
      .$narrowType<{ tunnel_ip: string }>()
      .execute();
    return rows.map((row) => ({
      id: row.id,
      port: row.port,
      targetPort: servicePorts[row.service],
      allowOnlyCidr: row.allow_only_cidr,
      tunnelIp: row.tunnel_ip,
      expiresAt: row.expires_at,
    }));
  }
}
