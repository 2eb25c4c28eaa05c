import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

/**
 * A transient port forward (docs/api.md "Transient Port Forward"). Rows are kept after they close so
 * `GET .../{id}` still answers and reconciliation knows which rules once belonged to us.
 * `status`: active -> expired (time reached `expiresAt`) or revoked (DELETE before it), or failed
 * (the tunnel agent gave up applying it; `failureReason` says why).
 */
export const Forward = defineEntity({
  name: "Forward",
  tableName: "forwards",
  uniques: [
    // docs/api.md "Tunnel agent and entry point": a port is unique among the ACTIVE forwards of an entry point. The
    // database enforces it so concurrent creates cannot both win; closed rows free the port.
    { name: "forwards_active_port_unique", properties: ["entryPoint", "port"], where: "status = 'active'" },
  ],
  indexes: [{ name: "forwards_status_expires_at_index", properties: ["status", "expiresAt"] }],
  properties: {
    id: p.uuid().primary(),
    router: () => p.manyToOne(Router).deleteRule("cascade").index(),
    entryPoint: p.string().length(253),
    port: p.integer(),
    dstAddress: p.string().length(15),
    dstPort: p.integer(),
    allowOnlyCidr: p.string().length(18),
    status: p.enum(["active", "expired", "revoked", "failed"] as const).default("active"),
    expiresAt: p.datetime(),
    createdAt: p.datetime(),
    closedAt: p.datetime().nullable(),
    /** When the agent last confirmed the rule on the router (visibility; null until then). */
    appliedAt: p.datetime().nullable(),
    /** Why the agent gave up on a failed forward (no secret: the job's error text). */
    failureReason: p.string().length(500).nullable(),
    /** Who created it (docs/api.md "Audit log and webhooks" actor): `user` or `api_key`, and its id. */
    createdByType: p.string().length(16).nullable(),
    createdById: p.string().length(255).nullable(),
  },
});
/** The stored row as the schema defines it (the response body is `TForward` of `@fleet/shared`; repositories return `ForwardRecord`). */
export type TForwardEntity = InferEntity<typeof Forward>;
