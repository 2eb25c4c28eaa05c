import type { SimulatorArgs } from "../cli-args.ts";
import { FleetApi } from "../fleet-api.ts";
import type { RouterOsHookOptions } from "../routeros/routeros-hook.ts";
import { NETNS_MAX_ROUTERS } from "./netns-network.ts";
import { startNetnsFleet } from "./netns-fleet.ts";

export const NETNS_USAGE = `
Real management tunnel (TUNNEL_MODE=wireguard; root and wireguard-go needed):
  --netns                with --adopt: each router in its own network namespace behind a NAT
                         namespace, its adoption script's WireGuard commands run as a real
                         wireguard-go interface there, SSH and its LAN served inside the namespace
                         (at most ${NETNS_MAX_ROUTERS} routers). TUNNEL_WG_ENDPOINT must be an address routers
                         can reach through the NAT: the one printed at start, or this machine's own.`;

/** Removes `--netns` from argv (this module's only flag); the rest goes to the simulator's parser. */
export const takeNetnsArgs = (argv: readonly string[]): { netns: boolean; rest: string[] } => ({
  netns: argv.includes("--netns"),
  rest: argv.filter((a) => a !== "--netns"),
});

/**
 * `npm run simulate -- --routers N --adopt --netns`: enroll N routers (the system assigns their
 * tunnel addresses), adopt each in its namespace, run until SIGINT/SIGTERM, then remove every
 * namespace and process. Never returns.
 */
export const runNetnsSimulator = async (
  args: SimulatorArgs,
  routerOs: RouterOsHookOptions,
  say: (line: string) => void,
): Promise<never> => {
  if (!args.adopt) throw new Error("--netns needs --adopt");
  if (args.routers > NETNS_MAX_ROUTERS) throw new Error(`--netns runs at most ${NETNS_MAX_ROUTERS} routers`);
  const api = new FleetApi(args.apiUrl);
  const enrolled: Array<{ router_id: string; adoption_command: string }> = [];
  try {
    await api.login(args.email);
    await api.ensureAccount(args.email);
    for (let i = 0; i < args.routers; i++) {
      const router = await api.enroll(`Tunnelled router ${i + 1}`);
      enrolled.push({ router_id: router.router_id, adoption_command: router.adoption_command ?? "" });
    }
  } catch (error) {
    say(`could not enroll routers: ${(error as Error).message}`);
    process.exit(1);
  }
  const running = await startNetnsFleet({
    routers: enrolled,
    sshPort: routerOs.sshPort,
    prefix: "fleetsim",
    block: process.pid % 12_500,
    stateDir: routerOs.stateDir,
    onError: (index, error) => say(`router ${index + 1}: adoption failed: ${error.message}`),
  });
  say(
    `adopted ${running.fleet.summary().adopted}/${enrolled.length} routers in network namespaces behind NAT; ` +
      `they reach this machine at ${running.network.hostAddress}`,
  );
  const status = setInterval(() => {
    if (args.quiet) return;
    const s = running.fleet.summary();
    say(`adopted ${s.adopted}/${s.routers}  heartbeats ${s.heartbeats}  failed ${s.failed}`);
  }, 10_000);
  const stop = async () => {
    clearInterval(status);
    await running.close();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
  return new Promise<never>(() => {});
};
