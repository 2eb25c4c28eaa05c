/**
 * Pinned SSH host key fingerprints (`SHA256:<base64>`, OpenSSH style) per router id, and per
 * tunnel address in the database store (docs/api.md "Routers and heartbeats"): a router reachable
 * at another router's address never inherits that router's trust.
 */
export interface HostKeyStore {
  /** The router's pin; throws {@link RouterRemovedError} for a router that was removed. */
  get(routerId: string): Promise<string | undefined>;
  /** Pins on first use; throws when the pin cannot be taken (the connection is then refused). */
  set(routerId: string, fingerprint: string): Promise<void>;
}

/** The agent never logs in to the device of a removed router (but for its offboarding job). */
export class RouterRemovedError extends Error {
  constructor(routerId: string) {
    super(`router ${routerId} was removed; the agent does not log in to its device`);
    this.name = "RouterRemovedError";
  }
}

/**
 * The address's last pinned host key belonged to a removed router of another organization: the
 * device answering there may still be that router's, so a new router there is refused until an
 * operator clears the pin (`npm run admin -- tunnel clear-pin <address>`).
 */
export class AddressPinRefusedError extends Error {
  readonly tunnelIp: string;
  constructor(routerId: string, tunnelIp: string, removedRouterId: string) {
    super(
      `refusing router ${routerId}: the host key last pinned at its tunnel address ${tunnelIp} belonged to removed router ${removedRouterId} of another organization, whose device may still answer there. After checking the device, an operator clears the pin with \`npm run admin -- tunnel clear-pin ${tunnelIp}\`.`,
    );
    this.name = "AddressPinRefusedError";
    this.tunnelIp = tunnelIp;
  }
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
