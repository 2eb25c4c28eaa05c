import { randomInt } from "node:crypto";
import { TunnelIpTakenError } from "@fleet/db";
import { AppError, isTunnelHostAddress, type TunnelNetwork, tunnelHostAt, tunnelHostCount } from "@fleet/shared";

/** What assignment needs from the router store. */
export interface TunnelAddressStore {
  /** Held by a router, or quarantined at `now` after its router was removed. */
  tunnelIpHeld(tunnelIp: string, now: Date): Promise<boolean>;
  tunnelIpsInUse(now: Date): Promise<Set<string>>;
}

/** Random picks before the allocator lists the used addresses (a nearly full or tiny network). */
const RANDOM_PICKS = 16;

/**
 * The operator's address from the enrollment body, checked before anything is written: a
 * canonical host address of TUNNEL_NETWORK (422 naming `tunnel_ip`) that no router holds (409).
 * The insert's unique index still decides a race between two enrollments.
 */
export const checkRequestedTunnelIp = async (
  store: TunnelAddressStore,
  network: TunnelNetwork,
  tunnelIp: string,
  now: Date,
): Promise<string> => {
  if (!isTunnelHostAddress(network, tunnelIp)) {
    throw new AppError("validation_failed", "tunnel_ip must lie inside the management tunnel network.", {
      fields: { tunnel_ip: [`must be a host address inside TUNNEL_NETWORK ${network.cidr}`] },
    });
  }
  if (network.reserved?.includes(tunnelIp)) {
    throw new AppError("validation_failed", "tunnel_ip is the management tunnel hub's own address.", {
      fields: { tunnel_ip: ["must not be TUNNEL_HUB_ADDRESS, the hub's own address"] },
    });
  }
  if (await store.tunnelIpHeld(tunnelIp, now)) throw tunnelIpTaken(tunnelIp);
  return tunnelIp;
};

export const tunnelIpTaken = (tunnelIp: string) =>
  new AppError(
    "conflict",
    `The tunnel address ${tunnelIp} is already assigned to another router, or quarantined after its router was removed (TUNNEL_ADDRESS_QUARANTINE_DAYS).`,
    {
      extra: { field: "tunnel_ip" },
    },
  );

/**
 * Assigns a free address of the network to a new router (docs/api.md "Routers and heartbeats"):
 * random host addresses (network and broadcast skipped) until `insert` takes one; the unique index
 * on routers.tunnel_ip makes concurrent enrollments safe, a collision just picks again. When random
 * picks keep colliding, the free addresses are listed and tried in order; none left: 503. A
 * quarantined address (its router was removed) makes the insert refuse it like a held one.
 */
export const insertWithAllocatedTunnelIp = async <T>(
  store: TunnelAddressStore,
  network: TunnelNetwork,
  insert: (tunnelIp: string) => Promise<T>,
  now: Date,
): Promise<T> => {
  const hosts = tunnelHostCount(network);
  for (let attempt = 0; attempt < RANDOM_PICKS; attempt++) {
    const candidate = tunnelHostAt(network, randomInt(hosts));
    if (network.reserved?.includes(candidate)) continue;
    const result = await tryInsert(insert, candidate);
    if (result.ok) return result.value;
  }
  const used = await store.tunnelIpsInUse(now);
  for (let index = 0; index < hosts; index++) {
    const candidate = tunnelHostAt(network, index);
    if (used.has(candidate) || network.reserved?.includes(candidate)) continue;
    const result = await tryInsert(insert, candidate);
    if (result.ok) return result.value;
  }
  throw new AppError(
    "capacity_exhausted",
    `Every address of the management tunnel network ${network.cidr} is assigned to a router. Remove a router or widen TUNNEL_NETWORK.`,
  );
};

const tryInsert = async <T>(
  insert: (tunnelIp: string) => Promise<T>,
  tunnelIp: string,
): Promise<{ ok: true; value: T } | { ok: false }> => {
  try {
    return { ok: true, value: await insert(tunnelIp) };
  } catch (error) {
    if (error instanceof TunnelIpTakenError) return { ok: false };
    throw error;
  }
};
