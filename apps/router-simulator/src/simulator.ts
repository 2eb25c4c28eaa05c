import type { EnrolledRouter } from "./fleet-api.ts";
import { type RouterBehaviour, SimulatedRouter } from "./simulated-router.ts";
import { tunnelIpFor } from "./tunnel-ips.ts";

export { type RouterBehaviour, SimulatedRouter } from "./simulated-router.ts";
export { tunnelIpFor } from "./tunnel-ips.ts";

export interface SimulatorOptions {
  /** Enrolled routers to run (from the API or a token file); each at its assigned `tunnel_ip` when known. */
  routers: readonly EnrolledRouter[];
  /** Each router's heartbeat identity (default `sim-0001`, ... by index). */
  identityOf?: (router: EnrolledRouter, index: number) => string;
  heartbeatUrl: string;
  /** The first `silent` routers go silent, the next `flap` flap, the next `reboot` reboot. */
  silent?: number;
  flap?: number;
  reboot?: number;
  bindTunnelIp?: boolean;
  /** Offline/online phase length of flapping and rebooting routers, in heartbeat intervals. */
  phaseIntervals?: number;
  /** Simultaneous WebSocket handshakes while starting (a big fleet must not stampede). */
  connectConcurrency?: number;
  /**
   * Called for each router once it runs: attach more of the router here (the RouterOS SSH
   * simulation on `router.tunnelIp`). A returned function is called at shutdown.
   */
  onRouter?: (router: SimulatedRouter) => Promise<void | (() => Promise<void>)>;
}

export interface RunningSimulator {
  routers: SimulatedRouter[];
  summary(): { routers: number; online: number; acks: number; errors: number; refused: number };
  close(): Promise<void>;
}

const behaviourFor = (index: number, o: SimulatorOptions): RouterBehaviour => {
  const silent = o.silent ?? 0;
  const flap = o.flap ?? 0;
  const reboot = o.reboot ?? 0;
  if (index < silent) return "silent";
  if (index < silent + flap) return "flap";
  if (index < silent + flap + reboot) return "reboot";
  return "steady";
};

/** Runs a fleet of simulated routers against a heartbeat daemon (docs/routeros.md "Simulator"). */
export const startSimulator = async (o: SimulatorOptions): Promise<RunningSimulator> => {
  const routers = o.routers.map(
    (enrolled, index) =>
      new SimulatedRouter({
        index,
        routerId: enrolled.router_id,
        token: enrolled.heartbeat_token,
        heartbeatUrl: o.heartbeatUrl,
        tunnelIp: enrolled.tunnel_ip ?? tunnelIpFor(index),
        ...(o.identityOf ? { identity: o.identityOf(enrolled, index) } : {}),
        bindTunnelIp: o.bindTunnelIp ?? true,
        behaviour: behaviourFor(index, o),
        ...(o.phaseIntervals ? { phaseIntervals: o.phaseIntervals } : {}),
      }),
  );
  const cleanups: Array<() => Promise<void>> = [];
  const concurrency = o.connectConcurrency ?? 200;
  for (let i = 0; i < routers.length; i += concurrency) {
    const wave = routers.slice(i, i + concurrency);
    for (const router of wave) {
      const cleanup = await o.onRouter?.(router);
      if (cleanup) cleanups.push(cleanup);
      router.start();
    }
    // Let this wave's handshakes go out before the next.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    routers,
    summary: () => ({
      routers: routers.length,
      online: routers.filter((r) => r.online).length,
      acks: routers.reduce((n, r) => n + r.stats.acks, 0),
      errors: routers.reduce((n, r) => n + r.stats.errors, 0),
      refused: routers.filter((r) => r.stats.refused).length,
    }),
    close: async () => {
      for (const router of routers) router.stop();
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    },
  };
};
