import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

/**
 * Temporary access to a router itself (docs/api.md "Temporary router access"): a temporary user on
 * the router and an entry-point port relayed to the router's own service port. Ports come from the
 * same range as forwards' and are unique among active ones of both; the password is never stored.
 */
export const RouterAccess = defineEntity({
  name: "RouterAccess",
  tableName: "router_access",
  indexes: [
    { name: "router_access_router_id_index", properties: ["router"] },
    { name: "router_access_status_expires_at_index", properties: ["status", "expiresAt"] },
  ],
  uniques: [
    { name: "router_access_active_port_unique", properties: ["entryPoint", "port"], where: `"status" = 'active'` },
  ],
  properties: {
    id: p.uuid().primary(),
    router: () => p.manyToOne(Router).deleteRule("cascade"),
    entryPoint: p.string().length(253),
    port: p.integer(),
    service: p.enum(["winbox", "ssh", "webfig"] as const),
    level: p.enum(["read", "full"] as const),
    username: p.string().length(32),
    allowOnlyCidr: p.string().length(18),
    status: p.enum(["active", "expired", "revoked"] as const).default("active"),
    expiresAt: p.datetime(),
    createdAt: p.datetime(),
    closedAt: p.datetime().nullable(),
    appliedAt: p.datetime().nullable(),
    createdByType: p.string().length(16).nullable(),
    createdById: p.string().length(255).nullable(),
  },
});
export type TRouterAccess = InferEntity<typeof RouterAccess>;
