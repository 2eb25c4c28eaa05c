import { createHash } from "node:crypto";
import type { ClientChannel, Client as Ssh2Client } from "ssh2";
import ssh2 from "ssh2";
import type { HostKeyStore } from "./host-key-store.ts";
import {
  type ExecOptions,
  type RouterOsClient,
  type RouterOsConnector,
  RouterOsOutputTooLargeError,
  type RouterOsTarget,
} from "./routeros-client.ts";
import { inSpan, SpanKind } from "@fleet/runtime";

const { Client } = ssh2;

export type { HostKeyStore } from "./host-key-store.ts";
export { InMemoryHostKeyStore } from "./host-key-store.ts";

export interface SshRouterOsConnectorOptions {
  username: string;
  privateKey: Buffer | string;
  /** Covers TCP connect, key exchange and authentication. */
  connectTimeoutMs: number;
  commandTimeoutMs: number;
  /**
   * Output a command may answer unless it asks for another cap (`exec`'s `maxBytes`): a router is
   * data from outside, and an unbounded answer would be buffered whole. Default 1 MiB.
   */
  maxOutputBytes?: number;
  hostKeys: HostKeyStore;
  /**
   * Source address of the agent's connections: an address inside TUNNEL_NETWORK, which adopted
   * routers admit the agent's user from. Unset: the system chooses (the tunnel's own address).
   */
  localAddress?: string | undefined;
}

export class HostKeyMismatchError extends Error {
  readonly routerId: string;
  readonly host: string;
  readonly port: number;
  readonly pinned: string;
  readonly presented: string;

  constructor(routerId: string, host: string, port: number, pinned: string, presented: string) {
    super(
      `host key of router ${routerId} (at ${host}:${port}) changed: pinned ${pinned}, presented ${presented}; refusing to connect`,
    );
    this.name = "HostKeyMismatchError";
    this.routerId = routerId;
    this.host = host;
    this.port = port;
    this.pinned = pinned;
    this.presented = presented;
  }
}

export class RouterOsCommandError extends Error {
  readonly command: string;
  readonly output: string;

  constructor(command: string, output: string, detail: string) {
    super(`RouterOS rejected command (${detail}): ${output.trim() || "<no output>"}`);
    this.name = "RouterOsCommandError";
    this.command = command;
    this.output = output;
  }
}

export class RouterOsTimeoutError extends Error {
  readonly command: string;

  constructor(command: string, timeoutMs: number) {
    super(`RouterOS command timed out after ${timeoutMs} ms`);
    this.name = "RouterOsTimeoutError";
    this.command = command;
  }
}

/** OpenSSH-style fingerprint of a host key in SSH wire format. */
export function sshFingerprint(publicKeyBlob: Buffer): string {
  return `SHA256:${createHash("sha256").update(publicKeyBlob).digest("base64").replace(/=+$/, "")}`;
}

// RouterOS reports command errors in-band on stdout, usually with exit status 0.
const ROUTEROS_ERROR =
  /^(?:failure:|error:|syntax error\b|expected |bad command name |no such item|invalid value|input does not match|ambiguous value|missing value)|\(line \d+ column \d+\)\s*$/m;

