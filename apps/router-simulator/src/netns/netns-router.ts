import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import type { RouterOsDevice } from "../routeros/script/routeros-device.ts";
import type { RouterNamespace } from "./netns-network.ts";
import { sh } from "./netns-shell.ts";

const SERVICES = fileURLToPath(new URL("./netns-services.ts", import.meta.url));
const WG_SOCKET_DIR = "/var/run/wireguard";
const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((file) => existsSync(file));
const START_TIMEOUT_MS = 10_000;
/** The interface name the adoption script creates (WIREGUARD_OBJECTS.interface). */
const ROUTEROS_WG = "fleet-wg";

export interface NetnsRouterOptions {
  namespace: RouterNamespace;
  /**
   * The Linux name of the router's `fleet-wg`: wireguard-go's socket directory is shared by every
   * namespace, so it must be unique on the machine (at most 15 characters).
   */
  linkName: string;
  sshPort: number;
  hostKey: string;
}

export interface NetnsRouter {
  /** The router's namespace and the Linux name of its `fleet-wg` (for `wg show` in tests). */
  namespace: string;
  linkName: string;
  /** The RouterOS device's `onTunnelChange`: applies its WireGuard tables to the namespace. */
  apply(device: RouterOsDevice): Promise<void>;
  /** The tunnel address the services listen on (once the script put one on `fleet-wg`). */
  tunnelIp(): string | undefined;
  close(): Promise<void>;
}

/** The router's own private key, over wireguard-go's UAPI socket (never on a command line or in a file). */
const setPrivateKey = (linkName: string, privateKey: string): Promise<void> =>
  new Promise((resolve, reject) => {
    const socket = net.createConnection(`${WG_SOCKET_DIR}/${linkName}.sock`);
    let answer = "";
    socket.on("error", reject);
    socket.on("data", (chunk: Buffer) => {
      answer += chunk.toString();
      if (!answer.endsWith("\n\n")) return;
      socket.destroy();
      if (answer.includes("errno=0\n")) resolve();
      else reject(new Error(`wireguard-go refused the private key (${answer.trim()})`));
    });
    socket.on("connect", () =>
      socket.write(`set=1\nprivate_key=${Buffer.from(privateKey, "base64").toString("hex")}\n\n`),
    );
  });

const waitFor = async (check: () => boolean | Promise<boolean>, what: string, failed: () => string | undefined) => {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await check())) {
    const failure = failed();
    if (failure) throw new Error(failure);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

const stop = async (child: ChildProcess | undefined) => {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 2_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
};

/** True when a Unix socket takes a connection (closed again at once). */
const accepts = (path: string): Promise<boolean> =>
  new Promise((resolve) => {
    const probe = net.createConnection(path);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });

/** wireguard-go for `linkName` inside `namespace`, answered once its UAPI socket takes connections. */
const spawnWireguardGo = async (namespace: string, linkName: string): Promise<ChildProcess> => {
  const socketPath = `${WG_SOCKET_DIR}/${linkName}.sock`;
  // A socket left by a killed wireguard-go of an earlier process with the same pid would look
  // ready and refuse every connection.
  rmSync(socketPath, { force: true });
  // setpriv: the kernel ends wireguard-go when the simulator dies, even by SIGKILL.
  const child = spawn(
    "ip",
    [
      "netns",
      "exec",
      namespace,
      ...(SETPRIV ? [SETPRIV, "--pdeathsig", "TERM"] : []),
      "env",
      "WG_PROCESS_FOREGROUND=1",
      "LOG_LEVEL=error",
      "wireguard-go",
      linkName,
    ],
    {
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let exited: string | undefined;
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-1_000);
  });
  child.on("exit", (code) => {
    exited = `wireguard-go ${linkName} exited (${code}): ${stderr.trim()}`;
  });
  child.on("error", (error) => {
    exited = `wireguard-go could not start: ${error.message}`;
  });
  // Ready when its UAPI socket accepts a connection: the file alone can be there a moment before
  // wireguard-go listens on it (bind, then listen), and a connection then is refused.
  await waitFor(
    async () => existsSync(socketPath) && (await accepts(socketPath)),
    `${linkName}'s socket`,
    () => exited,
  );
  return child;
};

