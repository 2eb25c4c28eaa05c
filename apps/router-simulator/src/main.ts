import { ArgsError, parseArgs, USAGE } from "./cli-args.ts";
import { loadSimulatorDefaults } from "./config.ts";
import { ConfigError } from "@fleet/shared";
import { ROUTEROS_USAGE, RouterOsArgsError, routerOsHook, takeRouterOsArgs } from "./routeros/routeros-hook.ts";
import { type EnrolledRouter, FleetApi } from "./fleet-api.ts";
import { startSimulator } from "./simulator.ts";
import { readTokenFile, writeTokenFile } from "./token-file.ts";
import { runAdoptedSimulator } from "./adoption/adopt-command.ts";
import { identityFor } from "./adoption/adopted-state.ts";
import { NETNS_USAGE, runNetnsSimulator, takeNetnsArgs } from "./netns/netns-command.ts";

// `npm run simulate -- --routers N`: enrolls (or reuses) N routers and keeps them beating.
let args: ReturnType<typeof parseArgs>;
let routerOs: ReturnType<typeof takeRouterOsArgs>["options"];
try {
  const defaults = loadSimulatorDefaults();
  const taken = takeRouterOsArgs(takeNetnsArgs(process.argv.slice(2)).rest, {
    sshPort: defaults.sshPort,
    sshUser: defaults.sshUser,
    dataDir: defaults.dataDir,
  });
  routerOs = taken.options;
  args = parseArgs(taken.rest, defaults);
} catch (error) {
  if (error instanceof ArgsError || error instanceof RouterOsArgsError || error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n\n${USAGE}\n${ROUTEROS_USAGE}\n${NETNS_USAGE}\n`);
    process.exit(2);
  }
  throw error;
}
if (args.help) {
  process.stdout.write(`${USAGE}\n${ROUTEROS_USAGE}\n${NETNS_USAGE}\n`);
  process.exit(0);
}

const say = (line: string) => process.stderr.write(`${line}\n`);
if (args.adopt && takeNetnsArgs(process.argv.slice(2)).netns) await runNetnsSimulator(args, routerOs, say);
if (args.adopt) await runAdoptedSimulator(args, routerOs, say);

const routers: EnrolledRouter[] = args.tokenFile ? readTokenFile(args.tokenFile).slice(0, args.routers) : [];
if (routers.length < args.routers) {
  const api = new FleetApi(args.apiUrl);
  try {
    await api.login(args.email);
    await api.ensureAccount(args.email);
    say(`enrolling ${args.routers - routers.length} routers through ${args.apiUrl} ...`);
    while (routers.length < args.routers) {
      // The system assigns each router's tunnel address; the router answers (and reports) at it.
      routers.push(await api.enroll(`Simulated router ${routers.length + 1}`));
      if (args.tokenFile && routers.length % 100 === 0) writeTokenFile(args.tokenFile, routers);
    }
  } catch (error) {
    say(`could not enroll routers: ${(error as Error).message}`);
    process.exit(1);
  }
  if (args.tokenFile) writeTokenFile(args.tokenFile, routers);
}

const simulator = await startSimulator({
  routers,
  heartbeatUrl: args.heartbeatUrl,
  silent: args.silent,
  flap: args.flap,
  reboot: args.reboot,
  bindTunnelIp: args.bindTunnelIp,
  identityOf: (router) => identityFor(router.router_id),
  onRouter: routerOsHook(routerOs, say),
});
say(
  `simulating ${routers.length} routers against ${args.heartbeatUrl} (silent ${args.silent}, flapping ${args.flap}, rebooting ${args.reboot})` +
    (args.tokenFile ? `; tokens in ${args.tokenFile}` : ""),
);
if (routers.length <= 20) {
  for (const r of simulator.routers) say(`  ${r.identity}  id ${r.routerId}  tunnel_ip ${r.tunnelIp}`);
}

const status = setInterval(() => {
  if (args.quiet) return;
  const s = simulator.summary();
  say(
    `online ${s.online}/${s.routers}  acks ${s.acks}  errors ${s.errors}${s.refused ? `  refused (deleted) ${s.refused}` : ""}`,
  );
}, 10_000);

const stop = async () => {
  clearInterval(status);
  await simulator.close();
  process.exit(0);
};
process.once("SIGINT", () => void stop());
process.once("SIGTERM", () => void stop());
