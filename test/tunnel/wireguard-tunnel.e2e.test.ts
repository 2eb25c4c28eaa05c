import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { execFileSync } from "node:child_process";
import net from "node:net";
import { createApiKeyCommand } from "@fleet/all-in-one/admin/admin-commands";
import { listRouterJobs } from "@fleet/db";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { FleetApi } from "@fleet/router-simulator/fleet-api";
import { netnsHostAddress } from "@fleet/router-simulator/netns/netns-network";
import { type RunningNetnsFleet, startNetnsFleet } from "@fleet/router-simulator/netns/netns-fleet";
import { generateWireguardKeyPair } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { proxyV1Header } from "@fleet/tunnel-agent";
import { realTunnelUnavailable } from "@fleet/tunnel-agent/wireguard/testing/wireguard-environment";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * The management tunnel end to end over REAL WireGuard (docs/routeros.md "The management tunnel"): the
 * all-in-one system in TUNNEL_MODE=wireguard runs its hub as a wireguard-go interface on this
 * machine; three simulated routers, each in its own network namespace behind a NAT namespace
 * (no route from here to them but the tunnel), adopt with their one-line command, whose WireGuard
 * part becomes a real wireguard-go interface in the namespace. Needs root and wireguard-go.
 * "A forward and an SSH rule reach a LAN device only through the tunnel" is read as: the agent's
 * SSH session that puts the rules on the router, a forward to a LAN web device, and a forward to
 * port 22 of a LAN device all work, while nothing but the hub's WireGuard interface routes to the
 * router from here (docs/routeros.md "The real tunnel: `--netns`").
 */
const unavailable = realTunnelUnavailable();
if (unavailable) {
  process.stderr.write(
    `wireguard-tunnel.e2e.test.ts: the real-tunnel tests (three routers behind NAT come up; a forward and an SSH rule reach the LAN only through the tunnel; removal and re-adoption cut the device off within 1 s; the address-takeover replay reaches nothing; a hub restart restores every peer and traffic) did not run: ${unavailable}\n`,
  );
}

const rand = Math.floor(Math.random() * 200);
const BLOCK = 2_000 + (process.pid % 500) * 10 + (rand % 10);
const UDP_PORT = 51_900 + (process.pid % 100);
const NETWORK = `100.127.${rand}.0/24`;
const HUB = `100.127.${rand}.1`;
const HUB_KEY = generateWireguardKeyPair().privateKey;
const IFNAME = `h23e${process.pid.toString(36).slice(-5)}`;
const SSH_PORT = 2222;
const ALLOWED = "8.8.8.8";

let db: TestDatabase;
let system: TestSystem | undefined;
let fleet: RunningNetnsFleet | undefined;
let api: FleetApi;
let token: string;
const routers: Array<{ id: string; tunnelIp: string }> = [];
/** The forward to router 0's LAN web device, used again after the hub restart. */
let webForward: { id: string; port: number } | undefined;

// One environment for both starts (the restart keeps the JWT secret, so tokens stay valid).
const BASE_ENV = testSystemEnv();
const config = () => {
  const loaded = loadAllInOneConfig({
    ...BASE_ENV,
    HEARTBEAT_INTERVAL_MS: "1000",
    TUNNEL_MODE: "wireguard",
    TUNNEL_WG_ENDPOINT: `${netnsHostAddress(BLOCK)}:${UDP_PORT}`,
    TUNNEL_WG_PORT: String(UDP_PORT),
    TUNNEL_WG_INTERFACE: IFNAME,
    TUNNEL_WG_IMPLEMENTATION: "userspace",
    TUNNEL_WG_PRIVATE_KEY: HUB_KEY,
    TUNNEL_WG_STATUS_POLL_MS: "200",
    TUNNEL_NETWORK: NETWORK,
    TUNNEL_SSH_PORT: String(SSH_PORT),
    TUNNEL_SSH_USER: "mgmt",
    ENTRY_POINT_BIND: "127.0.0.1",
    // Tests connect from loopback; allow_from must be public: the source comes in a PROXY header.
    ENTRY_POINT_PROXY_PROTOCOL: "true",
    ENTRY_POINT_PORTS: "63700-63799",
    TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
    // No quarantine: the address-takeover replay gives a removed router's address to another
    // tenant at once; in this mode the address belongs to a device key, not to whoever holds it.
    TUNNEL_ADDRESS_QUARANTINE_DAYS: "0",
  });
  // Through the tunnel a router answers SSH in milliseconds; a removed router's jobs (offboarding,
  // the takeover replay's forward) wait this long for nothing, and so does the agent's close.
  loaded.tunnelAgent.ssh.connectTimeoutMs = 4_000;
  return loaded;
};

