import path from "node:path";
import { startAdoptedFleet, type RunningAdoptedFleet } from "../adoption/adopted-fleet.ts";
import { loadOrCreateHostKey } from "../routeros/simulated-routeros.ts";
import { createNetnsNetwork, type NetnsNetwork } from "./netns-network.ts";
import { attachNetnsRouter, type NetnsRouter } from "./netns-router.ts";

export interface NetnsFleetOptions {
  /** Enrolled routers with the adoption command of their enroll answer (their tunnel_ip assigned by the system). */
  routers: ReadonlyArray<{ router_id: string; adoption_command: string }>;
  /** The agent's TUNNEL_SSH_PORT: the SSH server in each namespace listens there. */
  sshPort: number;
  /** Prefix of namespace and interface names, unique to the user of the machine. */
  prefix: string;
  /** Picks the transit networks (10.x.y.0/24), so concurrent runs do not collide. */
  block: number;
  /** Where host keys are kept (as without --netns). */
  stateDir: string;
  onError?: (index: number, error: Error) => void;
}

export interface RunningNetnsFleet {
  fleet: RunningAdoptedFleet;
  network: NetnsNetwork;
  routers: NetnsRouter[];
  close(): Promise<void>;
}

/**
 * `npm run simulate -- --routers N --adopt --netns` (docs/routeros.md "Simulator"): each router
 * lives in its own network namespace behind one NAT namespace, runs its adoption script's
 * WireGuard commands as a real wireguard-go interface there, and serves SSH and its LAN inside the
 * namespace. Needs root and wireguard-go. Everything is removed on close (and a later run sweeps
 * namespaces a crashed run left behind).
 */
export const startNetnsFleet = async (o: NetnsFleetOptions): Promise<RunningNetnsFleet> => {
  const network = await createNetnsNetwork({ prefix: o.prefix, block: o.block });
  const routers: NetnsRouter[] = [];
  let fleet: RunningAdoptedFleet | undefined;
  const close = async () => {
    await fleet?.close();
    for (const router of routers) await router.close().catch(() => {});
    await network.close();
  };
  try {
    for (let i = 0; i < o.routers.length; i++) {
      const namespace = await network.addRouter(i);
      routers.push(
        attachNetnsRouter({
          namespace,
          linkName: `${o.prefix.slice(0, 4)}${process.pid.toString(36).slice(-4)}w${i}`.slice(0, 15),
          sshPort: o.sshPort,
          hostKey: loadOrCreateHostKey(path.join(o.stateDir, "host-keys", `netns-${o.routers[i]?.router_id}.key`)),
        }),
      );
    }
    fleet = await startAdoptedFleet({
      routers: o.routers,
      bindTunnelIp: false,
      onTunnelChange: async (index, device) => {
        await routers[index]?.apply(device);
      },
      onError: (router, error) => o.onError?.(fleet?.routers.indexOf(router) ?? -1, error),
    });
  } catch (error) {
    await close();
    throw error;
  }
  return { fleet, network, routers, close };
};
