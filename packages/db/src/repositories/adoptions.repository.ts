import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";

/** A new adoption URL: only hashes are stored (docs/routeros.md "Adoption"). */
export interface NewAdoption {
  /** SHA-256 hex of the URL's token. */
  tokenHash: string;
  createdAt: Date;
  expiresAt: Date;
  /** A heartbeat at or after this instant uses the URL up. */
  countsFrom: Date;
}

/** What the script endpoint needs to decide 200, 410 or 404, and to write the script. */
export interface AdoptionLookup {
  routerId: string;
  routerName: string;
  createdAt: Date;
  expiresAt: Date;
  countsFrom: Date;
  /** The router's current heartbeat token hash: another adoption may have replaced the token. */
  heartbeatTokenHash: string;
  /** The router's assigned tunnel address (the WireGuard part of the script puts it on the router). */
  tunnelIp: string | null;
  lastSeenAt: Date | null;
  /** When the first heartbeat with its token spent it (null: not recorded). */
  spentAt: Date | null;
}

const insertAdoption = (query: Query, routerId: string, adoption: NewAdoption) =>
  query.kysely
    .insertInto("router_adoptions")
    .values({
      token_hash: adoption.tokenHash,
      router_id: routerId,
      created_at: adoption.createdAt,
      expires_at: adoption.expiresAt,
      counts_from: adoption.countsFrom,
    })
    .execute();

/** Adoption URLs of routers (one table, `router_adoptions`). */
export class AdoptionsRepository {
  readonly #query: Query;
  /** On `queryOf(db)`, or on a transaction's `query` for `reissue` (its caller opens it). */
  constructor(query: Query) {
    this.#query = query;
  }

  /** Records the adoption URL of a router just enrolled. */
  async insert(routerId: string, adoption: NewAdoption): Promise<void> {
    await insertAdoption(this.#query, routerId, adoption);
  }

  /**
   * A router that was reset: its heartbeat token is replaced (the old one stops working) and a new
   * adoption URL recorded; run it in one transaction. Its URLs that expired are dropped on the way. False
   * when the router is not in the team (nothing changes then).
   */
  async reissue(teamId: string, routerId: string, heartbeatTokenHash: string, adoption: NewAdoption): Promise<boolean> {
    if (!isUuid(routerId)) return false;
    const db = this.#query.kysely;
    const updated = await db
      .updateTable("routers")
      .set({ heartbeat_token_hash: heartbeatTokenHash })
      .where("id", "=", routerId)
      .where("team_id", "=", teamId)
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n) return false;
    // Re-adoption clears the tunnel binding (docs/routeros.md "The management tunnel"): the next
    // heartbeat with the new token binds whatever key the device then has.
    await db.deleteFrom("router_wireguard_peers").where("router_id", "=", routerId).execute();
    await db
      .deleteFrom("router_adoptions")
      .where("router_id", "=", routerId)
      .where("expires_at", "<", adoption.createdAt)
      .execute();
    await insertAdoption(this.#query, routerId, adoption);
    return true;
  }

  /** The adoption URL with this token hash and its router's state; null when unknown. */
  async find(tokenHash: string): Promise<AdoptionLookup | null> {
    const row = await this.#query.kysely
      .selectFrom("router_adoptions as a")
      .innerJoin("routers as r", "r.id", "a.router_id")
      .leftJoin("router_liveness as l", "l.router_id", "r.id")
      .select([
        "a.router_id",
        "r.name",
        "r.heartbeat_token_hash",
        "r.tunnel_ip",
        "a.created_at",
        "a.expires_at",
        "a.counts_from",
        "l.last_seen_at",
        "a.spent_at",
      ])
      .where("a.token_hash", "=", tokenHash)
      .executeTakeFirst();
    if (!row) return null;
    return {
      routerId: row.router_id,
      routerName: row.name,
      heartbeatTokenHash: row.heartbeat_token_hash,
      tunnelIp: row.tunnel_ip,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      countsFrom: row.counts_from,
      lastSeenAt: row.last_seen_at,
      spentAt: row.spent_at,
    };
  }
}
