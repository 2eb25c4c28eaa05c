import type { WebSocket } from "ws";
import type { ConnectionRegistry } from "./connections.ts";

/** The ping round is cut into slices this far apart. */
const PING_TICK_MS = 50;

/**
 * Dead peers: a socket that answered neither a ping nor sent a frame for a whole period goes.
 * The sockets are visited in slices spread over the period: pinging 15,000 sockets in one go would
 * stall the event loop (and every ack behind it) for a few hundred milliseconds. `isAlive` reads and
 * clears the socket's flag (set again by a pong or a frame). Returns the stop function.
 */
export const startPinger = (
  registry: ConnectionRegistry,
  periodMs: number,
  takeAlive: (ws: WebSocket) => boolean | undefined,
): (() => void) => {
  const tickMs = Math.min(PING_TICK_MS, periodMs);
  const ticksPerPeriod = Math.max(1, Math.floor(periodMs / tickMs));
  let cursor = registry.all();
  let perTick = 1;
  const timer = setInterval(() => {
    for (let visited = 0; visited < perTick; visited++) {
      const next = cursor.next();
      if (next.done) {
        // A new round: size the slices so this round takes one period.
        cursor = registry.all();
        perTick = Math.max(1, Math.ceil(registry.count / ticksPerPeriod));
        return;
      }
      const ws = next.value;
      const alive = takeAlive(ws);
      if (alive === undefined) continue;
      if (!alive) {
        ws.terminate();
        continue;
      }
      ws.ping();
    }
  }, tickMs);
  timer.unref();
  return () => clearInterval(timer);
};