const call = async (method: string, path: string, body?: unknown) => {
  if (!system) throw new Error("system not running");
  const res = await fetch(`${system.api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

const hubPeers = async () => {
  const hub = system?.tunnelAgent.hub?.hub;
  if (!hub) return new Map<string, string>();
  return new Map((await hub.device.state()).peers.map((p) => [p.allowedIps.join(","), p.publicKey]));
};

/** An HTTP GET through the entry point (or straight at an address); the answer's body or the error code. */
const httpGet = (host: string, port: number, timeoutMs = 3_000, viaEntryPoint = false): Promise<string> =>
  new Promise((resolve) => {
    const socket = net.connect({ host, port });
    let got = "";
    const done = (value: string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => done(got || "timeout"), timeoutMs);
    socket.on("connect", () => {
      const request = Buffer.from("GET / HTTP/1.1\r\nHost: lan\r\nConnection: close\r\n\r\n");
      const header = viaEntryPoint
        ? proxyV1Header({ address: ALLOWED, port: 40_123 }, { address: host, port })
        : Buffer.alloc(0);
      socket.write(Buffer.concat([header, request]));
    });
    socket.on("data", (chunk: Buffer) => {
      got += chunk.toString();
    });
    socket.on("end", () => done(got));
    socket.on("error", (error: NodeJS.ErrnoException) => done(got || (error.code ?? "error")));
  });

const tunnelStatus = async (routerId: string) =>
  (await call("GET", `/api/routers/${routerId}/metadata`)).body?.data?.tunnel_status as string | undefined;

/** An echo over a connection through the entry point (the PROXY header first), or the error code. */
const echoVia = (port: number, payload: string, timeoutMs = 3_000): Promise<string> =>
  new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    let got = "";
    const done = (value: string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => done(got || "timeout"), timeoutMs);
    socket.on("connect", () => {
      socket.write(
        Buffer.concat([
          proxyV1Header({ address: ALLOWED, port: 40_124 }, { address: "127.0.0.1", port }),
          Buffer.from(payload),
        ]),
      );
    });
    socket.on("data", (chunk: Buffer) => {
      got += chunk.toString();
      if (got.length >= payload.length) done(got);
    });
    socket.on("error", (error: NodeJS.ErrnoException) => done(got || (error.code ?? "error")));
  });

/** `ip ...` on this machine (the hub's namespace), or in a router's namespace. */
const ip = (args: string[], namespace?: string): string =>
  execFileSync("ip", namespace ? ["netns", "exec", namespace, "ip", ...args] : args).toString();

/** Bytes the router's own WireGuard received from the hub (`wg show <link> transfer`, in its namespace). */
const receivedFromHub = (index: number): number => {
  const router = fleet?.routers[index];
  if (!router) throw new Error(`no router ${index}`);
  const out = execFileSync("ip", ["netns", "exec", router.namespace, "wg", "show", router.linkName, "transfer"]);
  return Number(out.toString().trim().split("\t")[1] ?? Number.NaN);
};

const forwardTo = async (routerId: string, dstPort = 80, authorization = token) => {
  const res = await fetch(`${system?.api.url}/api/routers/${routerId}/transient-forwarding`, {
    method: "POST",
    headers: { authorization: `Bearer ${authorization}`, "content-type": "application/json" },
    body: JSON.stringify({
      dst_address: "192.168.88.10",
      dst_port: dstPort,
      expire_after_minutes: 30,
      allow_from: ALLOWED,
    }),
  });
  const created = { status: res.status, body: await res.json() };
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const forward = created.body as { id: string; port: number };
  // Applied: the agent added the rule over SSH through the tunnel.
  await eventually(async () => {
    const [row] = await db.query<{ applied_at: unknown }>("select applied_at from forwards where id = $1", [
      forward.id,
    ]);
    return row?.applied_at;
  }, "the forward's rule on the router");
  await eventually(() => system?.tunnelAgent.relay.listening().some((l) => l.id === forward.id), "the relay listener");
  return forward;
};

describe.skipIf(unavailable !== undefined)("the management tunnel over real WireGuard, routers behind NAT", () => {
  beforeAll(async () => {
    db = await createTestDatabase();
    system = await startTestSystem({
      config: config(),
      logger: pino({ level: "silent" }),
      db,
    });
    api = new FleetApi(system.api.url);
    const email = `tunnel-${crypto.randomUUID()}@example.com`;
    await api.login(email);
    await api.ensureAccount(email);
    token = (
      (await (
        await fetch(`${system.api.url}/v1/auth/dev-login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email }),
        })
      ).json()) as { access_token: string }
    ).access_token;
    const enrolled: Array<{ router_id: string; adoption_command: string }> = [];
    for (let i = 0; i < 3; i++) {
      const router = await api.enroll(`tunnelled ${i}`);
      enrolled.push({ router_id: router.router_id, adoption_command: router.adoption_command ?? "" });
      const metadata = await call("GET", `/api/routers/${router.router_id}/metadata`);
      routers.push({ id: router.router_id, tunnelIp: metadata.body.data.tunnel_ip });
    }
    fleet = await startNetnsFleet({
      routers: enrolled,
      sshPort: SSH_PORT,
      prefix: "h23t",
      block: BLOCK,
      stateDir: "/tmp/h23-netns-state",
      onError: (index, error) => process.stderr.write(`router ${index}: ${error.message}\n`),
    });
  }, 120_000);

  afterAll(async () => {
    // Also when a test failed: every namespace, wireguard-go and child process goes. Each step's
    // time is printed when it is slow, so a timeout here names its cause.
    const step = async (name: string, close: (() => Promise<void>) | undefined) => {
      const started = Date.now();
      await close?.();
      if (Date.now() - started > 5_000) process.stderr.write(`afterAll: ${name} took ${Date.now() - started} ms\n`);
    };
    await step("the simulated fleet", fleet && (() => fleet?.close() ?? Promise.resolve()));
    await step("the system", system && (() => system?.close() ?? Promise.resolve()));
    await step("the database", db && (() => db?.close() ?? Promise.resolve()));
  }, 120_000);

  it("each router binds its key with its first heartbeat and its tunnel comes up; the hub holds exactly their peers", async () => {
    expect(fleet?.fleet.summary().adopted).toBe(3);
    for (const router of routers) {
      expect(router.tunnelIp).toMatch(/^100\.127\./);
      expect(router.tunnelIp).not.toBe(HUB);
      await eventually(async () => (await tunnelStatus(router.id)) === "up", `router ${router.tunnelIp} up`, 30_000);
    }
    const peers = await hubPeers();
    expect([...peers.keys()].sort()).toEqual(routers.map((r) => `${r.tunnelIp}/32`).sort());
    const audit = await call("GET", `/api/audit-log?action=router.tunnel.up`);
    expect(new Set(audit.body.data.map((e: { router_id: string }) => e.router_id))).toEqual(
      new Set(routers.map((r) => r.id)),
    );
  }, 60_000);

  it("a forward and an SSH rule reach a LAN device only through the tunnel: the router's own network is not routed from here", async () => {
    const [router] = routers;
    if (!router) throw new Error("no router");
    // From the hub's namespace the only way to a router's address is the hub's WireGuard interface.
    expect(ip(["route", "get", router.tunnelIp])).toContain(`dev ${IFNAME}`);
    // The rules were put on the router by the agent's SSH session, which therefore ran through the
    // tunnel: the router's SSH server listens only inside its namespace, on its tunnel address.
    webForward = await forwardTo(router.id);
    expect(await httpGet("127.0.0.1", webForward.port, 3_000, true)).toContain(
      `simulated LAN device behind ${router.tunnelIp}`,
    );
    // An SSH rule: a forward to port 22 of a LAN device (the simulated LAN's other device answers
    // every non-web port by echoing), e.g. a switch or server behind the router.
    const ssh = await forwardTo(router.id, 22);
    expect(await echoVia(ssh.port, "SSH-2.0-engineer\r\n")).toBe("SSH-2.0-engineer\r\n");
    // The router's WAN address (behind the NAT) is unreachable from the hub's machine, and the
    // router's namespace has no route to this machine's tunnel addresses but through its own tunnel.
    const wan = fleet?.network.routers[0]?.wanAddress ?? "";
    expect(await httpGet(wan, SSH_PORT, 1_000)).not.toContain("SSH");
    const ns = fleet?.routers[0];
    expect(ip(["route", "get", HUB], ns?.namespace)).toContain(`dev ${ns?.linkName}`);
  }, 60_000);

  it("removing a router makes its device unreachable within 1 s: the hub's peer is gone", async () => {
    const router = routers[2];
    if (!router) throw new Error("no router");
    expect((await hubPeers()).has(`${router.tunnelIp}/32`)).toBe(true);
    expect((await call("DELETE", `/api/routers/${router.id}`)).status).toBe(204);
    // CONTRACT 13: within 1 s of the removal, i.e. of its answer (the request itself is the API's time).
    const started = performance.now();
    await eventually(
      async () => !(await hubPeers()).has(`${router.tunnelIp}/32`),
      "the removed router's peer to go",
      1_000,
    );
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await httpGet(router.tunnelIp, SSH_PORT, 1_000)).not.toContain("SSH");
  }, 30_000);

  it("re-adopting a router makes its device unreachable within 1 s until the device binds again", async () => {
    const router = routers[1];
    if (!router) throw new Error("no router");
    expect(await httpGet(router.tunnelIp, SSH_PORT, 3_000)).toContain("SSH-2.0");
    expect((await call("POST", `/api/routers/${router.id}/adoption`)).status).toBe(201);
    const started = performance.now();
    await eventually(
      async () => !(await hubPeers()).has(`${router.tunnelIp}/32`),
      "the re-adopted router's peer to go",
      1_000,
    );
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await httpGet(router.tunnelIp, SSH_PORT, 1_000)).not.toContain("SSH");
    expect(await tunnelStatus(router.id)).toBe("pending");
  }, 30_000);

  it("key squatting: a router that binds another device's key never shows up, though that device handshakes", async () => {
    // Router 1 was re-adopted above: its device still holds its old key, now bound to nobody, and
    // keeps dialling the hub. Another tenant's router binds that key with its own heartbeat.
    const victim = fleet?.routers[1];
    if (!victim) throw new Error("no router 1");
    const victimKey = execFileSync("ip", [
      "netns",
      "exec",
      victim.namespace,
      "wg",
      "show",
      victim.linkName,
      "public-key",
    ])
      .toString()
      .trim();
    const email = `squatter-${crypto.randomUUID()}@example.com`;
    const squatterApi = new FleetApi(system?.api.url ?? "");
    await squatterApi.login(email);
    await squatterApi.ensureAccount(email);
    const squatter = await squatterApi.enroll("squatter");
    const squatterToken = (
      (await (
        await fetch(`${system?.api.url}/v1/auth/dev-login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email }),
        })
      ).json()) as { access_token: string }
    ).access_token;
    const asSquatter = async (path: string): Promise<unknown> => {
      const res = await fetch(`${system?.api.url}${path}`, { headers: { authorization: `Bearer ${squatterToken}` } });
      return ((await res.json()) as { data: unknown }).data;
    };
    const beat = await fetch(`${system?.heartbeat.url}/v1/heartbeat`, {
      method: "POST",
      headers: { authorization: `Bearer ${squatter.heartbeat_token}`, "content-type": "application/json" },
      body: JSON.stringify({ type: "heartbeat", identity: "squatter", wireguard_public_key: victimKey }),
    });
    expect(beat.status).toBe(200);
    const metadata = async () =>
      (await asSquatter(`/api/routers/${squatter.router_id}/metadata`)) as Record<string, unknown>;
    const squatterIp = (await metadata()).tunnel_ip;
    expect(squatterIp).toMatch(/^100\.127\./);
    await eventually(
      async () => (await hubPeers()).get(`${squatterIp}/32`) === victimKey,
      "the hub's peer for the squatter's binding",
    );
    // The device holding the key handshakes at once: its hub peer is set again (a new peer sends
    // its first keepalive, which starts a handshake), as it would at its next rekey anyway.
    const wg = (...args: string[]) =>
      execFileSync("ip", ["netns", "exec", victim.namespace, "wg", ...args])
        .toString()
        .trim();
    const [hubKey, , endpoint, allowed, , , , keepalive] = (
      wg("show", victim.linkName, "dump").split("\n")[1] ?? ""
    ).split("\t");
    wg("set", victim.linkName, "peer", hubKey ?? "", "remove");
    wg("set", victim.linkName, "peer", hubKey ?? "", "endpoint", endpoint ?? "", "allowed-ips", allowed ?? "");
    wg("set", victim.linkName, "peer", hubKey ?? "", "persistent-keepalive", keepalive ?? "25");
    // The hub recorded the handshake with the squatter's key...
    await eventually(async () => (await metadata()).tunnel_handshake_at, "the handshake recorded", 30_000);
    // ... yet nothing answers at the squatter's address through the tunnel: it is never up.
    expect((await metadata()).tunnel_status).toBe("down");
    // Its tenant's audit log has no router.tunnel.up (it is written with the handshake that flips it).
    const audit = (await asSquatter(`/api/audit-log?router_id=${squatter.router_id}`)) as Array<{ action: string }>;
    expect(audit.map((e) => e.action)).not.toContain("router.tunnel.up");

    // The device's owner adopts it again: the script makes the device a new key (CONTRACT 13), which
    // binds to its router and comes up; the key the squatter bound opens nothing of it.
    const owner = routers[1];
    const device = fleet?.fleet.routers[1];
    if (!owner || !device) throw new Error("no router 1");
    const again = await call("POST", `/api/routers/${owner.id}/adoption`);
    expect(again.status).toBe(201);
    await device.device.run(again.body.data.command);
    const newKey = wg("show", victim.linkName, "public-key");
    expect(newKey).not.toBe(victimKey);
    await eventually(async () => (await hubPeers()).get(`${owner.tunnelIp}/32`) === newKey, "the new key's peer");
    // Up takes the new key's handshake and then the hub's next probe (10 s apart after a failed one):
    // on a loaded CI machine that can pass 30 s.
    await eventually(async () => (await tunnelStatus(owner.id)) === "up", "the re-adopted router up", 75_000);
    expect((await metadata()).tunnel_status).toBe("down");
  }, 180_000);

  it("the address-takeover replay: another tenant given a removed router's address reaches nothing of its device", async () => {
    // Router 2 (tenant A's) was removed above; its device still runs, with its address X and its
    // tunnel to the hub configured, and keeps dialling the hub.
    const victim = routers[2];
    if (!victim) throw new Error("no router");
    const email = `tunnel-b-${crypto.randomUUID()}@example.com`;
    const b = new FleetApi(system?.api.url ?? "");
    await b.login(email);
    await b.ensureAccount(email);
    const login = (await (
      await fetch(`${system?.api.url}/v1/auth/dev-login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email }),
      })
    ).json()) as { organization_id: string; access_token: string };
    const operator = await createApiKeyCommand({ db, heartbeatIntervalMs: 1_000 }, login.organization_id, "operator", [
      "tunnel:assign",
      "routers:read",
      "routers:write",
    ]);
    const claim = await fetch(`${system?.api.url}/api/routers`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${(operator.json as { key: string }).key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ name: "at X", tunnel_ip: victim.tunnelIp }),
    });
    const claimed = (await claim.json()) as { data: { router: { id: string } } };
    expect(claim.status, JSON.stringify(claimed)).toBe(201);
    const bRouter = claimed.data.router.id as string;

    // X now belongs to B's router, which has no device key bound: the hub holds no peer for X,
    // and none for A's key any more.
    const peers = await hubPeers();
    expect(peers.has(`${victim.tunnelIp}/32`)).toBe(false);
    const received = receivedFromHub(2);
    const res = await fetch(`${system?.api.url}/api/routers/${bRouter}/transient-forwarding`, {
      method: "POST",
      headers: { authorization: `Bearer ${login.access_token}`, "content-type": "application/json" },
      body: JSON.stringify({
        dst_address: "192.168.88.10",
        dst_port: 80,
        expire_after_minutes: 30,
        allow_from: ALLOWED,
      }),
    });
    const forward = (await res.json()) as { id: string; port: number };
    expect(res.status, JSON.stringify(forward)).toBe(201);
    // The agent's attempt to put B's rule at X goes nowhere: no peer carries X (the SSH connection
    // times out, the job fails and is retried), and the relay never listens for B's forward.
    await eventually(
      async () => (await listRouterJobs(db, { routerId: bRouter })).some((j) => j.lastError !== null),
      "B's apply job failing to reach X",
      30_000,
    );
    expect(system?.tunnelAgent.relay.listening().some((l) => l.id === forward.id)).toBe(false);
    expect(await httpGet("127.0.0.1", forward.port, 1_000, true)).not.toContain("simulated LAN device");
    // A's device got not one byte from the hub meanwhile, though it is up and dialling.
    expect(receivedFromHub(2)).toBe(received);
    expect((await hubPeers()).has(`${victim.tunnelIp}/32`)).toBe(false);
  }, 60_000);

  it("a hub restart restores every bound peer, and traffic resumes without waiting for the router's rekey", async () => {
    const before = await hubPeers();
    expect(before.size).toBeGreaterThan(0);
    const [router] = routers;
    if (!router || !webForward) throw new Error("no forward from the earlier test");
    // The hub stored where each router's tunnel comes from (its NAT's mapping) while it ran.
    const natSide = `${fleet?.network.hostAddress.split(".").slice(0, 3).join(".")}.`;
    const endpoint = await eventually(async () => {
      const [row] = await db.query<{ endpoint: string | null }>(
        "select endpoint from router_wireguard_peers where router_id = $1",
        [router.id],
      );
      return row?.endpoint?.startsWith(natSide) ? row.endpoint : undefined;
    }, "router 0's endpoint stored");
    await system?.close();
    system = undefined;
    // The new hub deletes the interface the old one left and builds its peers from the database,
    // each primed with its router's last endpoint.
    system = await startTestSystem({ config: config(), logger: pino({ level: "silent" }), db });
    expect(await hubPeers()).toEqual(before);
    // Before any traffic, the new hub already knows where router 0 is.
    const primed = (await system.tunnelAgent.hub?.hub.device.state())?.peers.find((p) =>
      p.allowedIps.includes(`${router.tunnelIp}/32`),
    );
    expect(primed?.endpoint).toBe(endpoint);
    // The router still holds its old session, which the new hub cannot read; without the primed
    // endpoint only the router's rekey (up to 2 minutes) would start a new one. With it, the relay's
    // first connection makes the hub start the handshake itself (WireGuard retries every 5 s).
    const forward = webForward;
    await eventually(
      () => system?.tunnelAgent.relay.listening().some((l) => l.id === forward.id),
      "the relay listener",
    );
    await eventually(
      async () =>
        (await httpGet("127.0.0.1", forward.port, 3_000, true)).includes(
          `simulated LAN device behind ${router.tunnelIp}`,
        ),
      // Bounded by WireGuard's handshake retry (5 s), far below the router's 2-minute rekey.
      "traffic through the forward after the hub restart",
      30_000,
    );
  }, 90_000);
});
