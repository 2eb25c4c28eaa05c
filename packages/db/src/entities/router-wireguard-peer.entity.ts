import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

/**
 * A router's WireGuard key, bound by its first heartbeat after adoption (docs/routeros.md
 * "The management tunnel"). One key per router and one router per key; re-adoption deletes the row,
 * removal deletes it with the router. The hub's peer set is exactly these rows.
 */
export const RouterWireguardPeer = defineEntity({
  name: "RouterWireguardPeer",
  tableName: "router_wireguard_peers",
  properties: {
    router: () => p.manyToOne(Router).primary().deleteRule("cascade"),
    /** base64 of the 32-byte public key, canonical (one spelling per key). */
    publicKey: p.string().length(44).unique(),
    boundAt: p.datetime(),
    /** The hub's latest handshake with the router (null: none yet). */
    handshakeAt: p.datetime().nullable(),
    /**
     * The last `tunnel_status` audited (`router.tunnel.up`/`down`): up = a handshake and an answer at
     * the router's tunnel address through the tunnel, both under 3 minutes old.
     */
    up: p.boolean().default(false),
    /** `ip:port` the hub last saw the router's tunnel from (its NAT's mapping); primes a restarted hub. */
    endpoint: p.string().length(64).nullable(),
    /** The router's latest answer at its tunnel address through the tunnel, probed by the hub (null: none). */
    answeredAt: p.datetime().nullable(),
  },
});
export type TRouterWireguardPeer = InferEntity<typeof RouterWireguardPeer>;
