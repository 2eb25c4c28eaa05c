import { type Database, queryOf, SshHostKeysRepository } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import { AddressPinRefusedError, type HostKeyStore, RouterRemovedError } from "./host-key-store.ts";

/**
 * Host key pins kept in the database per router id and per tunnel address, so every agent instance
 * trusts the same keys (docs/api.md "Routers and heartbeats").
 */
export class DbHostKeyStore implements HostKeyStore {
  readonly #db: Pick<Database, "query" | "transaction">;
  readonly #keys: SshHostKeysRepository;
  readonly #clock: Clock;

  constructor(db: Pick<Database, "query" | "transaction">, clock: Clock) {
    this.#db = db;
    this.#keys = new SshHostKeysRepository(queryOf(db));
    this.#clock = clock;
  }

  async get(routerId: string): Promise<string | undefined> {
    const { exists, fingerprint } = await this.#keys.lookup(routerId);
    if (!exists) throw new RouterRemovedError(routerId);
    return fingerprint;
  }

  async set(routerId: string, fingerprint: string): Promise<void> {
    // One transaction: the router's and the address's rows stay locked from the read to the pin.
    const result = await this.#db.transaction((query) =>
      new SshHostKeysRepository(query).pin(routerId, fingerprint, this.#clock.now()),
    );
    if ("removed" in result) throw new RouterRemovedError(routerId);
    if ("refused" in result)
      throw new AddressPinRefusedError(routerId, result.refused.tunnelIp, result.refused.routerId);
    // Another agent pinned a different key for this router in the same instant: one of us is
    // talking to an impostor, so refuse rather than trust on first use twice.
    if (result.pinned !== fingerprint) throw new Error(`router ${routerId} was pinned to another host key meanwhile`);
  }
}
