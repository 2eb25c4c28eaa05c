import type { HostKeyStore } from "./host-key-store.ts";

/** What one command may read back. */
export interface ExecOptions {
  /**
   * Output (stdout and stderr together) beyond this many bytes is not read: the command fails with
   * `RouterOsOutputTooLargeError` and the channel is closed. Default: the connector's own cap.
   */
  maxBytes?: number;
}

/**
 * One session on a router. `exec` resolves with the command's output, or rejects when RouterOS
 * reports an error or answers more than the output cap (the router is data from outside).
 */
export interface RouterOsClient {
  exec(command: string, options?: ExecOptions): Promise<string>;
  close(): void;
}

/** A command answered more bytes than it may (docs/api.md "Configuration backups": `BACKUP_MAX_BYTES`). */
export class RouterOsOutputTooLargeError extends Error {
  readonly command: string;
  readonly limitBytes: number;

  constructor(command: string, limitBytes: number) {
    super(`the router's answer exceeded ${limitBytes} bytes; the read was stopped at the cap`);
    this.name = "RouterOsOutputTooLargeError";
    this.command = command;
    this.limitBytes = limitBytes;
  }
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
  /**
   * The router's pin as the job read it with its own row (a change step): the store is not asked
   * again; without one (first contact) it is, and pins as always.
   */
  pinned?: string;
}

export interface RouterOsConnector {
  connect(target: RouterOsTarget): Promise<RouterOsClient>;
}
