import { WireguardPeersRepository } from "@fleet/db";
import type { HeartbeatWriter } from "../heartbeats/heartbeat-writer.ts";
import { WireguardBinder } from "../heartbeats/wireguard-binder.ts";
import { AdoptionSpender } from "../heartbeats/adoption-spender.ts";
import { type HeartbeatServer, startHeartbeatServer } from "../transport/heartbeat-server.ts";
import type { TokenAuthenticator } from "../transport/token-auth.ts";
import type { DaemonContext, Wired } from "./wiring.ts";

export interface TransportsServices {
  /** WebSocket and HTTP heartbeats on one port, with /healthz, /readyz and /metrics. */
  server: HeartbeatServer;
}

/**
 * The transports (docs/architecture.md "How a heartbeat travels", steps 2, 3 and 6): the server,
 * the WireGuard key binder, and the status feed's removals and re-adoptions, which revoke tokens
 * and close sockets at once.
 */
export const wireTransports = async (
  { config, db, logger, clock, transportClock, feed, store }: DaemonContext,
  deps: { auth: TokenAuthenticator; writer: HeartbeatWriter; reusePort: boolean },
): Promise<Wired<TransportsServices>> => {
  const { auth, writer } = deps;
  const binder = new WireguardBinder({
    store: new WireguardPeersRepository(db),
    feed,
    clock,
    logger: logger.child({ part: "wireguard-keys" }),
  });
  const spender = new AdoptionSpender({ store, clock, logger: logger.child({ part: "adoption" }) });
  let migrated = false;
  const server = await startHeartbeatServer({
    binder,
    spender,
    host: config.host,
    port: config.port,
    reusePort: deps.reusePort,
    intervalMs: config.intervalMs,
    tuning: config.tuning,
    auth,
    writer,
    clock,
    transportClock,
    logger,
    metricsToken: config.metricsToken,
    pingTarget: config.healthPingTarget,
    isReady: async () => {
      if (!migrated) migrated = await db.isReady();
      if (!migrated) return false;
      await db.ping();
      return true;
    },
  });
  const unsubscribe = feed.subscribe((event) => {
    if (event.type !== "removed") return;
    auth.revokeRouter(event.router_id);
    writer.forget(event.router_id);
    server.closeRouter(event.router_id, "router removed; heartbeat token revoked");
  });
  // Re-adoption (docs/routeros.md "Adoption"): the old token stops working in every process at
  // once. The router's cached token is dropped (its next heartbeat is checked against the
  // database) and its sockets closed; a router with the new token simply reconnects. A pending
  // heartbeat stays: the flush writes it only if its token is still the router's.
  const unsubscribeTokens = feed.onTokenReplaced((routerId) => {
    auth.forgetRouter(routerId);
    server.closeRouter(routerId, "heartbeat token replaced");
  });
  return {
    services: { server },
    schedules: [],
    close: async () => {
      await server.close();
      await binder.settled();
      unsubscribe();
      unsubscribeTokens();
    },
  };
};
