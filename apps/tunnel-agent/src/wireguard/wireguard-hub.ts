import {
  type Database,
  type HandshakeReading,
  insertAuditEntries,
  type NewAuditEntry,
  type Query,
  SYSTEM_ORIGIN,
  TUNNEL_UP_WINDOW_MS,
  type TunnelTransition,
  type WireguardBinding,
} from "@fleet/db";
import type { Clock, StatusFeed } from "@fleet/shared";
import type { Logger } from "pino";
import { countHubApply, setHubPeers } from "./hub-metrics.ts";
import type { TunnelProbe } from "./tunnel-probe.ts";
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
  /**
   * Asks a router with a fresh handshake to answer at its tunnel address through the tunnel
   * (`tunnel_status` is `up` only then). Absent: nobody answers, nothing is ever `up`.
   */
  probe?: TunnelProbe;
  /** A router that answered is asked again after this long (default 60 s; its answer holds 3 minutes). */
  probeEveryMs?: number;
  /** A router that did not answer is asked again after this long (default 10 s). */
  probeRetryMs?: number;
}

/** What the hub last learnt from probing a router, for the binding it probed. */
interface ProbeRecord {
  publicKey: string;
  tunnelIp: string;
  triedAt: number;
  ok: boolean;
  /** The last answer (ms), while the binding stays the same. */
  answeredAt: number | undefined;
}

/** Probes at once: a poll of thousands of fresh handshakes stays a bounded burst of connections. */
const PROBE_CONCURRENCY = 32;

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
  readonly #probes = new Map<string, ProbeRecord>();
  #polling: Promise<TunnelTransition[]> | undefined;

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

  /**
   * Reads every peer's last handshake, asks the routers with a fresh one to answer at their tunnel
   * address through the tunnel, and records both (`tunnel_status`, audit on a flip). A handshake
   * only proves that someone holds the bound key; the answer proves that the key's holder is the
   * router the key was bound to (a router that bound another device's key never answers). Calls
   * while one runs share it.
   */
  pollHandshakes(): Promise<TunnelTransition[]> {
    this.#polling ??= this.#poll().finally(() => {
      this.#polling = undefined;
    });
    return this.#polling;
  }

  async #poll(): Promise<TunnelTransition[]> {
    const state = await this.#o.device.state();
    if (state.peers.length === 0) return [];
    const { store } = this.#o;
    const fresh = (at: Date | null) =>
      at !== null && this.#o.clock.now().getTime() - at.getTime() < TUNNEL_UP_WINDOW_MS;
    const bindings = state.peers.some((p) => fresh(p.lastHandshakeAt)) ? await store.bindings() : undefined;
    const byKey = new Map((bindings ?? []).map((b) => [b.publicKey, b]));
    if (bindings) {
      await this.#probeAll(
        state.peers.filter((p) => fresh(p.lastHandshakeAt)).flatMap((p) => byKey.get(p.publicKey) ?? []),
      );
      const bound = new Set(bindings.map((b) => b.routerId));
      for (const routerId of this.#probes.keys()) if (!bound.has(routerId)) this.#probes.delete(routerId);
    }
    const readings = state.peers.map((p) => {
      const binding = byKey.get(p.publicKey);
      const probe = binding ? this.#probes.get(binding.routerId) : undefined;
      const answered =
        binding &&
        probe?.answeredAt !== undefined &&
        probe.publicKey === p.publicKey &&
        probe.tunnelIp === binding.tunnelIp
          ? { routerId: binding.routerId, at: new Date(probe.answeredAt) }
          : null;
      return { publicKey: p.publicKey, handshakeAt: p.lastHandshakeAt, endpoint: p.endpoint, answered };
    });
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

  /** Probes the bindings whose last probe is stale (or of another key or address), PROBE_CONCURRENCY at a time. */
  async #probeAll(bindings: WireguardBinding[]): Promise<void> {
    const probe = this.#o.probe;
    if (!probe) return;
    const now = this.#o.clock.now().getTime();
    const due = bindings.filter((b) => {
      const last = this.#probes.get(b.routerId);
      if (!last || last.publicKey !== b.publicKey || last.tunnelIp !== b.tunnelIp) return true;
      return now - last.triedAt >= (last.ok ? (this.#o.probeEveryMs ?? 60_000) : (this.#o.probeRetryMs ?? 10_000));
    });
    let next = 0;
    const worker = async () => {
      for (let b = due[next++]; b !== undefined; b = due[next++]) {
        const ok = await probe(b.tunnelIp).catch(() => false);
        const at = this.#o.clock.now().getTime();
        const last = this.#probes.get(b.routerId);
        const same = last?.publicKey === b.publicKey && last.tunnelIp === b.tunnelIp;
        this.#probes.set(b.routerId, {
          publicKey: b.publicKey,
          tunnelIp: b.tunnelIp,
          triedAt: at,
          ok,
          answeredAt: ok ? at : same ? last?.answeredAt : undefined,
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(PROBE_CONCURRENCY, due.length) }, worker));
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
