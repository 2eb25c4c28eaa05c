import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Logger } from "pino";
import { checkedEndpoint, uapiGet, uapiSet, uapiSetRequest, uapiSocketPath } from "./uapi-client.ts";
import type { WireguardDevice, WireguardDeviceState, WireguardPeerBatch } from "./wireguard-device.ts";

const run = promisify(execFile);
const START_TIMEOUT_MS = 10_000;

export interface CreateWireguardOptions {
  name: string;
  implementation: "kernel" | "userspace" | "auto";
  privateKey: string;
  listenPort: number;
  /** The hub's address with the tunnel network's prefix (`100.64.0.1/10`): routes the network here. */
  address: string;
  logger: Logger;
  /** `ip netns exec <ns>` prefix (the simulator's routers); the hub itself runs in its own namespace. */
  namespace?: string;
}

const inNamespace = (namespace: string | undefined, command: string, args: string[]): [string, string[]] =>
  namespace ? ["ip", ["netns", "exec", namespace, command, ...args]] : [command, args];

const exec = async (namespace: string | undefined, command: string, args: string[]): Promise<string> => {
  const [file, argv] = inNamespace(namespace, command, args);
  try {
    return (await run(file, argv, { maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`${[file, ...argv].slice(0, 8).join(" ")}: ${stderr || (error as Error).message}`);
  }
};

const linkExists = async (namespace: string | undefined, name: string): Promise<boolean> =>
  exec(namespace, "ip", ["link", "show", "dev", name]).then(
    () => true,
    () => false,
  );

const waitFor = async (check: () => boolean | Promise<boolean>, what: string, failed?: () => string | undefined) => {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const failure = failed?.();
    if (failure) throw new Error(failure);
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((file) => existsSync(file));

/**
 * `command args` under `setpriv --pdeathsig TERM` (util-linux) when it is there: the kernel ends
 * wireguard-go when this process dies, even by SIGKILL, so no interface or socket outlives its hub.
 */
export const diesWithParent = (command: string, args: string[]): [string, string[]] =>
  SETPRIV ? [SETPRIV, ["--pdeathsig", "TERM", command, ...args]] : [command, args];

/** wireguard-go in the foreground, as a child of this process; its UAPI socket is the control path. */
const startUserspace = async (o: CreateWireguardOptions): Promise<{ child: ChildProcess }> => {
  // `env` sets wireguard-go's variables on top of the inherited environment (stay in the foreground,
  // as our child, so it ends with us; log errors only).
  const [file, argv] = inNamespace(
    o.namespace,
    ...diesWithParent("env", ["WG_PROCESS_FOREGROUND=1", "LOG_LEVEL=error", "wireguard-go", o.name]),
  );
  const child = spawn(file, argv, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  let exited: string | undefined;
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-2_000);
  });
  child.on("error", (error) => {
    exited = `wireguard-go could not be started (${error.message})`;
  });
  child.on("exit", (code, signal) => {
    exited ??= `wireguard-go exited (${signal ?? `code ${code}`})${stderr ? `: ${stderr.trim().split("\n").pop()}` : ""}`;
  });
  const socket = uapiSocketPath(o.name);
  await waitFor(
    async () =>
      existsSync(socket) &&
      (await uapiGet(socket).then(
        () => true,
        () => false,
      )),
    `wireguard-go's socket ${socket}`,
    () => exited,
  );
  return { child };
};

/**
 * Creates the hub's interface (docs/operations.md "The management tunnel"): Linux WireGuard when
 * asked for or (`auto`) when the kernel has it, else wireguard-go. A stale interface of the same
 * name (a hub that died) is deleted first: the hub owns its name. Then the key and port, the
 * address (which routes the tunnel network to the interface) and the link up. Throws with the
 * reason when any step fails; nothing is left behind.
 */
export const createWireguardDevice = async (o: CreateWireguardOptions): Promise<WireguardDevice> => {
  if (await linkExists(o.namespace, o.name)) {
    // Only ever a WireGuard interface of that name (a hub that died): never an operator's other link.
    const details = await exec(o.namespace, "ip", ["-details", "link", "show", "dev", o.name]);
    if (!/\bwireguard\b/.test(details) && !existsSync(uapiSocketPath(o.name))) {
      throw new Error(
        `an interface named ${o.name} exists and is not a WireGuard interface; choose another TUNNEL_WG_INTERFACE`,
      );
    }
    o.logger.warn({ interface: o.name }, "deleting a stale WireGuard interface of the hub's name");
    await exec(o.namespace, "ip", ["link", "del", "dev", o.name]);
    await waitFor(() => !existsSync(uapiSocketPath(o.name)), "the stale interface's socket to go");
  }
  let implementation: "kernel" | "userspace" = o.implementation === "userspace" ? "userspace" : "kernel";
  let child: ChildProcess | undefined;
  if (implementation === "kernel") {
    try {
      await exec(o.namespace, "ip", ["link", "add", "dev", o.name, "type", "wireguard"]);
    } catch (error) {
      if (o.implementation === "kernel") throw error;
      implementation = "userspace";
    }
  }
  if (implementation === "userspace") child = (await startUserspace(o)).child;
  const device = implementation === "kernel" ? kernelDevice(o) : userspaceDevice(o, child);
  try {
    await device.configure();
    await exec(o.namespace, "ip", ["address", "add", o.address, "dev", o.name]);
    await exec(o.namespace, "ip", ["link", "set", "dev", o.name, "up"]);
  } catch (error) {
    await device.close().catch(() => {});
    throw error;
  }
  return device;
};

type ConfigurableDevice = WireguardDevice & { configure(): Promise<void> };

const deleteLink = async (o: CreateWireguardOptions, child: ChildProcess | undefined): Promise<void> => {
  await exec(o.namespace, "ip", ["link", "del", "dev", o.name]).catch(() => {});
  if (child && child.exitCode === null && child.signalCode === null) {
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 2_000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
};

const userspaceDevice = (o: CreateWireguardOptions, child: ChildProcess | undefined): ConfigurableDevice => {
  const socket = uapiSocketPath(o.name);
  return {
    name: o.name,
    implementation: "userspace",
    configure: () =>
      uapiSet(socket, uapiSetRequest({ put: [], remove: [] }, { privateKey: o.privateKey, listenPort: o.listenPort })),
    state: () => uapiGet(socket),
    apply: (batch) => uapiSet(socket, uapiSetRequest(batch)),
    close: () => deleteLink(o, child),
  };
};

/** Linux WireGuard has no UAPI socket: `wg` (one process per batch, never one per peer) speaks netlink. */
const kernelDevice = (o: CreateWireguardOptions): ConfigurableDevice => ({
  name: o.name,
  implementation: "kernel",
  configure: async () => {
    // `wg` reads a private key only from a file (a pipe from node is a socket it cannot open):
    // a private temporary one, removed at once.
    const dir = mkdtempSync(path.join(tmpdir(), "fleet-wg-"));
    const file = path.join(dir, "key");
    try {
      writeFileSync(file, `${o.privateKey}\n`, { mode: 0o600 });
      await exec(o.namespace, "wg", ["set", o.name, "listen-port", String(o.listenPort), "private-key", file]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  state: async () => parseWgDump(await exec(o.namespace, "wg", ["show", o.name, "dump"])),
  apply: async (batch: WireguardPeerBatch) => {
    const current = batch.replace ? parseWgDump(await exec(o.namespace, "wg", ["show", o.name, "dump"])).peers : [];
    const args = wgSetArgs(o.name, batch, current);
    if (args) await exec(o.namespace, "wg", args);
  },
  close: () => deleteLink(o, undefined),
});

/**
 * The one `wg set` of a batch on Linux WireGuard (never one process per peer), or undefined when
 * there is nothing to do. `wg` has no "replace peers": a replacing batch removes, by name, each
 * current peer it does not put. Untested against a kernel (docs/operations.md "The management
 * tunnel"): the machines this was built on have none; only these arguments are unit-tested.
 */
export const wgSetArgs = (
  name: string,
  batch: WireguardPeerBatch,
  current: ReadonlyArray<{ publicKey: string }>,
): string[] | undefined => {
  const args = ["set", name];
  if (batch.replace) {
    const keep = new Set(batch.put.map((p) => p.publicKey));
    for (const peer of current) if (!keep.has(peer.publicKey)) args.push("peer", peer.publicKey, "remove");
  }
  for (const key of batch.remove) args.push("peer", key, "remove");
  for (const peer of batch.put) {
    args.push("peer", peer.publicKey);
    if (peer.endpoint) args.push("endpoint", checkedEndpoint(peer.endpoint));
    args.push("allowed-ips", peer.allowedIps.join(","));
  }
  return args.length > 2 ? args : undefined;
};

/** `wg show <if> dump`: the interface line, then one tab-separated line per peer. */
export const parseWgDump = (text: string): WireguardDeviceState => {
  const [head, ...rest] = text.trim().split("\n");
  const fields = head?.split("\t") ?? [];
  return {
    publicKey: fields[1] && fields[1] !== "(none)" ? fields[1] : null,
    listenPort: Number(fields[2] ?? 0),
    peers: rest
      .filter((line) => line.includes("\t"))
      .map((line) => {
        const [publicKey = "", , endpoint, allowed, handshake] = line.split("\t");
        const seconds = Number(handshake ?? 0);
        return {
          publicKey,
          endpoint: endpoint && endpoint !== "(none)" ? endpoint : null,
          allowedIps: allowed && allowed !== "(none)" ? allowed.split(",") : [],
          lastHandshakeAt: seconds > 0 ? new Date(seconds * 1000) : null,
        };
      }),
  };
};
