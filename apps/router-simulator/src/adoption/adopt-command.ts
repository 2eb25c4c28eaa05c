import type { SimulatorArgs } from "../cli-args.ts";
import { type EnrolledRouter, FleetApi } from "../fleet-api.ts";
import { type RouterOsHookOptions, routerOsHook } from "../routeros/routeros-hook.ts";
import { startAdoptedFleet } from "./adopted-fleet.ts";

/**
 * `npm run simulate -- --routers N --adopt` (docs/routeros.md "Simulator"): enroll N routers, paste
 * each one's adoption command into its simulated RouterOS, then let their schedulers beat over
 * HTTP. Runs until SIGINT/SIGTERM; never returns.
 */
export const runAdoptedSimulator = async (
  args: SimulatorArgs,
  routerOs: RouterOsHookOptions,
  say: (line: string) => void,
): Promise<never> => {
  const api = new FleetApi(args.apiUrl);
  const enrolled: EnrolledRouter[] = [];
  try {
    await api.login(args.email);
    await api.ensureAccount(args.email);
    say(`enrolling and adopting ${args.routers} routers through ${args.apiUrl} ...`);
    for (let i = 0; i < args.routers; i++) {
      // The system assigns each router its tunnel address (a tenant may not choose it); in
      // development TUNNEL_NETWORK is a loopback network, so the simulated router serves it here.
      enrolled.push(await api.enroll(`Adopted router ${i + 1}`));
    }
  } catch (error) {
    say(`could not enroll routers: ${(error as Error).message}`);
    process.exit(1);
  }
  const hook = routerOsHook(routerOs, say);
  const fleet = await startAdoptedFleet({
    routers: enrolled.map((r) => ({
      router_id: r.router_id,
      adoption_command: r.adoption_command ?? "",
      ...(r.tunnel_ip ? { tunnel_ip: r.tunnel_ip } : {}),
    })),
    bindTunnelIp: args.bindTunnelIp,
    onRouter: (router) => hook(router),
    onError: (router, error) => say(`router ${router.tunnelIp}: adoption failed: ${error.message}`),
  });
  say(`adopted ${fleet.summary().adopted}/${enrolled.length} routers; their schedulers now post heartbeats`);
  const status = setInterval(() => {
    if (args.quiet) return;
    const s = fleet.summary();
    say(`adopted ${s.adopted}/${s.routers}  heartbeats ${s.heartbeats}  failed ${s.failed}`);
  }, 10_000);
  const stop = async () => {
    clearInterval(status);
    await fleet.close();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
  return new Promise<never>(() => {});
};
