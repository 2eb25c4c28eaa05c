import { TokenAuthenticator } from "../transport/token-auth.ts";
import type { DaemonContext, Wired } from "./wiring.ts";

export interface TokenAuthServices {
  /** Heartbeat token -> router, cached by hash, on the transport's clock. */
  auth: TokenAuthenticator;
}

/** Token authentication (docs/architecture.md "How a heartbeat travels", step 2). */
export const wireTokenAuth = ({ config, store, transportClock }: DaemonContext): Wired<TokenAuthServices> => {
  // HTTP heartbeats come once per interval, always past the TTL: they may use a cached owner a few
  // intervals old while it is re-checked in the background (see TokenAuthenticator.authenticate).
  // An HTTP router's token is re-checked in the background once per half of that window, not at
  // every heartbeat (a re-check per heartbeat is a token lookup in PostgreSQL at every beat).
  const staleMs = Math.max(600_000, 3 * config.intervalMs);
  const auth = new TokenAuthenticator({
    lookup: store,
    ttlMs: config.tuning.tokenCacheTtlMs,
    staleMs,
    recheckAfterMs: staleMs / 2,
    gatherMs: config.tuning.tokenGatherMs,
    clock: transportClock,
  });
  return { services: { auth }, schedules: [], close: async () => {} };
};
