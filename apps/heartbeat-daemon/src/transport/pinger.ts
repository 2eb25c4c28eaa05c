import type { Clock } from "@fleet/shared";
import type { WebSocket } from "ws";
import type { ConnectionRegistry } from "./connections.ts";

/**
 * The ping round is cut into slices this far apart: 15,000 sockets over a 30 s period are 500
 * cheap visits a second; a finer tick would only wake the process more often.
 */
const PING_TICK_MS = 1_000;

/** What the pinger does with a socket on its visit (once per period). */
export type PingVisit = "ok" | "ping" | "terminate";

/** A peer's pong state, read by `pingVerdict`: the transport clock's ms of its last pong and of the ping not yet answered. */
export interface Liveness {
  pongAt: number;
  /** When the outstanding ping went out; null when none is. */
  pingedAt: number | null;
}

/**
 * A frame proves a peer is there as well as a pong does, so a router that beats is never pinged: at
 * the cadence the pinger writes nothing. A peer quiet for 1.5 periods (the margin keeps a router
 * beating once per period out of reach of the round's jitter) is pinged; if neither a pong nor a
 * frame has come by the next visit (one period later), it is terminated. A frozen peer goes 2.5 to
 * 3.5 periods after its last frame. `lastFrameAt`: the same clock's ms of its last frame (any frame, refused
 * ones included). Updates `peer.pingedAt`.
 */
export const pingVerdict = (peer: Liveness, lastFrameAt: number, now: number, periodMs: number): PingVisit => {
  const heardAt = Math.max(lastFrameAt, peer.pongAt);
  if (peer.pingedAt !== null) {
    if (heardAt < peer.pingedAt) return "terminate";
    peer.pingedAt = null;
  }
  if (now - heardAt < 1.5 * periodMs) return "ok";
  peer.pingedAt = now;
  return "ping";
};

/**
 * Dead peers (see `pingVerdict`). The sockets are visited in slices spread over the period: visiting
 * 15,000 sockets in one go would stall the event loop (and every ack behind it). `visit` returns the
 * verdict for a socket, or undefined when it is not a peer (yet); `clock` must be the one of the
 * peers' pongs and frames. Returns the stop function.
 */
export const startPinger = (
  registry: ConnectionRegistry,
  periodMs: number,
  clock: Clock,
  visit: (ws: WebSocket, now: number) => PingVisit | undefined,
): (() => void) => {
  const tickMs = Math.min(PING_TICK_MS, periodMs);
  const ticksPerPeriod = Math.max(1, Math.floor(periodMs / tickMs));
  let cursor = registry.all();
  let perTick = 1;
  const timer = setInterval(() => {
    const now = clock.nowMs();
    for (let visited = 0; visited < perTick; visited++) {
      const next = cursor.next();
      if (next.done) {
        // A new round: size the slices so this round takes one period.
        cursor = registry.all();
        perTick = Math.max(1, Math.ceil(registry.count / ticksPerPeriod));
        return;
      }
      const ws = next.value;
      const verdict = visit(ws, now);
      if (verdict === "terminate") ws.terminate();
      else if (verdict === "ping") ws.ping();
    }
  }, tickMs);
  timer.unref();
  return () => clearInterval(timer);
};
