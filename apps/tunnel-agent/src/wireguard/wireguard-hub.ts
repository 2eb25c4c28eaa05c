import {
  type Database,
  type HandshakeReading,
  insertAuditEntries,
  type NewAuditEntry,
  type Query,
  SYSTEM_ORIGIN,
  type TunnelTransition,
  type WireguardBinding,
} from "@fleet/db";
import type { Clock, StatusFeed } from "@fleet/shared";
import type { Logger } from "pino";
import { countHubApply, setHubPeers } from "./hub-metrics.ts";
import { checkedEndpoint } from "./uapi-client.ts";
import type { WireguardDevice, WireguardPeerBatch } from "./wireguard-device.ts";

/** The bindings and handshakes the hub reads and writes (WireguardPeersRepository in production). */
export interface HubBindingStore {
  bindings(): Promise<WireguardBinding[]>;
  recordHandshakes(query: Query, readings: readonly HandshakeReading[], now: Date): Promise<TunnelTransition[]>;
}

/** `router.tunnel.up`/`router.tunnel.down` (docs/api.md "Audit log and webhooks"): a flip of `tunnel_status`. */
const tunnelFlipEntry = (t: TunnelTransition, at: Date): NewAuditEntry => ({
  organizationId: t.organizationId,
  occurredAt: at,
  action: t.up ? "router.tunnel.up" : "router.tunnel.down",
  actor: SYSTEM_ORIGIN.actor,
  target: { type: "router", id: t.routerId },
  routerId: t.routerId,
  sourceIp: null,
  details: { tunnel_ip: t.tunnelIp },
});

export interface WireguardHubOptions {
  device: WireguardDevice;
  store: HubBindingStore;
  /** A poll's handshakes and the audit entries of its flips commit in one transaction. */
  db: Pick<Database, "transaction">;
  feed: StatusFeed;
  clock: Clock;
  logger: Logger;
  /** First retry of a failed apply; doubles up to `maxRetryMs`. */
  retryMs?: number;
  maxRetryMs?: number;
}

const validEndpoint = (endpoint: string): boolean => {
  try {
    checkedEndpoint(endpoint);
    return true;
  } catch {
    return false;
  }
};

/** What one reconciliation did. */
export interface HubSyncReport {
  added: number;
  removed: number;
  peers: number;
}

/**
 * The management tunnel's hub (docs/architecture.md "The management tunnel"): keeps the peers of
 * its WireGuard interface equal to the database's bindings, each peer allowed exactly its router's
 * `tunnel_ip/32`. It re-reads the bindings at start (replacing whatever the interface held), when
 * the status feed says a binding was made or cleared or a router was removed (at once, coalesced),
 * and when the periodic schedule calls `reconcile()`. The difference goes to the interface in one
 * batch. A batch the interface refuses is counted, logged and retried with backoff until it
 * applies: never dropped (each retry recomputes from the database, so it applies the latest truth).
 */
export class WireguardHub {
  readonly #o: WireguardHubOptions;
  #unsubscribe: (() => void) | undefined;
  #running: Promise<HubSyncReport> | undefined;
  #again = false;
  #retry: NodeJS.Timeout | undefined;
  #retryMs: number;
  #closed = false;
  #synced = false;
  /** Failed applies since the last success (for logs; the metric counts all). */
  failures = 0;

  constructor(options: WireguardHubOptions) {
    this.#o = options;
    this.#retryMs = options.retryMs ?? 1_000;
  }

  get device(): WireguardDevice {
    return this.#o.device;
  }

