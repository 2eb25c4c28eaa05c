import { isUuid } from "@fleet/shared";
import type { Database, Query } from "../database.ts";

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

const COLUMNS = [
  "t.tunnel_ip",
  "t.router_id",
  "t.organization_id",
  "t.host_key_fingerprint",
  "t.removed_at",
  "t.quarantined_until",
  "t.offboarded_at",
] as const;

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
    const row = await this.#db.query.kysely
      .selectFrom("tunnel_addresses as t")
      .select((eb) => [
        ...COLUMNS,
        eb
          .exists(eb.selectFrom("routers as r").select("r.id").whereRef("r.tunnel_ip", "=", "t.tunnel_ip"))
          .as("reassigned"),
      ])
      .where("t.router_id", "=", routerId)
      .where("t.removed_at", "is not", null)
      .where((eb) => eb.not(eb.exists(eb.selectFrom("routers as r").select("r.id").where("r.id", "=", routerId))))
      .executeTakeFirst();
    if (!row?.removed_at) return null;
    return {
      routerId,
      organizationId: row.organization_id,
      tunnelIp: row.tunnel_ip,
      fingerprint: row.host_key_fingerprint ?? undefined,
      removedAt: row.removed_at,
      offboardedAt: row.offboarded_at,
      reassigned: row.reassigned === true,
    };
  }

  /**
   * Trust on first use for a removed router that was never pinned: its offboarding pins the key it
   * meets, unless one is pinned meanwhile (answers the pin that holds).
   */
  async pinRemoved(routerId: string, fingerprint: string, now: Date): Promise<string | undefined> {
    if (!isUuid(routerId)) return undefined;
    const row = await this.#db.query.kysely
      .updateTable("tunnel_addresses")
      .set((eb) => ({
        host_key_fingerprint: eb.fn.coalesce("host_key_fingerprint", eb.val(fingerprint)),
        pinned_at: eb.fn.coalesce("pinned_at", eb.val(now)),
      }))
      .where("router_id", "=", routerId)
      .where("removed_at", "is not", null)
      .returning("host_key_fingerprint")
      .executeTakeFirst();
    return row?.host_key_fingerprint ?? undefined;
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
    const row = await query.kysely
      .updateTable("tunnel_addresses")
      .set({ offboarded_at: now, host_key_fingerprint: null })
      .where("router_id", "=", routerId)
      .where("removed_at", "is not", null)
      .where("offboarded_at", "is", null)
      .returning(["tunnel_ip", "organization_id"])
      .executeTakeFirst();
    return row ? { tunnelIp: row.tunnel_ip, organizationId: row.organization_id } : null;
  }

  /** What is remembered of an address; null when nothing is. */
  async find(tunnelIp: string): Promise<TunnelAddressRecord | null> {
    const row = await this.#db.query.kysely
      .selectFrom("tunnel_addresses as t")
      .select(COLUMNS)
      .where("t.tunnel_ip", "=", tunnelIp)
      .executeTakeFirst();
    if (!row) return null;
    return {
      tunnelIp: row.tunnel_ip,
      routerId: row.router_id,
      organizationId: row.organization_id,
      fingerprint: row.host_key_fingerprint,
      removedAt: row.removed_at,
      quarantinedUntil: row.quarantined_until,
      offboardedAt: row.offboarded_at,
    };
  }

  /**
   * An operator's decision (`npm run admin -- tunnel clear-pin <address>`): the host key pinned at
   * the address is forgotten, so a new router there is trusted on first use again. The
   * address's quarantine is left as it is. False when no key was pinned there.
   */
  async clearPin(tunnelIp: string): Promise<boolean> {
    const cleared = await this.#db.query.kysely
      .updateTable("tunnel_addresses")
      .set({ host_key_fingerprint: null, pinned_at: null })
      .where("tunnel_ip", "=", tunnelIp)
      .where("host_key_fingerprint", "is not", null)
      .executeTakeFirst();
    return cleared.numUpdatedRows > 0n;
  }
}
