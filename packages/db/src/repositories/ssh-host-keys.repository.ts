import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";

/** The outcome of pinning a router's host key. */
export type PinResult =
  /** The pin that holds now (the first write wins when two agents meet a router at once). */
  | { pinned: string }
  /** The router no longer exists: nothing is pinned, nobody logs in. */
  | { removed: true }
  /**
   * The address's last pinned key belonged to a removed router of another organization and no
   * operator cleared it: the device there may still be that router (docs/api.md "Routers and heartbeats").
   */
  | { refused: { tunnelIp: string; organizationId: string; routerId: string } };

/**
 * SSH host key pins (trust on first use) shared by every agent through the database: one per
 * router (`ssh_host_keys`), and per tunnel address as well (`tunnel_addresses`), so a new router
 * at an address where a removed router of another organization was pinned is refused until an
 * operator clears that pin (docs/api.md "Routers and heartbeats").
 */
export class SshHostKeysRepository {
  readonly #query: Query;
  /** On `queryOf(db)`, or on a transaction's `query` for `pin` (its caller opens it). */
  constructor(query: Query) {
    this.#query = query;
  }

  async get(routerId: string): Promise<string | undefined> {
    return (await this.lookup(routerId)).fingerprint;
  }

  /** Whether the router exists (a removed router's device is never logged in to), and its pin. */
  async lookup(routerId: string): Promise<{ exists: boolean; fingerprint: string | undefined }> {
    if (!isUuid(routerId)) return { exists: false, fingerprint: undefined };
    const rows = await this.#query<{ fingerprint: string | null }>(
      "select k.fingerprint from routers r left join ssh_host_keys k on k.router_id = r.id where r.id = $1",
      [routerId],
    );
    const row = rows[0];
    return { exists: row !== undefined, fingerprint: row?.fingerprint ?? undefined };
  }

  /**
   * Pins a fingerprint for the router and its address unless one is pinned already, and answers
   * the pin that holds. The router row and the address row are locked (run it in a transaction), so
   * two agents meeting a router at once, or a removal racing the first contact, settle on one answer.
   */
  async pin(routerId: string, fingerprint: string, now: Date): Promise<PinResult> {
    if (!isUuid(routerId)) return { removed: true };
    const query = this.#query;
    const [router] = await query<{ organization_id: string; tunnel_ip: string | null }>(
      "select organization_id, tunnel_ip from routers where id = $1 for update",
      [routerId],
    );
    if (!router) return { removed: true };
    const [existing] = await query<{ fingerprint: string }>(
      "select fingerprint from ssh_host_keys where router_id = $1",
      [routerId],
    );
    if (existing) return { pinned: existing.fingerprint };
    if (router.tunnel_ip) {
      const [address] = await query<{
        router_id: string;
        organization_id: string;
        removed: boolean;
        fp: string | null;
      }>(
        `select router_id, organization_id, removed_at is not null as removed, host_key_fingerprint as fp
         from tunnel_addresses where tunnel_ip = $1 for update`,
        [router.tunnel_ip],
      );
      if (
        address &&
        address.router_id !== routerId &&
        address.removed &&
        address.fp !== null &&
        address.organization_id !== router.organization_id
      ) {
        return {
          refused: {
            tunnelIp: router.tunnel_ip,
            organizationId: address.organization_id,
            routerId: address.router_id,
          },
        };
      }
      await query(
        `insert into tunnel_addresses as t (tunnel_ip, router_id, organization_id, host_key_fingerprint, pinned_at,
           removed_at, quarantined_until, offboarded_at)
         values ($1, $2, $3, $4, to_timestamp($5::float8 / 1000.0), null, null, null)
         on conflict (tunnel_ip) do update set router_id = excluded.router_id,
           organization_id = excluded.organization_id, host_key_fingerprint = excluded.host_key_fingerprint,
           pinned_at = excluded.pinned_at, removed_at = null, quarantined_until = null, offboarded_at = null`,
        [router.tunnel_ip, routerId, router.organization_id, fingerprint, now.getTime()],
      );
    }
    await query(
      `insert into ssh_host_keys (id, router_id, fingerprint, created_at)
       values ($1, $2, $3, to_timestamp($4::float8 / 1000.0)) on conflict (router_id) do nothing`,
      [crypto.randomUUID(), routerId, fingerprint, now.getTime()],
    );
    return { pinned: fingerprint };
  }

  /** Forgets a pin (an operator re-keyed the router on purpose). */
  async unpin(routerId: string): Promise<void> {
    if (!isUuid(routerId)) return;
    await this.#query("delete from ssh_host_keys where router_id = $1", [routerId]);
  }
}
