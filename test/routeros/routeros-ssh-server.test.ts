import { eventually } from "@fleet/shared/testing";
import { once } from "node:events";
import net from "node:net";
import ssh2 from "ssh2";
import { afterEach, describe, expect, it } from "vitest";
import { InMemoryHostKeyStore } from "@fleet/tunnel-agent/routeros/host-key-store";
import type { RouterOsClient } from "@fleet/tunnel-agent/routeros/routeros-client";
import {
  addForwardRule,
  dropConnections,
  listForwardRules,
  listForwardRulesJson,
  parseJsonRules,
  parseTerseRules,
  removeForwardRule,
} from "@fleet/tunnel-agent/routeros/routeros-commands";
import { RouterOsCommandError, SshRouterOsConnector } from "@fleet/tunnel-agent/routeros/ssh-routeros-client";
import {
  type RouterOsSshServerOptions,
  startRouterOsSshServer,
} from "@fleet/router-simulator/routeros/routeros-ssh-server";
import { RouterOsDevice } from "@fleet/router-simulator/routeros/script/routeros-device";
import {
  addGuard,
  guardName,
  removeGuard,
  saveBinaryBackup,
  withDoneMarker,
} from "@fleet/tunnel-agent/routeros/change-commands";
import { generateEd25519KeyPair } from "@fleet/shared";

const HOST = "127.0.0.1";
const ID = "0b6f1c1e-1111-4222-8333-444455556666";
const ID2 = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";
const clientKey = generateEd25519KeyPair();

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

function track(socket: net.Socket): net.Socket {
  cleanups.push(() => socket.destroy());
  return socket;
}

async function listen(server: net.Server, port = 0): Promise<number> {
  server.on("connection", track);
  server.listen(port, HOST);
  await once(server, "listening");
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as net.AddressInfo).port;
}

/** A port that was free a moment ago: bind 0, read it, release it. */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  probe.listen(0, HOST);
  await once(probe, "listening");
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function connectTcp(port: number): Promise<net.Socket> {
  const socket = track(net.connect(port, HOST));
  await once(socket, "connect");
  return socket;
}

async function echoOnce(socket: net.Socket, text: string): Promise<string> {
  socket.write(text);
  const [data] = (await once(socket, "data")) as [Buffer];
  return data.toString();
}

async function connectError(port: number): Promise<string | undefined> {
  const socket = track(net.connect(port, HOST));
  return new Promise((resolve) => {
    socket.once("connect", () => resolve(undefined));
    socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code));
  });
}

async function setup(extra: Partial<RouterOsSshServerOptions> = {}) {
  const echoPort = await listen(net.createServer((s) => s.pipe(s)));
  const lanCalls: Array<[string, number]> = [];
  const sim = await startRouterOsSshServer({
    host: HOST,
    port: 0,
    lan: (address, port) => {
      lanCalls.push([address, port]);
      return { host: HOST, port: echoPort };
    },
    ...extra,
  });
  cleanups.push(() => sim.close());
  const connector = new SshRouterOsConnector({
    username: "fleet",
    privateKey: clientKey.private,
    connectTimeoutMs: 5000,
    commandTimeoutMs: 5000,
    hostKeys: new InMemoryHostKeyStore(),
  });
  const router: RouterOsClient = await connector.connect({ routerId: "simulated", host: HOST, port: sim.port });
  cleanups.push(() => router.close());
  return { sim, router, lanCalls };
}

