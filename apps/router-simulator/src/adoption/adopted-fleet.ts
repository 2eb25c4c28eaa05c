import { tunnelIpFor } from "../tunnel-ips.ts";
import type { RouterOsDevice } from "../routeros/script/routeros-device.ts";
import { AdoptedRouter } from "./adopted-router.ts";

export interface AdoptedFleetOptions {
  /** Enrolled routers with the adoption command of their enroll answer. */
  routers: ReadonlyArray<{ router_id: string; adoption_command: string }>;
  bindTunnelIp?: boolean;
  /** `/system resource get version` of every router (default a 7.16 release). */
  version?: string;
  /** Device-mode of the routers at these indexes (home mode forbids fetch or scheduler); others allow all. */
  deviceModes?: Record<number, { fetch: boolean; scheduler: boolean }>;
  /**
   * Called for each router before it adopts: attach its SSH side here (`router.authorize` decides
   * logins from the users and keys the script creates). A returned function runs at shutdown.
   */
  onRouter?: (router: AdoptedRouter) => Promise<void | (() => Promise<void>)>;
  /** `--netns`: the router at `index` applies its WireGuard tables to a real interface. */
  onTunnelChange?: (index: number, device: RouterOsDevice) => Promise<void>;
  /** Told about a router whose adoption failed (it keeps its state; nothing is retried). */
  onError?: (router: AdoptedRouter, error: Error) => void;
}

export interface RunningAdoptedFleet {
  routers: AdoptedRouter[];
  summary(): { routers: number; adopted: number; heartbeats: number; failed: number };
  close(): Promise<void>;
}

/**
 * `npm run simulate -- --routers N --adopt` (docs/routeros.md "Simulator"): every router pastes its
 * adoption command into its simulated terminal; from then on its own scheduler posts heartbeats.
 */
export const startAdoptedFleet = async (o: AdoptedFleetOptions): Promise<RunningAdoptedFleet> => {
  const routers: AdoptedRouter[] = [];
  const adopted = new Set<AdoptedRouter>();
  const cleanups: Array<() => Promise<void>> = [];
  for (const [index, enrolled] of o.routers.entries()) {
    const router = new AdoptedRouter({
      index,
      routerId: enrolled.router_id,
      adoptionCommand: enrolled.adoption_command,
      tunnelIp: tunnelIpFor(index),
      bindTunnelIp: o.bindTunnelIp ?? true,
      ...(o.version ? { version: o.version } : {}),
      ...(o.deviceModes?.[index] ? { deviceMode: o.deviceModes[index] } : {}),
      ...(o.onTunnelChange
        ? { onTunnelChange: (device: RouterOsDevice) => o.onTunnelChange?.(index, device) ?? Promise.resolve() }
        : {}),
    });
    routers.push(router);
    const cleanup = await o.onRouter?.(router);
    if (cleanup) cleanups.push(cleanup);
    try {
      await router.adopt();
      adopted.add(router);
    } catch (error) {
      o.onError?.(router, error as Error);
    }
  }
  return {
    routers,
    summary: () => ({
      routers: routers.length,
      adopted: adopted.size,
      heartbeats: routers.reduce((n, r) => n + r.stats.ok, 0),
      failed: routers.reduce((n, r) => n + r.stats.failed, 0),
    }),
    close: async () => {
      for (const router of routers) router.stop();
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    },
  };
};
