import type { TokenOwner } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import type { Logger } from "pino";
import { type FrameRefusal, parseHeartbeat, toWrite } from "./heartbeat-frame.ts";
import type { HeartbeatWriter } from "./heartbeat-writer.ts";
import { TunnelClaims } from "./tunnel-claims.ts";
import type { WireguardBinder } from "./wireguard-binder.ts";
import type { AdoptionSpender } from "./adoption-spender.ts";

export interface HeartbeatIntakeOptions {
  writer: HeartbeatWriter;
  clock: Clock;
  logger: Logger;
  /** Binds a reported WireGuard key off the heartbeat's path (docs/routeros.md "The management tunnel"). */
  binder?: WireguardBinder;
  /** Spends an unspent adoption URL with the token's first heartbeat, before the ack. */
  spender?: AdoptionSpender;
  /** HEALTH_PING_TARGET: a ping naming another target is refused like any bad field (docs/api.md "Health"). */
  pingTarget?: string;
}

const PING_TARGET_ISSUE = "must be the ping target the adoption script was given";

/** A cached owner as the intake marks it (the writer defers the flush of a router beating on time). */
type Beating = TokenOwner & { lastSeenMs?: number };

/**
 * What both transports do with one heartbeat's text once the router is known: parse it with the one
 * parser, compare a reported tunnel address with the assigned one (never written), and hand the
 * write to the batcher. Returns null when accepted (the caller acks), else
 * the refusal to answer with; a refused heartbeat writes nothing. Per-heartbeat counters (docs/operations.md
 * "Metrics and probes") belong here: both transports pass through this one method.
 */
export class HeartbeatIntake {
  readonly #o: HeartbeatIntakeOptions;
  readonly #tunnelClaims: TunnelClaims;

  constructor(options: HeartbeatIntakeOptions) {
    this.#o = options;
    this.#tunnelClaims = new TunnelClaims(options.logger, options.clock);
  }

  accept(owner: TokenOwner, text: string, peer: string | null): FrameRefusal | null {
    const parsed = parseHeartbeat(text);
    if (!parsed.ok) return parsed;
    const target = parsed.frame.ping?.target;
    if (typeof target === "string" && this.#o.pingTarget !== undefined && target !== this.#o.pingTarget)
      return {
        ok: false,
        kind: "schema",
        message: `Not a valid heartbeat: ping.target ${PING_TARGET_ISSUE}.`,
        errors: { "ping.target": [PING_TARGET_ISSUE] },
      };
    this.#tunnelClaims.check(owner, parsed.frame.tunnel_ip);
    this.#o.binder?.check(owner, parsed.frame.wireguard_public_key);
    const write = toWrite(owner, parsed.frame, this.#o.clock.now(), peer);
    // The owner is the token cache's entry for the router (one object per cached token, shared by
    // its connections): it remembers when this process last took a heartbeat of the router.
    const beating = owner as Beating;
    const previous = beating.lastSeenMs;
    beating.lastSeenMs = write.seenAt.getTime();
    this.#o.writer.enqueue(write, previous);
    const frame = parsed.frame;
    // The frame is the health report (its resources, interfaces and ping): no object of its own.
    if (frame.resources || frame.interfaces || frame.ping)
      this.#o.writer.observeHealth(owner.routerId, beating.lastSeenMs, frame);
    return null;
  }

  /**
   * After `accept`: undefined when the ack may go at once (nearly always), else what it waits for:
   * the write that spends the router's adoption URL (a token's first heartbeat).
   */
  beforeAck(owner: TokenOwner): Promise<void> | undefined {
    return this.#o.spender?.spend(owner);
  }
}
