import type { HostKeyStore } from "./host-key-store.ts";

/** One session on a router. `exec` resolves with the command's output, or rejects when RouterOS reports an error. */
export interface RouterOsClient {
  exec(command: string): Promise<string>;
  close(): void;
}

/**
 * Where to log in: the router's id (its host key is pinned per router) and its assigned tunnel
 * address, read from the router's row (docs/api.md "Routers and heartbeats").
 */
export interface RouterOsTarget {
  routerId: string;
  host: string;
  port: number;
  /** Pins to use instead of the connector's own (the offboarding job of a removed router). */
  hostKeys?: HostKeyStore;
}

export interface RouterOsConnector {
  connect(target: RouterOsTarget): Promise<RouterOsClient>;
}
