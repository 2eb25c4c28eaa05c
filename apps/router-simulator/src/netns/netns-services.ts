import { createInterface } from "node:readline";
import { RouterOsDevice } from "../routeros/script/routeros-device.ts";
import { startSimulatedRouterOs, type SimulatedRouterOs } from "../routeros/simulated-routeros.ts";

/**
 * The child process of `--netns` that runs INSIDE a simulated router's namespace (started with
 * `ip netns exec`): the RouterOS SSH server on the router's tunnel address, its dst-nat relays and
 * its simulated LAN, all bound in the namespace, so the hub reaches them only through the tunnel.
 * Logins follow the users, groups and keys of the router's RouterOS device, which lives in the
 * simulator's main process and sends them here (JSON lines on stdin) whenever they change.
 *
 * stdin:  {"type":"start","tunnelIp","sshPort","hostKey","sshUser"?} | {"type":"auth","tables":{...}}
 * stdout: {"type":"ready","sshPort"} | {"type":"error","message"}
 */
type Tables = Pick<RouterOsDevice["tables"], "user" | "user group" | "user ssh-keys">;

const device = new RouterOsDevice({
  identity: "netns",
  version: "7.16.2 (stable)",
  boardName: "CHR",
  model: "CHR",
  routerboard: false,
  serialNumber: "",
  licenseId: "",
  bootedAt: Date.now(),
  http: async () => ({ status: 503, body: "" }),
});
for (const table of ["user", "user group", "user ssh-keys"] as const) device.tables[table].splice(0);

let running: SimulatedRouterOs | undefined;
const say = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);

createInterface({ input: process.stdin }).on("line", (line) => {
  void (async () => {
    const message = JSON.parse(line) as
      | { type: "start"; tunnelIp: string; sshPort: number; hostKey: string; sshUser?: string }
      | { type: "auth"; tables: Tables };
    if (message.type === "auth") {
      for (const table of ["user", "user group", "user ssh-keys"] as const) {
        device.tables[table].splice(0, device.tables[table].length, ...message.tables[table]);
      }
      return;
    }
    await running?.close();
    running = await startSimulatedRouterOs({
      tunnelIp: message.tunnelIp,
      sshPort: message.sshPort,
      hostKey: message.hostKey,
      authorize: (username, key, address) => device.authorizes(username, key, address),
    });
    say({ type: "ready", sshPort: running.ssh.port });
  })().catch((error: unknown) => say({ type: "error", message: (error as Error).message }));
});

// The main process went away (or closed stdin): stop serving.
process.stdin.on("end", () => {
  void (running?.close() ?? Promise.resolve()).finally(() => process.exit(0));
});