  /** The start-up sync (the interface's peers become the bindings), then listens to the feed. */
  async start(): Promise<HubSyncReport> {
    this.#unsubscribe = this.#o.feed.subscribe((event) => {
      if (event.type === "removed" || event.type === "tunnel_binding") this.#soon();
    });
    return this.reconcile();
  }

  /**
   * Makes the interface's peers equal to the bindings now. Concurrent calls coalesce: a call while
   * one runs makes that one run once more, and both resolve with the later report.
   */
  reconcile(): Promise<HubSyncReport> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    const run = async (): Promise<HubSyncReport> => {
      let report: HubSyncReport;
      do {
        this.#again = false;
        report = await this.#syncOnce();
      } while (this.#again && !this.#closed);
      return report;
    };
    this.#running = run().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Reads every peer's last handshake and records it (`tunnel_status`, audit on a flip). */
  async pollHandshakes(): Promise<TunnelTransition[]> {
    const state = await this.#o.device.state();
    const readings = state.peers.map((p) => ({
      publicKey: p.publicKey,
      handshakeAt: p.lastHandshakeAt,
      endpoint: p.endpoint,
    }));
    if (readings.length === 0) return [];
    const { store } = this.#o;
    const now = this.#o.clock.now();
    // The flips and their audit entries commit together.
    const transitions = await this.#o.db.transaction(async (query) => {
      const flips = await store.recordHandshakes(query, readings, now);
      await insertAuditEntries(
        query,
        flips.map((t) => tunnelFlipEntry(t, now)),
      );
      return flips;
    });
    for (const t of transitions) {
      this.#o.logger.info({ routerId: t.routerId, tunnelStatus: t.up ? "up" : "down" }, "router tunnel status changed");
    }
    return transitions;
  }

  close(): void {
    this.#closed = true;
    this.#unsubscribe?.();
    clearTimeout(this.#retry);
  }

  #soon(): void {
    if (this.#closed) return;
    void this.reconcile().catch(() => {
      // Logged, counted and retried by #syncOnce.
    });
  }

  async #syncOnce(): Promise<HubSyncReport> {
    const [bindings, state] = await Promise.all([this.#o.store.bindings(), this.#o.device.state()]);
    const wanted = new Map(bindings.map((b) => [b.publicKey, b]));
    const current = new Map(state.peers.map((p) => [p.publicKey, p]));
    const batch: WireguardPeerBatch = { put: [], remove: [], replace: !this.#synced };
    const put = batch.put as Array<{ publicKey: string; allowedIps: string[]; endpoint?: string }>;
    const remove = batch.remove as string[];
    for (const [publicKey, binding] of wanted) {
      const allowed = `${binding.tunnelIp}/32`;
      const peer = this.#synced ? current.get(publicKey) : undefined;
      const ips = peer?.allowedIps;
      // A peer the interface does not know where to find (a restarted hub, a standby) is primed
      // with the router's last endpoint, so traffic to it starts a handshake at once rather than
      // waiting for the router's next rekey (up to 2 minutes). A live endpoint is never overwritten.
      const endpoint =
        !peer?.endpoint && binding.endpoint && validEndpoint(binding.endpoint) ? binding.endpoint : undefined;
      if (!peer || !ips || ips.length !== 1 || ips[0] !== allowed || endpoint) {
        put.push({ publicKey, allowedIps: [allowed], ...(endpoint ? { endpoint } : {}) });
      }
    }
    for (const publicKey of current.keys()) if (!wanted.has(publicKey)) remove.push(publicKey);
    if (put.length > 0 || remove.length > 0 || batch.replace) {
      try {
        await this.#o.device.apply(batch);
      } catch (error) {
        this.failures += 1;
        countHubApply(false);
        this.#o.logger.error(
          { err: error, put: put.length, remove: remove.length, failures: this.failures, retryInMs: this.#retryMs },
          "applying the WireGuard peer set failed; retrying",
        );
        this.#scheduleRetry();
        throw error;
      }
      countHubApply(true);
      if (this.failures > 0) this.#o.logger.info({ after: this.failures }, "WireGuard peer set applied again");
      this.failures = 0;
      this.#retryMs = this.#o.retryMs ?? 1_000;
    }
    this.#synced = true;
    setHubPeers(wanted.size);
    return { added: put.length, removed: remove.length, peers: wanted.size };
  }

  #scheduleRetry(): void {
    if (this.#closed) return;
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => this.#soon(), this.#retryMs);
    this.#retry.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, this.#o.maxRetryMs ?? 30_000);
  }
}
