import { IPV4_PATTERN } from "../rules/ipv4-rules.ts";
import { isWireguardKey } from "../crypto/wireguard-keys.ts";
import {
  command,
  comment,
  findWhere,
  num,
  type RosStatement,
  RouterOsScriptError,
  set,
  str,
  sub,
  tryDo,
  word,
} from "./routeros-script.ts";

/**
 * The router's end of the management tunnel (docs/routeros.md "The management tunnel"): what the
 * adoption script adds in `TUNNEL_MODE=wireguard`, and the typed commands that take it off again.
 * RouterOS 7 WireGuard: https://help.mikrotik.com/docs/display/ROS/WireGuard.
 */
export interface AdoptionWireguard {
  /** The hub's public key (base64). */
  hubPublicKey: string;
  /** `TUNNEL_WG_ENDPOINT` host and port that the router dials. */
  endpointHost: string;
  endpointPort: number;
  /** `TUNNEL_HUB_ADDRESS`: the only address routed through the tunnel and let in by the filter rules. */
  hubAddress: string;
  /** The router's assigned tunnel address, put on the interface as a /32. */
  tunnelIp: string;
  /** Ports on the router itself the hub may reach: `TUNNEL_SSH_PORT`, WinBox 8291, WebFig 80. */
  servicePorts: readonly number[];
}

/** Names of what the tunnel part installs; every object but the interface carries `comment`. */
export const WIREGUARD_OBJECTS = {
  interface: "fleet-wg",
  comment: "fleet tunnel: do not edit, run the adoption command again instead",
  keepalive: "25s",
} as const;

const IPV4 = IPV4_PATTERN;
const HOST =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

const checked = (ok: boolean, what: string): void => {
  if (!ok) throw new RouterOsScriptError(`adoption script: ${what}`);
};

const port = (value: number): boolean => Number.isSafeInteger(value) && value >= 1 && value <= 65535;

const checkWireguard = (w: AdoptionWireguard): void => {
  checked(isWireguardKey(w.hubPublicKey), "the hub's public key is not a WireGuard key");
  checked(
    HOST.test(w.endpointHost) || IPV4.test(w.endpointHost),
    "TUNNEL_WG_ENDPOINT's host is not a host name or IPv4 address",
  );
  checked(port(w.endpointPort), "TUNNEL_WG_ENDPOINT's port is not a port");
  checked(IPV4.test(w.hubAddress), "TUNNEL_HUB_ADDRESS is not an IPv4 address");
  checked(
    IPV4.test(w.tunnelIp) && w.tunnelIp !== w.hubAddress,
    "the router's tunnel address is not an IPv4 address of its own",
  );
  checked(w.servicePorts.length > 0 && w.servicePorts.every(port), "the tunnel's service ports are not ports");
};

const tagged = { comment: str(WIREGUARD_OBJECTS.comment) };

/**
 * Takes off everything the tunnel part installed: filter rules, route and address (by their
 * comment), the interface's peers, and, with `withInterface`, the interface itself (the router's
 * WireGuard private key goes with it). Missing objects are no error. The adoption script and
 * offboarding both run it with the interface: every adoption makes the router a new key.
 */
export const removeWireguardStatements = (withInterface: boolean): RosStatement[] => {
  const name = str(WIREGUARD_OBJECTS.interface);
  return [
    command("ip firewall filter", "remove", {}, [findWhere(tagged)]),
    command("ip route", "remove", {}, [findWhere(tagged)]),
    command("ip address", "remove", {}, [findWhere(tagged)]),
    command("interface wireguard peers", "remove", {}, [findWhere({ interface: name })]),
    ...(withInterface ? [command("interface wireguard", "remove", {}, [findWhere({ name })])] : []),
  ];
};

/**
 * The tunnel part of the adoption script. The interface is removed and added again: the router
 * makes a new key pair at every adoption (the private key never leaves it), so whoever knew an
 * earlier key of the device (a previous owner) cannot bind it. Then one peer (the hub), the
 * router's address as a /32, a route to the hub alone (the router's own WAN may lie in
 * 100.64.0.0/10), and two filter rules moved to the top: input from the hub to the service ports,
 * and forwarded connections the dst-nat rules of forwards made, from the hub only.
 */
export const wireguardAdoptionStatements = (w: AdoptionWireguard): RosStatement[] => {
  checkWireguard(w);
  const o = WIREGUARD_OBJECTS;
  const name = str(o.interface);
  const hub = word(w.hubAddress);
  const toTop = (chain: string) =>
    command("ip firewall filter", "move", { destination: num(0) }, [findWhere({ ...tagged, chain: word(chain) })]);
  return [
    comment('management tunnel (docs/routeros.md "The management tunnel")'),
    ...removeWireguardStatements(true),
    command("interface wireguard", "add", { name, comment: str(o.comment) }),
    command("interface wireguard peers", "add", {
      interface: name,
      "public-key": str(w.hubPublicKey),
      "endpoint-address": str(w.endpointHost),
      "endpoint-port": num(w.endpointPort),
      "allowed-address": str(`${w.hubAddress}/32`),
      "persistent-keepalive": word(o.keepalive),
      ...tagged,
    }),
    command("ip address", "add", { address: str(`${w.tunnelIp}/32`), interface: name, ...tagged }),
    command("ip route", "add", { "dst-address": str(`${w.hubAddress}/32`), gateway: name, ...tagged }),
    command("ip firewall filter", "add", {
      chain: word("forward"),
      action: word("accept"),
      "in-interface": name,
      "src-address": hub,
      "connection-nat-state": word("dstnat"),
      ...tagged,
    }),
    toTop("forward"),
    command("ip firewall filter", "add", {
      chain: word("input"),
      action: word("accept"),
      "in-interface": name,
      "src-address": hub,
      protocol: word("tcp"),
      "dst-port": str(w.servicePorts.join(",")),
      ...tagged,
    }),
    toTop("input"),
  ];
};

/** The heartbeat's `wireguard_public_key`, read on the router (docs/api.md "Routers and heartbeats"). */
export const wireguardKeyHeartbeatStatements = (): RosStatement[] => [
  tryDo([
    set(
      "hb",
      sub(
        command("interface wireguard", "get", {}, [
          sub(command("", "find", { name: str(WIREGUARD_OBJECTS.interface) })),
          word("public-key"),
        ]),
      ),
      "wireguard_public_key",
    ),
  ]),
];
