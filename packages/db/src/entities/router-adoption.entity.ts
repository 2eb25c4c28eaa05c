import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

/**
 * A one-time adoption script URL (docs/routeros.md "Adoption"): the SHA-256 of its token, the router it
 * adopts, and when it stops working: at `expiresAt`, or once its first heartbeat spent it (`spentAt`,
 * or, for URLs used before that column, the router's last heartbeat).
 */
export const RouterAdoption = defineEntity({
  name: "RouterAdoption",
  tableName: "router_adoptions",
  properties: {
    tokenHash: p.string().length(64).primary(),
    router: () => p.manyToOne(Router).deleteRule("cascade").index(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    /** Heartbeats at or after this instant use the URL up. */
    countsFrom: p.datetime(),
    /** Written by the heartbeat daemon before it acknowledges the token's first heartbeat. */
    spentAt: p.datetime().nullable(),
  },
});
export type TRouterAdoption = InferEntity<typeof RouterAdoption>;
