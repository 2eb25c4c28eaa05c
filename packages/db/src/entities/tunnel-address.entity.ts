import { defineEntity, type InferEntity, p } from "@mikro-orm/core";

/**
 * What the system remembers of a tunnel address (docs/api.md "Routers and heartbeats"): the last
 * router and organization there, the SSH host key last pinned at it, and, once that router was
 * removed, the quarantine that keeps the address from any other router until it ends or the
 * offboarding job confirmed the device was cleaned. No foreign keys: the row outlives its router.
 */
export const TunnelAddress = defineEntity({
  name: "TunnelAddress",
  tableName: "tunnel_addresses",
  properties: {
    tunnelIp: p.string().length(45).primary(),
    routerId: p.uuid().index(),
    organizationId: p.uuid(),
    /** `SHA256:<base64>`; null when none was pinned or an operator cleared it. */
    hostKeyFingerprint: p.string().length(100).nullable(),
    pinnedAt: p.datetime().nullable(),
    removedAt: p.datetime().nullable(),
    quarantinedUntil: p.datetime().nullable(),
    /** The offboarding job removed what adoption installed: the quarantine no longer holds. */
    offboardedAt: p.datetime().nullable(),
  },
});
export type TTunnelAddress = InferEntity<typeof TunnelAddress>;
