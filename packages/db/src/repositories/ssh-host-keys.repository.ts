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
    const row = await this.#query.kysely
      .selectFrom("routers as r")
      .leftJoin("ssh_host_keys as k", "k.router_id", "r.id")
      .select("k.fingerprint")
      .where("r.id", "=", routerId)
      .executeTakeFirst();
    return { exists: row !== undefined, fingerprint: row?.fingerprint ?? undefined };
  }

  /**
   * Pins a fingerprint for the router and its address unless one is pinned already, and answers
   * the pin that holds. The router row and the address row are locked (run it in a transaction), so
   * two agents meeting a router at once, or a removal racing the first contact, settle on one answer.
   */
  async pin(routerId: string, fingerprint: string, now: Date): Promise<PinResult> {
    if (!isUuid(routerId)) return { removed: true };
    const db = this.#query.kysely;
    const router = await db
      .selectFrom("routers")
      .select(["organization_id", "tunnel_ip"])
      .where("id", "=", routerId)
      .forUpdate()
      .executeTakeFirst();
    if (!router) return { removed: true };
    const existing = await db
      .selectFrom("ssh_host_keys")
      .select("fingerprint")
      .where("router_id", "=", routerId)
      .executeTakeFirst();
    if (existing) return { pinned: existing.fingerprint };
    if (router.tunnel_ip) {
      const address = await db
        .selectFrom("tunnel_addresses")
        .select(["router_id", "organization_id", "removed_at", "host_key_fingerprint"])
        .where("tunnel_ip", "=", router.tunnel_ip)
        .forUpdate()
        .executeTakeFirst();
      if (
        address &&
        address.router_id !== routerId &&
        address.removed_at !== null &&
        address.host_key_fingerprint !== null &&
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
      await db
        .insertInto("tunnel_addresses")
        .values({
          tunnel_ip: router.tunnel_ip,
          router_id: routerId,
          organization_id: router.organization_id,
          host_key_fingerprint: fingerprint,
          pinned_at: now,
          removed_at: null,
          quarantined_until: null,
          offboarded_at: null,
        })
        .onConflict((oc) =>
          oc.column("tunnel_ip").doUpdateSet((eb) => ({
            router_id: eb.ref("excluded.router_id"),
            organization_id: eb.ref("excluded.organization_id"),
            host_key_fingerprint: eb.ref("excluded.host_key_fingerprint"),
            pinned_at: eb.ref("excluded.pinned_at"),
            removed_at: null,
            quarantined_until: null,
            offboarded_at: null,
          })),
        )
        .execute();
    }
    await db
      .insertInto("ssh_host_keys")
      .values({ id: crypto.randomUUID(), router_id: routerId, fingerprint, created_at: now })
      .onConflict((oc) => oc.column("router_id").doNothing())
      .execute();
    return { pinned: fingerprint };
  }

  /** Forgets a pin (an operator re-keyed the router on purpose). */
  async unpin(routerId: string): Promise<void> {
    if (!isUuid(routerId)) return;
    await this.#query.kysely.deleteFrom("ssh_host_keys").where("router_id", "=", routerId).execute();
  }
}
