import { isUuid } from "@fleet/shared";
import type { Database, Query } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** A removed router as its offboarding job sees it (docs/routeros.md "Offboarding"). */
export interface RemovedRouter {
  routerId: string;
  organizationId: string;
  tunnelIp: string;
  /** The host key last pinned for the router at its address; undefined when none was. */
  fingerprint: string | undefined;
  removedAt: Date;
  offboardedAt: Date | null;
  /** Another router holds the address now (its quarantine ended): the device is not ours to touch. */
  reassigned: boolean;
}

/** What the system remembers of one tunnel address, for operators (`npm run admin -- tunnel show`). */
export interface TunnelAddressRecord {
  tunnelIp: string;
  routerId: string;
  organizationId: string;
  fingerprint: string | null;
  removedAt: Date | null;
  quarantinedUntil: Date | null;
  offboardedAt: Date | null;
}

type Row = Record<string, unknown>;
const dateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toNumber(value));
const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const COLUMNS = `t.tunnel_ip, t.router_id, t.organization_id, t.host_key_fingerprint, ${ms("t.removed_at", "removed_ms")},
  ${ms("t.quarantined_until", "quarantined_ms")}, ${ms("t.offboarded_at", "offboarded_ms")}`;

/**
 * Tunnel addresses after their routers (docs/api.md "Routers and heartbeats"): quarantine, the
 * host key pinned per address, and the offboarding of removed routers. Rows are written by the
 * router removal (RoutersRepository) and by host key pinning (SshHostKeysRepository).
 */
export class TunnelAddressesRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** The removed router `routerId` and its address, or null (never removed, or unknown). */
  async removedRouter(routerId: string): Promise<RemovedRouter | null> {
    if (!isUuid(routerId)) return null;
    const rows = await this.#db.query<Row>(
      `select ${COLUMNS}, exists (select 1 from routers r where r.tunnel_ip = t.tunnel_ip) as reassigned
       from tunnel_addresses t where t.router_id = $1 and t.removed_at is not null
         and not exists (select 1 from routers r where r.id = $1)`,
      [routerId],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      routerId,
      organizationId: String(row.organization_id),
      tunnelIp: String(row.tunnel_ip),
      fingerprint: row.host_key_fingerprint === null ? undefined : String(row.host_key_fingerprint),
      removedAt: new Date(toNumber(row.removed_ms)),
      offboardedAt: dateOrNull(row.offboarded_ms),
      reassigned: row.reassigned === true,
    };
  }

  /**
   * Trust on first use for a removed router that was never pinned: its offboarding pins the key it
   * meets, unless one is pinned meanwhile (answers the pin that holds).
   */
  async pinRemoved(routerId: string, fingerprint: string, now: Date): Promise<string | undefined> {
    if (!isUuid(routerId)) return undefined;
    const rows = await this.#db.query<{ host_key_fingerprint: string | null }>(
      `update tunnel_addresses set host_key_fingerprint = coalesce(host_key_fingerprint, $2),
         pinned_at = coalesce(pinned_at, to_timestamp($3::float8 / 1000.0))
       where router_id = $1 and removed_at is not null returning host_key_fingerprint`,
      [routerId, fingerprint, now.getTime()],
    );
    return rows[0]?.host_key_fingerprint ?? undefined;
  }

  /**
   * The device was cleaned: the quarantine no longer holds and the address's pin is forgotten (the
   * device no longer trusts the agent either). In the caller's transaction (`query`), which writes
   * `router.offboarded` with it. Null when the router was offboarded already.
   */
  async markOffboarded(
    query: Query,
    routerId: string,
    now: Date,
  ): Promise<{ tunnelIp: string; organizationId: string } | null> {
    const rows = await query<Row>(
      `update tunnel_addresses set offboarded_at = to_timestamp($2::float8 / 1000.0), host_key_fingerprint = null
       where router_id = $1 and removed_at is not null and offboarded_at is null
       returning tunnel_ip, organization_id`,
      [routerId, now.getTime()],
    );
    const row = rows[0];
    return row ? { tunnelIp: String(row.tunnel_ip), organizationId: String(row.organization_id) } : null;
  }

  /** What is remembered of an address; null when nothing is. */
  async find(tunnelIp: string): Promise<TunnelAddressRecord | null> {
    const rows = await this.#db.query<Row>(`select ${COLUMNS} from tunnel_addresses t where t.tunnel_ip = $1`, [
      tunnelIp,
    ]);
    const row = rows[0];
    if (!row) return null;
    return {
      tunnelIp: String(row.tunnel_ip),
      routerId: String(row.router_id),
      organizationId: String(row.organization_id),
      fingerprint: row.host_key_fingerprint === null ? null : String(row.host_key_fingerprint),
      removedAt: dateOrNull(row.removed_ms),
      quarantinedUntil: dateOrNull(row.quarantined_ms),
      offboardedAt: dateOrNull(row.offboarded_ms),
    };
  }

  /**
   * An operator's decision (`npm run admin -- tunnel clear-pin <address>`): the host key pinned at
   * the address is forgotten, so a new router there is trusted on first use again. The
   * address's quarantine is left as it is. False when no key was pinned there.
   */
  async clearPin(tunnelIp: string): Promise<boolean> {
    const rows = await this.#db.query(
      `update tunnel_addresses set host_key_fingerprint = null, pinned_at = null
       where tunnel_ip = $1 and host_key_fingerprint is not null returning tunnel_ip`,
      [tunnelIp],
    );
    return rows.length > 0;
  }
}
