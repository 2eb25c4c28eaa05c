import type { Database } from "../database.ts";
import { nativeSql } from "../native-sql.ts";
import { isRouterId } from "./routers.repository.ts";

/**
 * SSH host key pins (trust on first use), one per router, shared by every agent through the
 * database. Keyed by router id, not by address: a router that answers at another's address can
 * never match that router's pin (docs/api.md "Routers and heartbeats").
 */
export class SshHostKeysRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async get(routerId: string): Promise<string | undefined> {
    if (!isRouterId(routerId)) return undefined;
    const sql = await nativeSql(this.#db);
    const rows = await sql.query<{ fingerprint: string }>(
      "select fingerprint from ssh_host_keys where router_id = $1",
      [routerId],
    );
    return rows[0]?.fingerprint;
  }

  /**
   * Pins a fingerprint unless one is pinned already, and answers the pin that holds: when two
   * agents meet a router for the first time at once, the first write wins for both. A router that
   * no longer exists pins nothing (answers undefined).
   */
  async pin(routerId: string, fingerprint: string, now: Date): Promise<string | undefined> {
    if (!isRouterId(routerId)) return undefined;
    const sql = await nativeSql(this.#db);
    await sql.query(
      `insert into ssh_host_keys (id, router_id, fingerprint, created_at)
       select $1, r.id, $3, to_timestamp($4::float8 / 1000.0) from routers r where r.id = $2
       on conflict (router_id) do nothing`,
      [crypto.randomUUID(), routerId, fingerprint, now.getTime()],
    );
    return this.get(routerId);
  }

  /** Forgets a pin (an operator re-keyed the router on purpose). */
  async unpin(routerId: string): Promise<void> {
    if (!isRouterId(routerId)) return;
    const sql = await nativeSql(this.#db);
    await sql.query("delete from ssh_host_keys where router_id = $1", [routerId]);
  }
}
