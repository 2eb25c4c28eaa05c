import type { SshHostKeysRepository } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import type { HostKeyStore } from "./host-key-store.ts";

/** Host key pins kept in the database per router id, so every agent instance trusts the same keys. */
export class DbHostKeyStore implements HostKeyStore {
  readonly #keys: SshHostKeysRepository;
  readonly #clock: Clock;

  constructor(keys: SshHostKeysRepository, clock: Clock) {
    this.#keys = keys;
    this.#clock = clock;
  }

  get(routerId: string): Promise<string | undefined> {
    return this.#keys.get(routerId);
  }

  async set(routerId: string, fingerprint: string): Promise<void> {
    const pinned = await this.#keys.pin(routerId, fingerprint, this.#clock.now());
    if (pinned === undefined) throw new Error(`router ${routerId} no longer exists; nothing to pin`);
    // Another agent pinned a different key for this router in the same instant: one of us is
    // talking to an impostor, so refuse rather than trust on first use twice.
    if (pinned !== fingerprint) throw new Error(`router ${routerId} was pinned to another host key meanwhile`);
  }
}
