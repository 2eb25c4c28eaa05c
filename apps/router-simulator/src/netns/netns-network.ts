import { deleteNamespaces, sh, staleNamespaces } from "./netns-shell.ts";

/**
 * The simulated routers' networks for `--netns` (docs/routeros.md "Simulator"): one NAT namespace
 * (the routers' ISP, masquerading) joined to this machine by a veth pair, and behind it one
 * namespace per router. This machine has no route to the routers' own addresses: the hub reaches
 * a router only through its WireGuard tunnel, which the router dials out through the NAT.
 *
 *   this machine (hub) 10.X.Y.1 ── veth ── 10.X.Y.2 NAT ns (masquerade) ── veth ── router ns i
 */
export interface NetnsNetworkOptions {
  /** Prefix of every namespace and interface name (unique per user of the machine, e.g. `h23`). */
  prefix: string;
  /** The second and third octets of the 10.x.y.0/24 transit networks, chosen so runs do not collide. */
  block: number;
}

export interface RouterNamespace {
  index: number;
  /** The namespace's name (`ip netns exec <it>`). */
  name: string;
  /** The router's WAN address inside its namespace (behind the NAT). */
  wanAddress: string;
}

export interface NetnsNetwork {
  /** This machine's address on the NAT's side: routers can dial a hub endpoint here. */
  hostAddress: string;
  natNamespace: string;
  routers: RouterNamespace[];
  addRouter(index: number): Promise<RouterNamespace>;
  close(): Promise<void>;
}

/** At most this many routers per network (one /30 each inside one /24). */
export const NETNS_MAX_ROUTERS = 63;

const transitOf = (block: number): string => `10.${200 + (Math.floor(block / 250) % 50)}.${block % 250}`;

/** This machine's address towards the routers' NAT for `block`: where a hub endpoint is reachable. */
export const netnsHostAddress = (block: number): string => `${transitOf(block)}.1`;

export const createNetnsNetwork = async (o: NetnsNetworkOptions): Promise<NetnsNetwork> => {
  // A sweep first: namespaces of this prefix whose process died (a crashed run or test).
  await deleteNamespaces(await staleNamespaces(o.prefix));
  const id = `${o.prefix}-${process.pid.toString(36)}-${Math.floor(Math.random() * 36 ** 3).toString(36)}`;
  const short = `${o.prefix.slice(0, 4)}${Math.floor(Math.random() * 36 ** 4).toString(36)}`;
  const transit = transitOf(o.block);
  // The routers' side of the NAT: 10.(second - 100).(third).0/24, never routed from this machine.
  const [, second, third] = transit.split(".").map(Number);
  const lans = `10.${(second ?? 200) - 100}.${third}`;
  const nat = `${id}-nat`;
  const created: string[] = [];
  const routers: RouterNamespace[] = [];
  const close = async () => {
    await deleteNamespaces([...created].reverse());
    await sh("ip", ["link", "del", `${short}h`]).catch(() => {});
  };
  try {
    await sh("ip", ["netns", "add", nat]);
    created.push(nat);
    await sh("ip", ["link", "add", `${short}h`, "type", "veth", "peer", "name", `${short}n`]);
    await sh("ip", ["link", "set", `${short}n`, "netns", nat]);
    await sh("ip", ["address", "add", `${transit}.1/30`, "dev", `${short}h`]);
    await sh("ip", ["link", "set", `${short}h`, "up"]);
    await sh("ip", ["address", "add", `${transit}.2/30`, "dev", `${short}n`], nat);
    await sh("ip", ["link", "set", `${short}n`, "up"], nat);
    await sh("ip", ["link", "set", "lo", "up"], nat);
    await sh("ip", ["route", "add", "default", "via", `${transit}.1`], nat);
    await sh("sysctl", ["-qw", "net.ipv4.ip_forward=1"], nat);
    await sh("iptables", ["-t", "nat", "-A", "POSTROUTING", "-o", `${short}n`, "-j", "MASQUERADE"], nat);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    hostAddress: `${transit}.1`,
    natNamespace: nat,
    routers,
    addRouter: async (index) => {
      if (!Number.isInteger(index) || index < 0 || index >= NETNS_MAX_ROUTERS) {
        throw new RangeError(`--netns runs at most ${NETNS_MAX_ROUTERS} routers`);
      }
      const name = `${id}-r${index}`;
      await sh("ip", ["netns", "add", name]);
      created.push(name);
      const up = `${short}${index}a`;
      const down = `${short}${index}b`;
      const base = index * 4;
      await sh("ip", ["link", "add", up, "type", "veth", "peer", "name", down], nat);
      await sh("ip", ["link", "set", down, "netns", name], nat);
      await sh("ip", ["address", "add", `${lans}.${base + 1}/30`, "dev", up], nat);
      await sh("ip", ["link", "set", up, "up"], nat);
      await sh("ip", ["link", "set", "lo", "up"], name);
      await sh("ip", ["address", "add", `${lans}.${base + 2}/30`, "dev", down], name);
      await sh("ip", ["link", "set", down, "up"], name);
      await sh("ip", ["route", "add", "default", "via", `${lans}.${base + 1}`], name);
      const router = { index, name, wanAddress: `${lans}.${base + 2}` };
      routers.push(router);
      return router;
    },
    close,
  };
};
