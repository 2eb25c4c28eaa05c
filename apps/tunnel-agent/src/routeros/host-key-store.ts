/** Pinned SSH host key fingerprints (`SHA256:<base64>`, OpenSSH style) per router endpoint. */
export interface HostKeyStore {
  get(host: string, port: number): Promise<string | undefined>;
  set(host: string, port: number, fingerprint: string): Promise<void>;
}

export class InMemoryHostKeyStore implements HostKeyStore {
  readonly #pins = new Map<string, string>();

  async get(host: string, port: number): Promise<string | undefined> {
    return this.#pins.get(`${host}:${port}`);
  }

  async set(host: string, port: number, fingerprint: string): Promise<void> {
    this.#pins.set(`${host}:${port}`, fingerprint);
  }
}
