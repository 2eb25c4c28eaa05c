/**
 * Pinned SSH host key fingerprints (`SHA256:<base64>`, OpenSSH style) per router id. Never per
 * address: a router reachable at another router's address must not inherit that router's trust.
 */
export interface HostKeyStore {
  get(routerId: string): Promise<string | undefined>;
  set(routerId: string, fingerprint: string): Promise<void>;
}

export class InMemoryHostKeyStore implements HostKeyStore {
  readonly #pins = new Map<string, string>();

  async get(routerId: string): Promise<string | undefined> {
    return this.#pins.get(routerId);
  }

  async set(routerId: string, fingerprint: string): Promise<void> {
    this.#pins.set(routerId, fingerprint);
  }
}
