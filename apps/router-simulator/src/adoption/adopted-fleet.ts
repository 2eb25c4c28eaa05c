import type { DeviceSnapshot } from "../routeros/script/routeros-device.ts";
import { tunnelIpFor } from "../tunnel-ips.ts";
import type { RouterOsDevice } from "../routeros/script/routeros-device.ts";
import type { HealthBehaviour } from "../routeros/health/simulated-health.ts";
import { AdoptedRouter } from "./adopted-router.ts";
import type { RouterOsSystemOptions } from "../routeros/script/routeros-device-system.ts";

/** A router to run: freshly enrolled (with its adoption command) or saved by an earlier run (with its device). */
export interface AdoptedFleetEntry {
  router_id: string;
  /** The enroll answer's adoption command; a saved router has none. */
  adoption_command?: string;
  /** The tunnel address the system assigned (default: a distinct 127.x address per index). */
  tunnel_ip?: string;
  /** `/system identity` (default `sim-0001`, ...). */
  identity?: string;
  /** The configuration an earlier run saved: the router boots with it instead of adopting. */
  device?: DeviceSnapshot;
  /** `/system resource get version` an earlier run saved (a firmware change upgrades it). */
  version?: string;
}

export interface AdoptedFleetOptions {
  /** Enrolled routers with the adoption command of their enroll answer, or saved ones. */
  routers: ReadonlyArray<AdoptedFleetEntry>;
  bindTunnelIp?: boolean;
  /** `/system resource get version` of every router (default a 7.16 release). */
  version?: string;
  /** Device-mode of the routers at these indexes (home mode forbids fetch or scheduler); others allow all. */
  deviceModes?: Record<number, { fetch: boolean; scheduler: boolean }>;
  /** Reboot time and tunnel breaking of the router at `index` (routeros-device-system.ts). */
  system?: (index: number) => RouterOsSystemOptions;
  /** `--overload`, `--overheat`, `--lossy`: the health behaviour of the router at `index`. */
  healthOf?: (index: number) => HealthBehaviour;
  /**
   * Called for each router before it adopts: attach its SSH side here (`router.authorize` decides
   * logins from the users and keys the script creates). A returned function runs at shutdown.
   */
  onRouter?: (router: AdoptedRouter) => Promise<void | (() => Promise<void>)>;
  /** `--netns`: the router at `index` applies its WireGuard tables to a real interface. */
  onTunnelChange?: (index: number, device: RouterOsDevice) => Promise<void>;
  /** Told about a router whose adoption failed (it keeps its state; nothing is retried). */
  onError?: (router: AdoptedRouter, error: Error) => void;
  /**
   * A saved router whose first heartbeat was refused (401: the system no longer knows its token) is
   * replaced by the router this answers (enrolled again), which then adopts. Without it, it stays refused.
   */
  reenroll?: (index: number, refused: AdoptedRouter) => Promise<AdoptedFleetEntry>;
}

export interface RunningAdoptedFleet {
  routers: AdoptedRouter[];
  summary(): {
    routers: number;
    adopted: number;
    resumed: number;
    reenrolled: number;
    heartbeats: number;
    failed: number;
  };
  /** What a later run needs to bring these routers back (docs/routeros.md "Simulator"). */
  saved(): AdoptedFleetEntry[];
  close(): Promise<void>;
}

/**
 * `npm run simulate -- --routers N --adopt` (docs/routeros.md "Simulator"): every router pastes its
 * adoption command into its simulated terminal, or boots with the configuration an earlier run
 * saved; from then on its own scheduler posts heartbeats.
 */
export const startAdoptedFleet = async (o: AdoptedFleetOptions): Promise<RunningAdoptedFleet> => {
  const routers: AdoptedRouter[] = [];
  const adopted = new Set<AdoptedRouter>();
  const cleanups = new Map<AdoptedRouter, () => Promise<void>>();
  let resumed = 0;
  let reenrolled = 0;

  const create = async (index: number, entry: AdoptedFleetEntry): Promise<AdoptedRouter> => {
    const router = new AdoptedRouter({
      index,
      routerId: entry.router_id,
      adoptionCommand: entry.adoption_command ?? "",
      tunnelIp: entry.tunnel_ip ?? tunnelIpFor(index),
      bindTunnelIp: o.bindTunnelIp ?? true,
      ...(entry.identity ? { identity: entry.identity } : {}),
      ...(entry.version || o.version ? { version: entry.version ?? o.version } : {}),
      ...(o.deviceModes?.[index] ? { deviceMode: o.deviceModes[index] } : {}),
      ...(o.system ? { system: o.system(index) } : {}),
      ...(o.healthOf ? { health: o.healthOf(index) } : {}),
      ...(o.onTunnelChange
        ? { onTunnelChange: (device: RouterOsDevice) => o.onTunnelChange?.(index, device) ?? Promise.resolve() }
        : {}),
    });
    const cleanup = await o.onRouter?.(router);
    if (cleanup) cleanups.set(router, cleanup);
    return router;
  };
  const adopt = async (router: AdoptedRouter): Promise<void> => {
    try {
      await router.adopt();
      adopted.add(router);
    } catch (error) {
      o.onError?.(router, error as Error);
    }
  };
  const retire = async (router: AdoptedRouter): Promise<void> => {
    router.stop();
    await cleanups
      .get(router)?.()
      .catch(() => {});
    cleanups.delete(router);
  };

  for (const [index, entry] of o.routers.entries()) {
    let router = await create(index, entry);
    if (!entry.device) {
      await adopt(router);
    } else if ((await router.resume(entry.device)) === 401 && o.reenroll) {
      await retire(router);
      router = await create(index, await o.reenroll(index, router));
      reenrolled += 1;
      await adopt(router);
    } else {
      resumed += 1;
      adopted.add(router);
    }
    routers.push(router);
  }
  return {
    routers,
    summary: () => ({
      routers: routers.length,
      adopted: adopted.size,
      resumed,
      reenrolled,
      heartbeats: routers.reduce((n, r) => n + r.stats.ok, 0),
      failed: routers.reduce((n, r) => n + r.stats.failed, 0),
    }),
    saved: () =>
      routers
        .filter((r) => adopted.has(r))
        .map((r) => ({
          router_id: r.routerId,
          tunnel_ip: r.tunnelIp,
          identity: r.device.identity,
          device: r.device.snapshot(),
          version: r.device.version,
        })),
    close: async () => {
      for (const router of routers) router.stop();
      for (const cleanup of [...cleanups.values()].reverse()) await cleanup().catch(() => {});
    },
  };
};
