import { eventually } from "@fleet/shared/testing";
import {
  type AdoptionScriptInput,
  adoptionScript,
  generateEd25519KeyPair,
  generateWireguardKeyPair,
  isWireguardKey,
  offboardingCommands,
  removeWireguardStatements,
  renderRouterOsScript,
  WIREGUARD_OBJECTS,
} from "@fleet/shared";
import { describe, expect, it } from "vitest";
import { parseRouterOsCommand } from "../routeros-cli-parser.ts";
import { type HttpRequest, RouterOsDevice } from "./routeros-device.ts";

const hub = generateWireguardKeyPair();
const INPUT: AdoptionScriptInput = {
  routerId: "0b6c6a8e-1111-4222-8333-944455556666",
  routerName: "Office",
  heartbeatUrl: "http://127.0.0.1:3001/v1/heartbeat",
  heartbeatToken: "hb_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
  intervalMs: 60_000,
  sshUser: "mgmt",
  tunnelNetwork: "100.64.0.0/10",
  agentPublicKey: generateEd25519KeyPair().public.trim().split(" ").slice(0, 2).join(" "),
  wireguard: {
    hubPublicKey: hub.publicKey,
    endpointHost: "hub.example.net",
    endpointPort: 51820,
    hubAddress: "100.64.0.1",
    tunnelIp: "100.64.0.7",
    servicePorts: [22, 8291, 80],
  },
};

const device = (onTunnelChange?: (d: RouterOsDevice) => Promise<void>) => {
  const requests: HttpRequest[] = [];
  const d = new RouterOsDevice({
    identity: "edge-1",
    version: "7.16.2 (stable)",
    boardName: "RB5009UG+S+",
    model: "RB5009UG+S+",
    routerboard: true,
    serialNumber: "HE708ABCDEF",
    licenseId: "AB12-CD34",
    bootedAt: Date.now(),
    http: async (request) => {
      requests.push(request);
      return { status: 200, body: '{"type":"ack","interval_ms":60000}' };
    },
    ...(onTunnelChange ? { onTunnelChange } : {}),
  });
  return { d, requests };
};

const props = (d: RouterOsDevice, table: Parameters<RouterOsDevice["items"]>[0]) => d.items(table).map((i) => i.props);

