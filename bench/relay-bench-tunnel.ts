/**
 * The real management tunnel for `npm run bench:relay -- --tunnel` (root and wireguard-go): a hub
 * interface on this machine (the tunnel agent's own code, wireguard-go) and one router in its own
 * network namespace behind a veth pair, with its own wireguard-go, its tunnel address as a /32 and
 * a route to the hub alone, as the adoption script builds it. The bench's second agent then reaches
 * the router's tunnel address only through WireGuard. Names are unique to the run; `close()`
 * removes the namespace, both interfaces and both wireguard-go processes.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import dgram from "node:dgram";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { generateWireguardKeyPair } from "@fleet/shared";
import { uapiSocketPath } from "@fleet/tunnel-agent/wireguard/uapi-client";
import type { WireguardDevice } from "@fleet/tunnel-agent/wireguard/wireguard-device";
import { createWireguardDevice, diesWithParent } from "@fleet/tunnel-agent/wireguard/wireguard-interface";
import pino from "pino";

export interface BenchTunnel {
  namespace: string;
  /** TUNNEL_NETWORK of the agent that goes through the tunnel. */
  network: string;
  routerIp: string;
  close(): Promise<void>;
}

const sh = (args: string[]) =>
  execFileSync(args[0] ?? "", args.slice(1), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

const freeUdpPort = async (): Promise<number> => {
  const socket = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "0.0.0.0", resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
};

export const startBenchTunnel = async (): Promise<BenchTunnel> => {
  const tag = `rb${process.pid.toString(36).slice(-4)}${Math.floor(Math.random() * 36 ** 2).toString(36)}`;
  const octet = process.pid % 250;
  const network = `100.126.${octet}.0/24`;
  const hubIp = `100.126.${octet}.1`;
  const routerIp = `100.126.${octet}.2`;
  const transit = `10.252.${octet}`;
  const namespace = `${tag}-ns`;
  const hubKey = generateWireguardKeyPair();
  const routerKey = generateWireguardKeyPair();
  const port = await freeUdpPort();
  let hub: WireguardDevice | undefined;
  let routerWg: ChildProcess | undefined;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    routerWg?.kill("SIGTERM");
    for (const args of [
      ["ip", "netns", "del", namespace],
      ["ip", "link", "del", `${tag}a`],
    ]) {
      try {
        sh(args);
      } catch {
        // Already gone.
      }
    }
    await hub?.close();
  };
  try {
    hub = await createWireguardDevice({
      name: `${tag}h`,
      implementation: "userspace",
      privateKey: hubKey.privateKey,
      listenPort: port,
      address: `${hubIp}/24`,
      logger: pino({ level: "silent" }),
    });
    sh(["ip", "netns", "add", namespace]);
    sh(["ip", "link", "add", `${tag}a`, "type", "veth", "peer", "name", `${tag}b`]);
    sh(["ip", "link", "set", `${tag}b`, "netns", namespace]);
    sh(["ip", "address", "add", `${transit}.1/30`, "dev", `${tag}a`]);
    sh(["ip", "link", "set", `${tag}a`, "up"]);
    sh(["ip", "-n", namespace, "address", "add", `${transit}.2/30`, "dev", `${tag}b`]);
    sh(["ip", "-n", namespace, "link", "set", `${tag}b`, "up"]);
    sh(["ip", "-n", namespace, "link", "set", "lo", "up"]);
    const rw = `${tag}r`;
    const [file, argv] = diesWithParent("env", ["WG_PROCESS_FOREGROUND=1", "wireguard-go", rw]);
    routerWg = spawn("ip", ["netns", "exec", namespace, file, ...argv], { stdio: "ignore" });
    const deadline = Date.now() + 10_000;
    while (!existsSync(uapiSocketPath(rw))) {
      if (Date.now() > deadline || routerWg.exitCode !== null)
        throw new Error("the router's wireguard-go did not start");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // `wg` reads a private key only from a file: a private temporary one, removed at once.
    const dir = mkdtempSync(path.join(tmpdir(), "relay-bench-wg-"));
    try {
      writeFileSync(path.join(dir, "key"), `${routerKey.privateKey}\n`, { mode: 0o600 });
      sh(["ip", "netns", "exec", namespace, "wg", "set", rw, "private-key", path.join(dir, "key")]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    sh(["ip", "-n", namespace, "address", "add", `${routerIp}/32`, "dev", rw]);
    sh(["ip", "-n", namespace, "link", "set", rw, "up"]);
    sh(["ip", "-n", namespace, "route", "add", `${hubIp}/32`, "dev", rw]);
    await hub.apply({ put: [{ publicKey: routerKey.publicKey, allowedIps: [`${routerIp}/32`] }], remove: [] });
    sh([
      "ip",
      "netns",
      "exec",
      namespace,
      "wg",
      "set",
      rw,
      "peer",
      hubKey.publicKey,
      "endpoint",
      `${transit}.1:${port}`,
      "allowed-ips",
      `${hubIp}/32`,
      "persistent-keepalive",
      "25",
    ]);
  } catch (error) {
    await close();
    throw error;
  }
  return { namespace, network, routerIp, close };
};