describe("RouterOS SSH simulator through the agent's ssh2 adapter", () => {
  it("adds a rule, lists it, relays bytes, and removal closes the port and its connections", async () => {
    const { sim, router, lanCalls } = await setup();
    const port = await freePort();
    expect(
      await router.exec(
        addForwardRule({ tunnelIp: HOST, port, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID }),
      ),
    ).toBe("");

    const listed = parseTerseRules(await router.exec(listForwardRules()));
    expect(listed).toEqual([
      expect.objectContaining({
        index: 0,
        forwardId: ID,
        dstPort: port,
        toAddresses: "192.168.88.10",
        toPorts: 22,
        disabled: false,
      }),
    ]);
    expect(sim.rules()[0]).toMatchObject({ id: "*1", props: { comment: `fleet-fwd:${ID}`, "dst-port": String(port) } });

    const socket = await connectTcp(port);
    expect(await echoOnce(socket, "ping")).toBe("ping");
    expect(lanCalls).toEqual([["192.168.88.10", 22]]);
    expect(sim.connections()).toBe(1);

    const ended = once(socket, "close");
    expect(await router.exec(removeForwardRule(ID))).toBe("");
    await ended;
    expect(await connectError(port)).toBe("ECONNREFUSED");
    expect(sim.connections()).toBe(0);
    expect(parseTerseRules(await router.exec(listForwardRules()))).toEqual([]);
  });

  it("answers the :serialize to=json listing (RouterOS 7.13+) with the same rules as print terse", async () => {
    const { sim, router } = await setup();
    const port = await freePort();
    await router.exec(
      addForwardRule({ tunnelIp: HOST, port, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID }),
    );
    await router.exec(
      '/ip firewall nat add chain=dstnat protocol=tcp dst-port=1 action=dst-nat to-addresses=10.0.0.1 comment="x fleet-fwd:"',
    );
    const json = parseJsonRules(await router.exec(listForwardRulesJson()));
    const terse = parseTerseRules(await router.exec(listForwardRules()));
    expect(json).toEqual([
      expect.objectContaining({
        forwardId: ID,
        dstPort: port,
        toAddresses: "192.168.88.10",
        toPorts: 22,
        disabled: false,
      }),
    ]);
    expect(json[0]?.raw).toMatchObject({ ".id": "*1", "dst-address": HOST, chain: "dstnat", action: "dst-nat" });
    expect(terse.map(({ index: _index, raw: _raw, ...rule }) => rule)).toEqual(
      json.map(({ raw: _raw, ...rule }) => rule),
    );
    expect(sim.commands()).toContain(
      ':put [:serialize to=json [/ip firewall nat print as-value where comment~"^fleet-fwd:"]]',
    );
  });

  it("enforces dst-address: a pinned rule is closed on the WAN address, an unpinned one opens there", async () => {
    const WAN = "127.0.0.3";
    const { router } = await setup({ wanAddress: WAN });
    const [pinned, unpinned] = [await freePort(), await freePort()];
    await router.exec(
      addForwardRule({ tunnelIp: HOST, port: pinned, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID }),
    );
    // The rule form before the fix: no dst-address, so RouterOS matches the port on every address.
    await router.exec(
      `/ip firewall nat add chain=dstnat protocol=tcp dst-port=${unpinned} action=dst-nat to-addresses=192.168.88.10 to-ports=22 comment="fleet-fwd:${ID2}"`,
    );
    expect(await echoOnce(await connectTcp(pinned), "tunnel")).toBe("tunnel");
    const fromWan = async (port: number) => {
      const socket = track(net.connect(port, WAN));
      return new Promise<string>((resolve) => {
        socket.once("connect", () => resolve("connected"));
        socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
      });
    };
    expect(await fromWan(pinned)).toBe("ECONNREFUSED");
    expect(await fromWan(unpinned)).toBe("connected");
  });

  it("treats a repeated add and a repeated remove of the same tag as harmless", async () => {
    const { sim, router } = await setup();
    const port = await freePort();
    const add = addForwardRule({ tunnelIp: HOST, port, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID });
    await router.exec(add);
    await router.exec(add);
    expect(sim.rules().map((r) => r.id)).toEqual(["*1", "*2"]);
    expect(parseTerseRules(await router.exec(listForwardRules())).map((r) => r.forwardId)).toEqual([ID, ID]);
    expect(await echoOnce(await connectTcp(port), "x")).toBe("x");

    await router.exec(removeForwardRule(ID));
    await router.exec(removeForwardRule(ID));
    expect(sim.rules()).toEqual([]);
    expect(await connectError(port)).toBe("ECONNREFUSED");
  });

  it("removes only the tagged rule and keeps other forwards working", async () => {
    const { sim, router } = await setup();
    const [p1, p2] = [await freePort(), await freePort()];
    await router.exec(
      addForwardRule({ tunnelIp: HOST, port: p1, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID }),
    );
    await router.exec(
      addForwardRule({ tunnelIp: HOST, port: p2, dstAddress: "192.168.88.11", dstPort: 80, forwardId: ID2 }),
    );
    await router.exec(removeForwardRule(ID));
    expect(sim.rules().map((r) => r.props.comment)).toEqual([`fleet-fwd:${ID2}`]);
    expect(await connectError(p1)).toBe("ECONNREFUSED");
    expect(await echoOnce(await connectTcp(p2), "still")).toBe("still");
  });

  it("with realistic conntrack, connections outlive the rule until /ip firewall connection remove", async () => {
    const { sim, router } = await setup({ conntrackOutlivesRules: true });
    const port = await freePort();
    await router.exec(
      addForwardRule({ tunnelIp: HOST, port, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID }),
    );
    const socket = await connectTcp(port);
    await router.exec(removeForwardRule(ID));
    expect(await connectError(port)).toBe("ECONNREFUSED");
    expect(await echoOnce(socket, "alive")).toBe("alive");

    await router.exec(dropConnections("127.0.0.2", port));
    expect(sim.connections()).toBe(1);
    const ended = once(socket, "close");
    await router.exec(dropConnections(HOST, port));
    await ended;
    expect(sim.connections()).toBe(0);
  });

  it("only relays sources matching src-address", async () => {
    const { router } = await setup();
    const [blocked, allowed] = [await freePort(), await freePort()];
    await router.exec(
      addForwardRule({
        tunnelIp: HOST,
        port: blocked,
        dstAddress: "192.168.88.10",
        dstPort: 22,
        forwardId: ID,
        srcAddress: "10.0.0.0/8",
      }),
    );
    await router.exec(
      addForwardRule({
        tunnelIp: HOST,
        port: allowed,
        dstAddress: "192.168.88.10",
        dstPort: 22,
        forwardId: ID2,
        srcAddress: "127.0.0.0/8",
      }),
    );
    const rejected = await connectTcp(blocked);
    await once(rejected, "close");
    expect(await echoOnce(await connectTcp(allowed), "ok")).toBe("ok");
  });

  it("answers failure when the dst-port is already taken on the tunnel ip", async () => {
    const { sim, router } = await setup();
    const port = await listen(net.createServer());
    const attempt = router.exec(
      addForwardRule({ tunnelIp: HOST, port, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID }),
    );
    await expect(attempt).rejects.toThrow(/failure: could not listen on 127\.0\.0\.1:\d+: EADDRINUSE/);
    expect(sim.rules()).toEqual([]);
  });

  it.each([
    ["/ip firewall nat frobnicate", "bad command name frobnicate (line 1 column 18)"],
    // "system" is a menu the simulator knows now (offboarding removes scripts and scheduler entries).
    ["/system reboot", "bad command name reboot (line 1 column 9)"],
    [
      "/ip firewall nat add chain=dstnat protocol=tcp dst-port=40001 action=dst-nat to-addresses=lan",
      "failure: value of to-addresses must be ip address",
    ],
    [
      "/ip firewall nat add chain=dstnat protocol=tcp dst-port=70000 action=dst-nat to-addresses=10.0.0.1",
      "failure: value of dst-port out of range (0..65535)",
    ],
    [
      "/ip firewall nat add chain=dstnat protocol=tcp dst-port=1 action=dst-nat to-addresses=10.0.0.1 foo=bar",
      "expected end of command (line 1 column 96)",
    ],
    [
      '/ip firewall nat add chain=dstnat comment="x"; /ip firewall nat add chain=dstnat',
      "syntax error (line 1 column 46)",
    ],
    ['/ip firewall nat add chain=dstnat comment="$[/system reboot]"', "syntax error (line 1 column 44)"],
  ])("reports %j in-band, which the adapter raises as RouterOsCommandError", async (command, text) => {
    const { sim, router } = await setup();
    const error = await router.exec(command).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RouterOsCommandError);
    expect((error as RouterOsCommandError).output.trim()).toBe(text);
    expect(sim.rules()).toEqual([]);
    expect(sim.commands()).toEqual([command]);
  });

  it("never sees injection attempts: the builders refuse them before anything is sent", async () => {
    const { sim, router } = await setup();
    const evil = [`${ID}"; /system reboot; "`, `${ID}]`, `[/system reboot]`, `${ID}\n/system reboot`, "$x", `${ID}\\`];
    for (const forwardId of evil) {
      expect(() =>
        addForwardRule({ tunnelIp: HOST, port: 40001, dstAddress: "192.168.88.10", dstPort: 22, forwardId }),
      ).toThrow();
      expect(() => removeForwardRule(forwardId)).toThrow();
    }
    expect(() =>
      addForwardRule({ tunnelIp: HOST, port: 40001, dstAddress: '10.0.0.1" comment="x', dstPort: 22, forwardId: ID }),
    ).toThrow();
    expect(() => dropConnections("127.0.0.1;", 1)).toThrow();
    await router.exec(listForwardRules());
    expect(sim.commands()).toEqual([listForwardRules()]);
  });

  it("removes users, groups and scheduler entries from an adopted device's tables and the temporary ones alike", async () => {
    const device = new RouterOsDevice({
      identity: "edge-1",
      version: "7.16.2 (stable)",
      boardName: "RB5009UG+S+",
      model: "RB5009UG+S+",
      routerboard: true,
      serialNumber: "HE708ABCDEF",
      licenseId: "AB12-CD34",
      bootedAt: Date.now(),
      http: async () => ({ status: 500, body: "" }),
    });
    cleanups.push(() => device.stop());
    // What adoption installs, in the device's own tables.
    await device.run(
      [
        "/user group add name=fleet-mgmt policy=ssh,read,write",
        "/user add name=fleet-agent group=fleet-mgmt",
        `/user ssh-keys add user=fleet-agent key="${clientKey.public.trim()}"`,
        '/system scheduler add name=fleet-heartbeat interval=1d on-event="/log info hi"',
      ].join("\n"),
    );
    const { sim, router } = await setup({
      configuration: { remove: (menu, target) => device.removeWhere(menu, target) },
    });
    // Temporary access beside it, in the SSH server's local users.
    await router.exec('/user group add name=fleet-read policy="read,ssh"');
    await router.exec('/user add name=fleet-tmp-1 group=fleet-read password="s3cret"');
    const names = () => device.tables.user.map((u) => u.props.name);

    await router.exec('/user remove [find where name="fleet-agent"]');
    expect(names()).toEqual(["admin"]);
    expect(sim.users().map((u) => u.name)).toEqual(["fleet-tmp-1"]);
    await router.exec('/user ssh-keys remove [find where user="fleet-agent"]');
    expect(device.tables["user ssh-keys"]).toEqual([]);
    await router.exec('/user group remove [find where name="fleet-mgmt"]');
    await router.exec('/system scheduler remove [find where name="fleet-heartbeat"]');
    expect(device.tables["user group"].map((g) => g.props.name)).toEqual(["read", "write", "full"]);
    expect(device.tables["system scheduler"]).toEqual([]);
    // A group in use is not removed; the temporary user's removal reaches the local table.
    await expect(router.exec('/user group remove [find where name="fleet-read"]')).rejects.toThrow(/in use/);
    await router.exec('/user remove [find where name="fleet-tmp-1"]');
    expect(sim.users()).toEqual([]);
    await router.exec('/user group remove [find where name="fleet-read"]');
    // Unknown commands in these menus still fail loudly.
    await expect(router.exec("/user frobnicate")).rejects.toThrow(RouterOsCommandError);
    await expect(router.exec('/user ssh-keys frobnicate [find where user="x"]')).rejects.toThrow(/bad command name/);
  });

  it("offers an interactive shell with a RouterOS prompt", async () => {
    const { sim } = await setup();
    const conn = new ssh2.Client();
    cleanups.push(() => conn.end());
    conn.connect({ host: HOST, port: sim.port, username: "admin", privateKey: clientKey.private });
    await once(conn, "ready");
    const stream = await new Promise<ssh2.ClientChannel>((resolve, reject) =>
      conn.shell((err, s) => (err ? reject(err) : resolve(s))),
    );
    let screen = "";
    stream.on("data", (d: Buffer) => {
      screen += d.toString();
    });
    stream.write("/ip firewall nat add chain=dstnat comment=hi\r/ip firewall nat print terse\r");
    await eventually(() => /comment=hi\r\n\[admin@Sim\] > $/.test(screen), "the printed rule and a prompt", 2000);
    expect(sim.commands()).toEqual(["/ip firewall nat add chain=dstnat comment=hi", "/ip firewall nat print terse"]);
  });

  it("runs a fleet change's steps through an adopted device; a router cut off by its change drops its sessions", async () => {
    const device = new RouterOsDevice({
      identity: "edge-1",
      version: "7.15.1 (stable)",
      boardName: "RB5009UG+S+",
      model: "RB5009UG+S+",
      routerboard: true,
      serialNumber: "HE708ABCDEF",
      licenseId: "AB12-CD34",
      bootedAt: Date.now(),
      http: async () => ({ status: 500, body: "" }),
      system: { rebootSeconds: 0.05, breakTunnelOnChange: true },
    });
    cleanups.push(() => device.stop());
    const { router } = await setup({
      script: (text) => device.system.runRemote(text),
      reachable: () => device.system.reachable,
    });
    const name = guardName("0b6c6a8e-1111-4222-8333-944455556666");
    const marked = (script: string) => withDoneMarker(script, "0123456789abcdef");
    const step = async (script: string) => {
      const { text, marker } = marked(script);
      const out = await router.exec(text);
      expect(out).toContain(marker);
      return out;
    };
    await step(saveBinaryBackup(name));
    await step(addGuard(name, 60));
    await step(addGuard(name, 60));
    expect(device.tables["system scheduler"].map((s) => s.props.name)).toEqual([name]);
    // A script that fails stops before the marker, with RouterOS's words.
    const failed = await router.exec(marked("/system backup load name=nothing-here").text).catch((e: unknown) => e);
    expect((failed as RouterOsCommandError).output).toMatch(/no such file nothing-here.backup/);
    expect((failed as RouterOsCommandError).output).not.toContain("fleet-done-");
    // The change answers, then the tunnel is gone: the session and new logins are dropped.
    await step("/ip dns set servers=9.9.9.9");
    expect(device.system.tunnelBroken).toBe(true);
    await expect(router.exec(":put 1")).rejects.toThrow();
    // The guard fires: the router loads its backup, reboots and is reachable again without the change.
    await device.run(`/system backup load name=${name}.backup`);
    await eventually(() => device.system.reachable, "the router back from its backup");
    expect(device.system.settings().dns.servers).toBe("");
    expect(device.tables["system scheduler"]).toEqual([]);
    const again = await setup({
      script: (text) => device.system.runRemote(text),
      reachable: () => device.system.reachable,
    });
    expect((await again.router.exec(marked(removeGuard(name)).text)).split(/\r?\n/)[0]).toBe("0");
  });
});
