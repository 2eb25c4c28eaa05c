import type { SimulatorArgs } from "../cli-args.ts";
import { FleetApi } from "../fleet-api.ts";
import { type RouterOsHookOptions, routerOsHook } from "../routeros/routeros-hook.ts";
import { type AdoptedFleetEntry, startAdoptedFleet } from "./adopted-fleet.ts";
import { adoptedStateFile, identityFor, readAdoptedState, writeAdoptedState } from "./adopted-state.ts";

/**
 * `npm run simulate -- --routers N --adopt` (docs/routeros.md "Simulator"): brings back the routers
 * an earlier run adopted (kept in the state directory), enrolls and adopts the rest (and any whose
 * token the system no longer knows), then lets their schedulers beat over HTTP. Runs until
 * SIGINT/SIGTERM; never returns.
 */
export const runAdoptedSimulator = async (
  args: SimulatorArgs,
  routerOs: RouterOsHookOptions,
  say: (line: string) => void,
): Promise<never> => {
  const api = new FleetApi(args.apiUrl);
  const stateFile = adoptedStateFile(routerOs.stateDir);
  const enrollOne = async (index: number): Promise<AdoptedFleetEntry> => {
    // The system assigns the tunnel address (in development a loopback one): no tunnel_ip is claimed.
    const enrolled = await api.enroll(`Adopted router ${index + 1}`);
    return {
      router_id: enrolled.router_id,
      adoption_command: enrolled.adoption_command ?? "",
      ...(enrolled.tunnel_ip ? { tunnel_ip: enrolled.tunnel_ip } : {}),
      identity: identityFor(enrolled.router_id),
    };
  };
  let saved: AdoptedFleetEntry[];
  const entries: AdoptedFleetEntry[] = [];
  try {
    saved = readAdoptedState(stateFile);
    await api.login(args.email);
    await api.ensureAccount(args.email);
    entries.push(...saved.slice(0, args.routers));
    if (entries.length > 0) say(`resuming ${entries.length} adopted routers from ${stateFile} ...`);
    if (entries.length < args.routers) {
      say(`enrolling and adopting ${args.routers - entries.length} routers through ${args.apiUrl} ...`);
    }
    while (entries.length < args.routers) entries.push(await enrollOne(entries.length));
  } catch (error) {
    say(`could not enroll routers: ${(error as Error).message}`);
    process.exit(1);
  }
  const hook = routerOsHook(routerOs, say);
  const fleet = await startAdoptedFleet({
    routers: entries,
    bindTunnelIp: args.bindTunnelIp,
    system: (index) => ({ rebootSeconds: args.rebootSeconds, breakTunnelOnChange: index < args.breakTunnelOnChange }),
    healthOf: (index) => ({
      overload: index < args.overload,
      overheat: index < args.overheat,
      lossy: index < args.lossy,
    }),
    onRouter: (router) => hook(router),
    onError: (router, error) => say(`router ${router.tunnelIp}: adoption failed: ${error.message}`),
    reenroll: async (index, refused) => {
      say(`router ${refused.routerId} is unknown to the system (its token is refused): enrolling it again`);
      return enrollOne(index);
    },
  });
  // Routers beyond --routers that an earlier run kept stay in the file for a bigger run.
  writeAdoptedState(stateFile, [...fleet.saved(), ...saved.slice(args.routers)]);
  const first = fleet.summary();
  say(
    `adopted ${first.adopted}/${entries.length} routers (${first.resumed} resumed, ${first.reenrolled} enrolled again); ` +
      `their schedulers now post heartbeats; state in ${stateFile}`,
  );
  for (const router of fleet.routers)
    say(`  ${router.device.identity}  id ${router.routerId}  tunnel_ip ${router.tunnelIp}`);
  const status = setInterval(() => {
    if (args.quiet) return;
    const s = fleet.summary();
    say(`adopted ${s.adopted}/${s.routers}  heartbeats ${s.heartbeats}  failed ${s.failed}`);
  }, 10_000);
  const stop = async () => {
    clearInterval(status);
    // Again at the end: what the run changed (a firmware change's version) is what the next one resumes.
    writeAdoptedState(stateFile, [...fleet.saved(), ...saved.slice(args.routers)]);
    await fleet.close();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
  return new Promise<never>(() => {});
};
