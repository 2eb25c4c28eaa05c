import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { TOKEN_TO_LIVENESS_TRIGGER } from "../migrations/20261128-034-liveness-token.migration.ts";
import { ROUTER_LIST_INDEX } from "../migrations/20261129-070-router-list.migration.ts";
import { ROUTER_SEARCH_INDEX } from "../migrations/20261201-180-router-search.migration.ts";
import { Organization } from "./organization.entity.ts";
import { Team } from "./team.entity.ts";

/**
 * A managed router (docs/api.md "Router"). Reported facts (identity, version, metadata) are written
 * by the heartbeat daemon's batched flush only when they change; what changes every heartbeat
 * (pulse, last seen, uptime) lives in `router_liveness`. `userMetadata` holds keys set through the API.
 */
export const Router = defineEntity({
  name: "Router",
  tableName: "routers",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade").index(),
    team: () => p.manyToOne(Team).deleteRule("cascade"),
    name: p.string().length(100).default(""),
    identity: p.string().length(255).default(""),
    serialNumber: p.string().length(255).default(""),
    softwareVersion: p.string().length(100).default(""),
    softwareId: p.string().length(100).default(""),
    model: p.string().length(100).default(""),
    boardName: p.string().length(100).default(""),
    hardwareboard: p.boolean().default(false),
    /** Assigned at enrollment inside TUNNEL_NETWORK; one router per address (docs/api.md "Routers and heartbeats"). */
    tunnelIp: p.string().length(45).nullable().unique(),
    reportedMetadata: p.json<Record<string, unknown>>().default("{}"),
    userMetadata: p.json<Record<string, unknown>>().default("{}"),
    /** Set through the API (docs/api.md "Routers"); alert rules and maintenance windows select by them. */
    tags: p.json<string[]>().default("[]"),
    /** SHA-256 (hex) of the heartbeat token; the token itself is shown once at enrollment. */
    heartbeatTokenHash: p.string().length(64).unique(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [
    // Keyset pages of a team's fleet in name order (docs/api.md "Listing a fleet").
    ROUTER_LIST_INDEX,
    // `q`: substring search served by trigrams (docs/api.md "Listing a fleet").
    ROUTER_SEARCH_INDEX,
  ],
  triggers: [
    {
      // The copy of the token in `router_liveness` follows the router's token in the same
      // transaction (migration 034): the steady flush checks a heartbeat's token there.
      ...TOKEN_TO_LIVENESS_TRIGGER,
      timing: "after",
      events: ["update"],
      forEach: "row",
    },
  ],
});
export type TRouter = InferEntity<typeof Router>;