describe("the adoption script's management tunnel (TUNNEL_MODE=wireguard)", () => {
  it("builds the interface, the hub peer, the /32 address, the hub route and two filter rules placed first", async () => {
    const { d, requests } = device();
    // An operator's own rule, which the tunnel's rules must precede.
    await d.run('/ip firewall filter add chain=input action=drop comment="defconf: drop all not coming from LAN"');
    await d.run(adoptionScript(INPUT));
    const [wg] = props(d, "interface wireguard");
    expect(wg?.name).toBe(WIREGUARD_OBJECTS.interface);
    expect(isWireguardKey(wg?.["public-key"])).toBe(true);
    expect(props(d, "interface wireguard peers")).toEqual([
      expect.objectContaining({
        interface: "fleet-wg",
        "public-key": hub.publicKey,
        "endpoint-address": "hub.example.net",
        "endpoint-port": "51820",
        "allowed-address": "100.64.0.1/32",
        "persistent-keepalive": "25s",
      }),
    ]);
    expect(props(d, "ip address")).toEqual([
      expect.objectContaining({ address: "100.64.0.7/32", interface: "fleet-wg" }),
    ]);
    // Only the hub goes through the tunnel: the router's WAN may itself be in 100.64.0.0/10.
    expect(props(d, "ip route")).toEqual([
      expect.objectContaining({ "dst-address": "100.64.0.1/32", gateway: "fleet-wg" }),
    ]);
    const filters = props(d, "ip firewall filter");
    expect(filters.map((f) => f.chain)).toEqual(["input", "forward", "input"]);
    expect(filters[0]).toMatchObject({
      action: "accept",
      "in-interface": "fleet-wg",
      "src-address": "100.64.0.1",
      protocol: "tcp",
      "dst-port": "22,8291,80",
    });
    expect(filters[1]).toMatchObject({
      action: "accept",
      "src-address": "100.64.0.1",
      "connection-nat-state": "dstnat",
    });
    expect(filters[2]?.action).toBe("drop");
    // The heartbeat carries the router's public key, which binds it.
    expect(JSON.parse(requests[0]?.body ?? "{}").wireguard_public_key).toBe(wg?.["public-key"]);
    d.stop();
  });

  it("run twice leaves one of each object, and every run makes the router a new key", async () => {
    const changes: number[] = [];
    const { d, requests } = device(async (dev) => {
      changes.push(dev.items("interface wireguard peers").length);
    });
    // A key someone else knows (a previous owner's, or one set by hand) is not kept.
    await d.run(`/interface wireguard add name=fleet-wg comment="mine"`);
    const known = props(d, "interface wireguard")[0]?.["public-key"];
    await d.run(adoptionScript(INPUT));
    const key = props(d, "interface wireguard")[0]?.["public-key"];
    expect(isWireguardKey(key)).toBe(true);
    expect(key).not.toBe(known);
    await d.run(adoptionScript(INPUT));
    expect(props(d, "interface wireguard")).toHaveLength(1);
    const second = props(d, "interface wireguard")[0]?.["public-key"];
    expect(isWireguardKey(second)).toBe(true);
    expect(second).not.toBe(key);
    expect(props(d, "interface wireguard peers")).toHaveLength(1);
    expect(props(d, "ip address")).toHaveLength(1);
    expect(props(d, "ip route")).toHaveLength(1);
    expect(props(d, "ip firewall filter")).toHaveLength(2);
    // Each run's heartbeat carries the key that run made.
    expect(requests.map((r) => JSON.parse(r.body ?? "{}").wireguard_public_key)).toEqual([key, second]);
    expect(changes.length).toBeGreaterThan(0);
    d.stop();
  });

  it("the typed removal takes off everything the tunnel part installed, the interface included", async () => {
    const { d } = device();
    await d.run(adoptionScript(INPUT));
    await d.run(renderRouterOsScript(removeWireguardStatements(true)));
    for (const table of [
      "interface wireguard",
      "interface wireguard peers",
      "ip address",
      "ip route",
      "ip firewall filter",
    ] as const) {
      expect(props(d, table)).toEqual([]);
    }
    // Running it again on a clean router is no error.
    await d.run(renderRouterOsScript(removeWireguardStatements(true)));
    d.stop();
  });

  it("offboarding's commands, as the SSH server parses them, take off the whole tunnel and nothing of the operator's", async () => {
    let changes = 0;
    const { d } = device(async () => {
      changes++;
    });
    await d.run('/ip firewall filter add chain=input action=drop comment="defconf: drop all not coming from LAN"');
    await d.run("/ip address add address=192.168.88.1/24 interface=bridge comment=defconf");
    await d.run("/ip route add dst-address=0.0.0.0/0 gateway=192.168.1.1");
    await d.run(adoptionScript(INPUT));
    const before = changes;
    for (const line of offboardingCommands("mgmt")) {
      const parsed = parseRouterOsCommand(line);
      expect(parsed.ok, line).toBe(true);
      if (parsed.ok && parsed.command.kind === "config-remove") {
        expect(d.removeWhere(parsed.command.menu, parsed.command.target), line).toBe("");
      }
    }
    expect(props(d, "interface wireguard")).toEqual([]);
    expect(props(d, "interface wireguard peers")).toEqual([]);
    expect(props(d, "ip address")).toEqual([
      expect.objectContaining({ address: "192.168.88.1/24", comment: "defconf" }),
    ]);
    expect(props(d, "ip route")).toEqual([expect.objectContaining({ "dst-address": "0.0.0.0/0" })]);
    expect(props(d, "ip firewall filter")).toEqual([
      expect.objectContaining({ comment: "defconf: drop all not coming from LAN" }),
    ]);
    // The real end of the tunnel (`--netns`) hears of the removals, as of the script's changes.
    await eventually(() => changes > before, "another change");
    d.stop();
  });

  it("refuses to build a script from values that are not what they claim", () => {
    const bad = (wireguard: Partial<NonNullable<AdoptionScriptInput["wireguard"]>>) => () =>
      adoptionScript({
        ...INPUT,
        wireguard: { ...(INPUT.wireguard as NonNullable<AdoptionScriptInput["wireguard"]>), ...wireguard },
      });
    expect(bad({ hubPublicKey: "not a key" })).toThrow(/hub's public key/);
    expect(bad({ endpointHost: 'evil" ; /system reset' })).toThrow(/TUNNEL_WG_ENDPOINT/);
    expect(bad({ endpointPort: 0 })).toThrow(/port/);
    expect(bad({ tunnelIp: "100.64.0.1" })).toThrow(/tunnel address/);
    expect(bad({ servicePorts: [] })).toThrow(/service ports/);
  });
});
