import type { TokenOwner } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import type { Logger } from "pino";

/** A router that keeps reporting a wrong address is logged once per this period, not per heartbeat. */
export const TUNNEL_CLAIM_LOG_PERIOD_MS = 3_600_000;
const MAX_ENTRIES = 10_000;

/**
 * The management tunnel address is the system's to assign, not the router's to claim (docs/api.md
 * "Routers and heartbeats"): a heartbeat's `tunnel_ip` is never written. One that differs from the
 * assigned address (cached with the token, so the comparison is a string compare) is a security
 * event: a warn line with the router and both addresses, at most once per router per period.
 */
export class TunnelClaims {
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #loggedAt = new Map<string, number>();

  constructor(logger: Logger, clock: Clock) {
    this.#logger = logger;
    this.#clock = clock;
  }

  /** `reported` is normalized by the parser; null/undefined: the router reported none. */
  check(owner: TokenOwner, reported: string | null | undefined): void {
    if (reported === null || reported === undefined || reported === owner.tunnelIp) return;
    const now = this.#clock.now().getTime();
    const last = this.#loggedAt.get(owner.routerId);
    if (last !== undefined && now - last < TUNNEL_CLAIM_LOG_PERIOD_MS) return;
    if (this.#loggedAt.size >= MAX_ENTRIES) this.#loggedAt.clear();
    this.#loggedAt.set(owner.routerId, now);
    this.#logger.warn(
      {
        event: "tunnel_ip_mismatch",
        routerId: owner.routerId,
        teamId: owner.teamId,
        reportedTunnelIp: reported,
        assignedTunnelIp: owner.tunnelIp,
      },
      "security: heartbeat reported a tunnel address other than the assigned one; ignored",
    );
  }
}
