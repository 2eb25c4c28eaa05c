import type { Database } from "../database.ts";

/** SSH host key pins (trust on first use), shared by every agent through the database. */
export class SshHostKeysRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async get(host: string, port: number): Promise<string | undefined> {
    const rows = await this.#db.query<{ fingerprint: string }>(
      `select fingerprint from ssh_host_keys where host = ? and port = ?`,
      [host, port],
    );
    return rows[0]?.fingerprint;
  }

  /**
   * Pins a fingerprint unless one is pinned already, and answers the pin that holds: when two
   * agents meet a router for the first time at once, the first write wins for both.
   */
  async pin(host: string, port: number, fingerprint: string, now: Date): Promise<string> {
    await this.#db.query(
      `insert into ssh_host_keys (id, host, port, fingerprint, created_at) values (?, ?, ?, ?, ?)
       on conflict (host, port) do nothing`,
      [crypto.randomUUID(), host, port, fingerprint, now],
    );
    return (await this.get(host, port)) ?? fingerprint;
  }

  /** Forgets a pin (an operator re-keyed the router on purpose). */
  async unpin(host: string, port: number): Promise<void> {
    await this.#db.query(`delete from ssh_host_keys where host = ? and port = ?`, [host, port]);
  }
}
