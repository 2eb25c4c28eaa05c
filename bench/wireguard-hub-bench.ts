/**
 * `npm run bench:wireguard`: the management tunnel's hub on a real wireguard-go interface (root
 * and wireguard-go needed). For N = 100, 1,000, 10,000 bound peers: how fast one batch sets them
 * (peers per second, one UAPI `set=1`), the hub's memory per peer (wireguard-go's RSS), and the
 * time from a binding to a working handshake with a real router: one wireguard-go "router" in its
 * own network namespace, bound as the (N+1)-th peer, dialing the hub; the clock runs from the
 * batch that adds its peer to the first handshake the hub reports.
 * Relayed throughput and connection set-up through the tunnel are `npm run bench:relay -- --tunnel`
 * (the relay itself over the tunnel, against the same relay over loopback).
 * Options: --sizes 100,1000,10000.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { parseArgs } from "node:util";
import { generateWireguardKeyPair } from "@fleet/shared";
import { createWireguardDevice } from "@fleet/tunnel-agent/wireguard/wireguard-interface";
import { realTunnelUnavailable } from "@fleet/tunnel-agent/wireguard/testing/wireguard-environment";
import pino from "pino";

const { values } = parseArgs({
  options: { sizes: { type: "string", default: "100,1000,10000" } },
});
const sizes = values.sizes.split(",").map(Number);
const unavailable = realTunnelUnavailable();
if (unavailable) {
  process.stderr.write(`bench:wireguard needs root and wireguard-go: ${unavailable}\n`);
  process.exit(1);
}

const sh = (args: string[], input?: string) =>
  execFileSync(args[0] ?? "", args.slice(1), { encoding: "utf8", ...(input ? { input } : {}) });
const rssKb = (name: string): number => {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (cmd.includes("wireguard-go") && cmd.includes(name)) {
        return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
      }
    } catch {
      // A process that ended while we looked.
    }
  }
  return 0;
};

const tag = `h23b${process.pid.toString(36).slice(-4)}`;
const logger = pino({ level: "silent" });
const rows: string[] = [];
for (const n of sizes) {
  const hubKey = generateWireguardKeyPair();
  const port = 51_990 + (n % 9);
  const hub = await createWireguardDevice({
    name: `${tag}h`,
    implementation: "userspace",
    privateKey: hubKey.privateKey,
    listenPort: port,
    address: "100.126.0.1/16",
    logger,
  });
  const ns = `${tag}-ns`;
  try {
    const before = rssKb(`${tag}h`);
    const peers = Array.from({ length: n }, (_, i) => ({
      publicKey: generateWireguardKeyPair().publicKey,
      allowedIps: [`100.126.${Math.floor((i + 2) / 256) % 256}.${(i + 2) % 256}/32`],
    }));
    const t0 = performance.now();
    await hub.apply({ put: peers, remove: [], replace: true });
    const setMs = performance.now() - t0;
    const after = rssKb(`${tag}h`);

    // One real router behind a veth in its own namespace.
    const router = generateWireguardKeyPair();
    sh(["ip", "netns", "add", ns]);
    sh(["ip", "link", "add", `${tag}a`, "type", "veth", "peer", "name", `${tag}b`]);
    sh(["ip", "link", "set", `${tag}b`, "netns", ns]);
    sh(["ip", "address", "add", "10.251.77.1/30", "dev", `${tag}a`]);
    sh(["ip", "link", "set", `${tag}a`, "up"]);
    sh(["ip", "-n", ns, "address", "add", "10.251.77.2/30", "dev", `${tag}b`]);
    sh(["ip", "-n", ns, "link", "set", `${tag}b`, "up"]);
    const rw = `${tag}r`;
    const child = (await import("node:child_process")).spawn(
      "ip",
      ["netns", "exec", ns, "env", "WG_PROCESS_FOREGROUND=1", "wireguard-go", rw],
      { stdio: "ignore" },
    );
    for (let i = 0; i < 200 && !sh(["ls", "/var/run/wireguard"]).includes(`${rw}.sock`); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const keyFile = `/tmp/${tag}.key`;
    (await import("node:fs")).writeFileSync(keyFile, `${router.privateKey}\n`, { mode: 0o600 });
    sh(["ip", "netns", "exec", ns, "wg", "set", rw, "private-key", keyFile]);
    (await import("node:fs")).rmSync(keyFile);
    sh(["ip", "-n", ns, "address", "add", "100.126.255.254/32", "dev", rw]);
    sh(["ip", "-n", ns, "link", "set", rw, "up"]);
    sh(["ip", "-n", ns, "route", "add", "100.126.0.1/32", "dev", rw]);
    // The binding: the hub adds the router's peer in one batch, then the router dials.
    const t1 = performance.now();
    await hub.apply({ put: [{ publicKey: router.publicKey, allowedIps: ["100.126.255.254/32"] }], remove: [] });
    sh([
      "ip",
      "netns",
      "exec",
      ns,
      "wg",
      "set",
      rw,
      "peer",
      hubKey.publicKey,
      "endpoint",
      `10.251.77.1:${port}`,
      "allowed-ips",
      "100.126.0.1/32",
      "persistent-keepalive",
      "25",
    ]);
    let handshakeMs = Number.NaN;
    for (let i = 0; i < 500; i++) {
      const state = await hub.state();
      if (state.peers.find((p) => p.publicKey === router.publicKey)?.lastHandshakeAt) {
        handshakeMs = performance.now() - t1;
        break;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const readT = performance.now();
    await hub.state();
    const readMs = performance.now() - readT;
    rows.push(
      `| ${n.toLocaleString("en")} | ${setMs.toFixed(0)} ms | ${Math.round(n / (setMs / 1000)).toLocaleString("en")} | ${handshakeMs.toFixed(0)} ms | ${readMs.toFixed(0)} ms | ${(((after - before) * 1024) / n).toFixed(0)} B |`,
    );
    child.kill("SIGTERM");
  } finally {
    try {
      sh(["ip", "netns", "del", ns]);
    } catch {}
    try {
      sh(["ip", "link", "del", `${tag}a`]);
    } catch {}
    await hub.close();
  }
}
process.stdout.write(
  `| peers | one batch | peers/s | binding -> handshake | read all handshakes | hub RSS per peer |\n| --- | --- | --- | --- | --- | --- |\n${rows.join("\n")}\n`,
);
