import type { SshHostKeysRepository } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import type { HostKeyStore } from "./host-key-store.ts";
import { HostKeyMismatchError } from "./ssh-routeros-client.ts";

/** Host key pins kept in the database, so every agent instance trusts the same keys. */
export class DbHostKeyStore implements HostKeyStore {
  readonly #keys: SshHostKeysRepository;
  readonly #clock: Clock;

  constructor(keys: SshHostKeysRepository, clock: Clock) {
    this.#keys = keys;
    this.#clock = clock;
  }

  get(host: string, port: number): Promise<string | undefined> {
    return this.#keys.get(host, port);
  }

  async set(host: string, port: number, fingerprint: string): Promise<void> {
    const pinned = await this.#keys.pin(host, port, fingerprint, this.#clock.now());
    // Another agent pinned a different key for this endpoint in the same instant: one of us is
    // talking to an impostor, so refuse rather than trust on first use twice.
    if (pinned !== fingerprint) throw new HostKeyMismatchError(host, port, pinned, fingerprint);
  }
}