/** The interface's peers become exactly the device's: the others removed, each wanted one set. */
const syncPeers = async (
  namespace: string,
  linkName: string,
  peers: ReturnType<RouterOsDevice["items"]>,
): Promise<void> => {
  const wanted = new Set(peers.map((p) => p.props["public-key"]));
  for (const key of (await sh("wg", ["show", linkName, "peers"], namespace)).split("\n").filter(Boolean)) {
    if (!wanted.has(key)) await sh("wg", ["set", linkName, "peer", key, "remove"], namespace);
  }
  for (const peer of peers) {
    const p = peer.props;
    const keepalive = String(Number.parseInt(p["persistent-keepalive"] ?? "0", 10) || 0);
    await sh(
      "wg",
      [
        "set",
        linkName,
        "peer",
        p["public-key"] ?? "",
        "endpoint",
        `${p["endpoint-address"]}:${p["endpoint-port"]}`,
        "allowed-ips",
        p["allowed-address"] ?? "",
        "persistent-keepalive",
        keepalive,
      ],
      namespace,
    );
  }
};

/**
 * One simulated router's real end of the tunnel (docs/routeros.md "Simulator", `--netns`): the
 * adoption script's WireGuard commands, run by the simulated RouterOS, become a real wireguard-go
 * interface in the router's namespace with the router's own key, its hub peer, its /32 and its
 * route to the hub; the SSH server and LAN run in a child process inside the namespace.
 */
export const attachNetnsRouter = (o: NetnsRouterOptions): NetnsRouter => {
  const ns = o.namespace.name;
  let wireguard: ChildProcess | undefined;
  let services: ChildProcess | undefined;
  let servicesIp: string | undefined;
  let queue: Promise<unknown> = Promise.resolve();

  const startWireguard = async () => {
    wireguard = await spawnWireguardGo(ns, o.linkName);
  };

  const startServices = async (tunnelIp: string) => {
    await stop(services);
    const child = spawn("ip", ["netns", "exec", ns, process.execPath, SERVICES], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    services = child;
    const answer = new Promise<void>((resolve, reject) => {
      child.once("exit", (code) => reject(new Error(`the namespace's services exited (${code})`)));
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
        const message = JSON.parse(line) as { type: string; message?: string };
        if (message.type === "ready") resolve();
        else reject(new Error(message.message ?? "the namespace's services failed"));
      });
    });
    child.stdin?.write(`${JSON.stringify({ type: "start", tunnelIp, sshPort: o.sshPort, hostKey: o.hostKey })}\n`);
    await answer;
    servicesIp = tunnelIp;
  };

  const sendAuth = (device: RouterOsDevice) => {
    const tables = {
      user: device.tables.user,
      "user group": device.tables["user group"],
      "user ssh-keys": device.tables["user ssh-keys"],
    };
    services?.stdin?.write(`${JSON.stringify({ type: "auth", tables })}\n`);
  };

  const applyNow = async (device: RouterOsDevice) => {
    const wg = device.items("interface wireguard").find((i) => i.props.name === ROUTEROS_WG);
    if (!wg) {
      if (wireguard) {
        await sh("ip", ["link", "del", o.linkName], ns).catch(() => {});
        await stop(wireguard);
        wireguard = undefined;
      }
      return;
    }
    if (!wireguard) await startWireguard();
    await setPrivateKey(o.linkName, wg.props["private-key"] ?? "");
    await syncPeers(
      ns,
      o.linkName,
      device.items("interface wireguard peers").filter((p) => p.props.interface === ROUTEROS_WG),
    );
    const addresses = device.items("ip address").filter((a) => a.props.interface === ROUTEROS_WG);
    await sh("ip", ["address", "flush", "dev", o.linkName], ns);
    for (const a of addresses) await sh("ip", ["address", "add", a.props.address ?? "", "dev", o.linkName], ns);
    await sh("ip", ["link", "set", o.linkName, "up"], ns);
    for (const r of device.items("ip route").filter((x) => x.props.gateway === ROUTEROS_WG)) {
      await sh("ip", ["route", "replace", r.props["dst-address"] ?? "", "dev", o.linkName], ns);
    }
    const tunnelIp = addresses[0]?.props.address?.split("/")[0];
    if (tunnelIp && tunnelIp !== servicesIp) await startServices(tunnelIp);
    sendAuth(device);
  };

  return {
    namespace: ns,
    linkName: o.linkName,
    // RouterOS applies changes one at a time; so does this.
    apply: (device) => {
      const next = queue.then(() => applyNow(device));
      queue = next.catch(() => {});
      return next;
    },
    tunnelIp: () => servicesIp,
    close: async () => {
      services?.stdin?.end();
      await stop(services);
      await sh("ip", ["link", "del", o.linkName], ns).catch(() => {});
      await stop(wireguard);
    },
  };
};