/** Every command but the configuration export answers a few kilobytes; 1 MiB is far beyond any. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

export class SshRouterOsConnector implements RouterOsConnector {
  readonly #options: SshRouterOsConnectorOptions;

  constructor(options: SshRouterOsConnectorOptions) {
    this.#options = options;
  }

  // docs/operations.md "Tracing": a span per SSH session set-up and per command.
  connect(target: RouterOsTarget): Promise<RouterOsClient> {
    return inSpan(
      "ssh connect",
      { "network.peer.address": target.host, "network.peer.port": target.port, "fleet.router_id": target.routerId },
      () => this.#connect(target),
      SpanKind.CLIENT,
    );
  }

  async #connect(target: RouterOsTarget): Promise<RouterOsClient> {
    const { routerId, host, port } = target;
    // The offboarding job brings the removed router's own pins (docs/routeros.md "Offboarding").
    const hostKeys = target.hostKeys ?? this.#options.hostKeys;
    const pinned = target.pinned ?? (await hostKeys.get(routerId));
    const conn = new Client();
    let mismatch: Error | undefined;

    await new Promise<void>((resolve, reject) => {
      // Stays attached after a failed connect: ssh2 may emit further errors (e.g. "Connection lost
      // before handshake") and an unhandled 'error' event would crash the process.
      const onError = (err: Error): void => {
        conn.end();
        reject(mismatch ?? err);
      };
      // A server that ends the connection cleanly before login (SSH_DISCONNECT_BY_APPLICATION after
      // the version exchange: a router shutting down or restarting its SSH service) makes ssh2 emit
      // 'close' alone: no 'error', no 'ready', and its ready timeout is cleared. Without this the
      // connect would never settle, and the job awaiting it would hold its router's lock and the
      // head of the router's queue for good (a retry after the lease waits behind the same lock).
      const onClose = (): void => {
        reject(mismatch ?? new Error(`SSH connection to router ${routerId} (at ${host}:${port}) closed before login`));
      };
      conn.on("error", onError);
      conn.once("close", onClose);
      conn.once("ready", () => {
        conn.off("error", onError);
        conn.off("close", onClose);
        resolve();
      });
      conn.connect({
        host,
        port,
        username: this.#options.username,
        privateKey: this.#options.privateKey,
        // The key alone: ssh2's default tries `none` first, a round trip no router accepts (issue 39).
        authHandler: ["publickey"],
        readyTimeout: this.#options.connectTimeoutMs,
        keepaliveInterval: 15_000,
        ...(this.#options.localAddress ? { localAddress: this.#options.localAddress } : {}),
        hostVerifier: (key: Buffer, verify: (valid: boolean) => void): void => {
          const presented = sshFingerprint(key);
          if (pinned === undefined) {
            // Trust on first use: the pin must be durable before we talk to the router.
            hostKeys.set(routerId, presented).then(
              () => verify(true),
              (error: unknown) => {
                // The reason (a removed router, an address pinned by another tenant) is the job's error.
                mismatch = error instanceof Error ? error : new Error(String(error));
                verify(false);
              },
            );
          } else if (pinned === presented) {
            verify(true);
          } else {
            mismatch = new HostKeyMismatchError(routerId, host, port, pinned, presented);
            verify(false);
          }
        },
      });
      // Commands are small request/response exchanges; Nagle would add a delayed-ACK wait to each.
      conn.setNoDelay(true);
    });

    return new SshRouterOsClient(
      conn,
      this.#options.commandTimeoutMs,
      this.#options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    );
  }
}

class SshRouterOsClient implements RouterOsClient {
  readonly #conn: Ssh2Client;
  readonly #commandTimeoutMs: number;
  readonly #maxOutputBytes: number;
  readonly #pending = new Set<(err: Error) => void>();
  #closed: Error | undefined;

  constructor(conn: Ssh2Client, commandTimeoutMs: number, maxOutputBytes: number) {
    this.#conn = conn;
    this.#commandTimeoutMs = commandTimeoutMs;
    this.#maxOutputBytes = maxOutputBytes;
    const fail = (err: Error): void => {
      this.#closed ??= err;
      for (const reject of this.#pending) reject(this.#closed);
      this.#pending.clear();
    };
    conn.on("error", fail);
    conn.on("close", () => fail(new Error("SSH connection to router closed")));
  }

  exec(command: string, options: ExecOptions = {}): Promise<string> {
    // Only the command's menu path and verb (the words before the first `name=value`): its
    // arguments may carry comments or addresses worth keeping private.
    const words = command.trim().split(/\s+/);
    const path = words.slice(0, Math.min(6, words.findIndex((w) => w.includes("=")) >>> 0)).join(" ");
    return inSpan(
      "ssh exec",
      { "rpc.system": "ssh", "routeros.command": path },
      () => this.#exec(command, options.maxBytes ?? this.#maxOutputBytes),
      SpanKind.CLIENT,
    );
  }

  #exec(command: string, maxBytes: number): Promise<string> {
    if (this.#closed) return Promise.reject(this.#closed);
    return new Promise<string>((resolve, reject) => {
      let channel: ClientChannel | undefined;
      const settle = (err: Error | undefined, output = ""): void => {
        if (!this.#pending.delete(onConnectionLost)) return;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(output);
      };
      const onConnectionLost = (err: Error): void => settle(err);
      this.#pending.add(onConnectionLost);

      // A router that does not answer in time is treated as wedged: the whole session is dropped
      // rather than reused, so the caller reconnects instead of queueing behind a stuck channel.
      const timer = setTimeout(() => {
        settle(new RouterOsTimeoutError(command, this.#commandTimeoutMs));
        channel?.close();
        this.close();
      }, this.#commandTimeoutMs);

      try {
        this.#conn.exec(command, (err, stream) => {
          if (err) return settle(err);
          channel = stream;
          const chunks: Buffer[] = [];
          let size = 0;
          let exitCode: number | null = null;
          // Reading stops at the cap: nothing more is kept, the command fails, and the session is
          // dropped (a router that floods one channel is not trusted with the next command).
          const onData = (d: Buffer): void => {
            if (size < 0) return;
            size += d.length;
            if (size <= maxBytes) {
              chunks.push(d);
              return;
            }
            size = -1;
            chunks.length = 0;
            settle(new RouterOsOutputTooLargeError(command, maxBytes));
            stream.close();
            this.close();
          };
          stream.on("data", onData);
          stream.stderr.on("data", onData);
          stream.on("exit", (code: number | null) => {
            exitCode = code;
          });
          stream.on("close", () => {
            const output = Buffer.concat(chunks).toString("utf8");
            if (ROUTEROS_ERROR.test(output)) {
              settle(new RouterOsCommandError(command, output, "error reported by router"));
            } else if (exitCode !== null && exitCode !== 0) {
              settle(new RouterOsCommandError(command, output, `exit status ${exitCode}`));
            } else {
              settle(undefined, output);
            }
          });
        });
      } catch (err) {
        settle(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  close(): void {
    this.#closed ??= new Error("RouterOS client closed");
    this.#conn.end();
  }
}
