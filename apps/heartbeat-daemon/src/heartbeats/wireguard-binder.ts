import type { TokenOwner, WireguardBindOutcome } from "@fleet/db";
import type { Clock, StatusFeed } from "@fleet/shared";
import type { Logger } from "pino";

/** The persistence binding needs (WireguardPeersRepository in production). */
export interface WireguardBindStore {
  bind(routerId: string, publicKey: string, at: Date): Promise<WireguardBindOutcome>;
}

/** A router that keeps sending a refused key is logged once per this period, not per heartbeat. */
export const WIREGUARD_KEY_LOG_PERIOD_MS = 3_600_000;
/** A refused key is tried against the database again at most this often per router. */
const RETRY_MS = 5_000;
const MAX_ENTRIES = 10_000;

/**
 * Binds a router's WireGuard key (docs/routeros.md "The management tunnel") off the heartbeat's path:
 * the heartbeat is acked at once, the bind runs here, one at a time. The first key after adoption
 * binds; a heartbeat repeating it costs a string compare (the key is cached with the token). A
 * different key, or a key another router holds, changes nothing and is a security event, logged
 * once per router per period. A binding is announced on the status feed, so every hub adds the
 * peer within a second.
 */
export class WireguardBinder {
  readonly #store: WireguardBindStore;
  readonly #feed: StatusFeed;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #pending = new Map<string, { owner: TokenOwner; key: string }>();
  readonly #triedAt = new Map<string, number>();
  readonly #loggedAt = new Map<string, number>();
  #running: Promise<void> | undefined;

  constructor(options: { store: WireguardBindStore; feed: StatusFeed; clock: Clock; logger: Logger }) {
    this.#store = options.store;
    this.#feed = options.feed;
    this.#clock = options.clock;
    this.#logger = options.logger;
  }

  /** `key` is validated by the parser; null/undefined: the heartbeat carried none. */
  check(owner: TokenOwner, key: string | null | undefined): void {
    if (key === null || key === undefined || key === owner.wireguardKey) return;
    if (owner.wireguardKey) {
      this.#securityEvent(owner, key, "changed");
      return;
    }
    const now = this.#clock.now().getTime();
    const tried = this.#triedAt.get(`${owner.routerId}:${key}`);
    if (tried !== undefined && now - tried < RETRY_MS) return;
    if (this.#triedAt.size >= MAX_ENTRIES) this.#triedAt.clear();
    this.#triedAt.set(`${owner.routerId}:${key}`, now);
    this.#pending.set(owner.routerId, { owner, key });
    this.#running ??= this.#drain().finally(() => {
      this.#running = undefined;
    });
  }

  /** Resolves when every bind asked for so far is done (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #drain(): Promise<void> {
    for (;;) {
      const next = this.#pending.entries().next();
      if (next.done) return;
      const [routerId, { owner, key }] = next.value;
      this.#pending.delete(routerId);
      let outcome: WireguardBindOutcome;
      try {
        outcome = await this.#store.bind(routerId, key, this.#clock.now());
      } catch (error) {
        // The next heartbeat (after RETRY_MS) tries again.
        this.#logger.warn({ err: error, routerId }, "binding a WireGuard key failed; the next heartbeat retries");
        continue;
      }
      if (outcome === "bound" || outcome === "unchanged") {
        owner.wireguardKey = key;
        if (outcome === "bound") {
          this.#logger.info(
            { event: "wireguard_key_bound", routerId, teamId: owner.teamId },
            "WireGuard key bound to router",
          );
          await this.#feed
            .publish([{ type: "tunnel_binding", router_id: routerId, team_id: owner.teamId }])
            .catch((error: unknown) =>
              this.#logger.warn({ err: error }, "tunnel binding not announced; hubs reconcile"),
            );
        }
      } else this.#securityEvent(owner, key, outcome);
    }
  }

  #securityEvent(owner: TokenOwner, key: string, outcome: "changed" | "taken"): void {
    const now = this.#clock.now().getTime();
    const last = this.#loggedAt.get(owner.routerId);
    if (last !== undefined && now - last < WIREGUARD_KEY_LOG_PERIOD_MS) return;
    if (this.#loggedAt.size >= MAX_ENTRIES) this.#loggedAt.clear();
    this.#loggedAt.set(owner.routerId, now);
    this.#logger.warn(
      {
        event: outcome === "changed" ? "wireguard_key_changed" : "wireguard_key_taken",
        routerId: owner.routerId,
        teamId: owner.teamId,
        reportedKey: key,
        ...(outcome === "changed" ? { boundKey: owner.wireguardKey } : {}),
      },
      outcome === "changed"
        ? "security: heartbeat reported a WireGuard key other than the bound one; ignored (re-adopt the router to bind a new key)"
        : "security: heartbeat reported a WireGuard key bound to another router; ignored",
    );
  }
}
