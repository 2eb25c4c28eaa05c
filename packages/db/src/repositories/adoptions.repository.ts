import { isUuid } from "@fleet/shared";
import type { Database } from "../database.ts";
import { toNumber } from "./sql-values.ts";

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

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;

type Row = Record<string, unknown>;

/** Adoption URLs of routers (one table, `router_adoptions`). */
export class AdoptionsRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** Records the adoption URL of a router just enrolled. */
  async insert(routerId: string, adoption: NewAdoption): Promise<void> {
    await this.#db.query(
      `insert into router_adoptions (token_hash, router_id, created_at, expires_at, counts_from)
       values ($1, $2, to_timestamp($3::float8 / 1000.0), to_timestamp($4::float8 / 1000.0), to_timestamp($5::float8 / 1000.0))`,
      [
        adoption.tokenHash,
        routerId,
        adoption.createdAt.getTime(),
        adoption.expiresAt.getTime(),
        adoption.countsFrom.getTime(),
      ],
    );
  }

  /**
   * A router that was reset: its heartbeat token is replaced (the old one stops working) and a new
   * adoption URL recorded, in one transaction. Its URLs that expired are dropped on the way. False
   * when the router is not in the team (nothing changes then).
   */
  async reissue(teamId: string, routerId: string, heartbeatTokenHash: string, adoption: NewAdoption): Promise<boolean> {
    if (!isUuid(routerId)) return false;
    return this.#db.transaction(async (query) => {
      const updated = await query(
        "update routers set heartbeat_token_hash = $3 where id = $1 and team_id = $2 returning id",
        [routerId, teamId, heartbeatTokenHash],
      );
      if (updated.length === 0) return false;
      // Re-adoption clears the tunnel binding (docs/routeros.md "The management tunnel"): the next
      // heartbeat with the new token binds whatever key the device then has.
      await query("delete from router_wireguard_peers where router_id = $1", [routerId]);
      await query(
        "delete from router_adoptions where router_id = $1 and expires_at < to_timestamp($2::float8 / 1000.0)",
        [routerId, adoption.createdAt.getTime()],
      );
      await query(
        `insert into router_adoptions (token_hash, router_id, created_at, expires_at, counts_from)
         values ($1, $2, to_timestamp($3::float8 / 1000.0), to_timestamp($4::float8 / 1000.0), to_timestamp($5::float8 / 1000.0))`,
        [
          adoption.tokenHash,
          routerId,
          adoption.createdAt.getTime(),
          adoption.expiresAt.getTime(),
          adoption.countsFrom.getTime(),
        ],
      );
      return true;
    });
  }

  /** The adoption URL with this token hash and its router's state; null when unknown. */
  async find(tokenHash: string): Promise<AdoptionLookup | null> {
    const rows = await this.#db.query<Row>(
      `select a.router_id, r.name, r.heartbeat_token_hash, r.tunnel_ip, ${ms("a.created_at", "created_ms")},
         ${ms("a.expires_at", "expires_ms")}, ${ms("a.counts_from", "counts_ms")}, ${ms("l.last_seen_at", "last_seen_ms")},
         ${ms("a.spent_at", "spent_ms")}
       from router_adoptions a join routers r on r.id = a.router_id left join router_liveness l on l.router_id = r.id where a.token_hash = $1`,
      [tokenHash],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      routerId: String(row.router_id),
      routerName: String(row.name),
      heartbeatTokenHash: String(row.heartbeat_token_hash),
      tunnelIp: row.tunnel_ip === null || row.tunnel_ip === undefined ? null : String(row.tunnel_ip),
      createdAt: new Date(toNumber(row.created_ms)),
      expiresAt: new Date(toNumber(row.expires_ms)),
      countsFrom: new Date(toNumber(row.counts_ms)),
      lastSeenAt:
        row.last_seen_ms === null || row.last_seen_ms === undefined ? null : new Date(toNumber(row.last_seen_ms)),
      spentAt: row.spent_ms === null || row.spent_ms === undefined ? null : new Date(toNumber(row.spent_ms)),
    };
  }
}
