import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { createApiKeyCommand } from "@fleet/all-in-one/admin/admin-commands";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { AdoptedRouter } from "@fleet/router-simulator/adoption/adopted-router";
import { type RunningAdoptedFleet, startAdoptedFleet } from "@fleet/router-simulator/adoption/adopted-fleet";
import { FleetApi } from "@fleet/router-simulator/fleet-api";
import { type SimulatedRouterOs, startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";
import { tunnelIpFor } from "@fleet/router-simulator";
import { InMemoryHostKeyStore } from "@fleet/tunnel-agent/routeros/host-key-store";
import { SshRouterOsConnector } from "@fleet/tunnel-agent/routeros/ssh-routeros-client";
import { generateEd25519KeyPair } from "@fleet/shared";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "@fleet/shared/testing";
import { connectAs, echo, freePortOn } from "../forwards/forward-fixtures.ts";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * docs/routeros.md "Adoption" and "Simulator" end to end: the whole system in one process, and
 * simulated routers that adopt exactly as real ones do. Each pastes the command of its enroll
 * answer into its simulated RouterOS, which fetches the script over HTTP, imports it (group, user,
 * key, script, scheduler) and from then on posts heartbeats with `/tool fetch`. The tunnel agent
 * then applies a forward by logging in with the key and user the script installed.
 */
const ROUTERS = 3;
const INTERVAL_MS = 300;
const SSH_USER = "fleet-agent";
const TUNNELS = Array.from({ length: ROUTERS }, (_, i) => tunnelIpFor(i));

let db: TestDatabase;
let system: TestSystem;
let fleet: RunningAdoptedFleet;
let sshPort: number;
let email: string;
const routerOs = new Map<string, SimulatedRouterOs>();
const enrolled: Array<{ router_id: string; adoption_command: string; heartbeat_token: string }> = [];
// The agent's key as a file (TUNNEL_SSH_KEY), so the test can also try it under another user name.
const agentKey = generateEd25519KeyPair();
const keyDir = mkdtempSync(path.join(tmpdir(), "fleet-adopt-"));
const agentKeyFile = path.join(keyDir, "id_ed25519");
writeFileSync(agentKeyFile, agentKey.private, { mode: 0o600 });

const call = async (method: string, path: string, token?: string, body?: unknown) => {
  const res = await fetch(`${system.api.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

const accessToken = async () =>
  (await call("POST", "/v1/auth/dev-login", undefined, { email })).body.access_token as string;

beforeAll(async () => {
  db = await createTestDatabase();
  sshPort = await freePortOn(TUNNELS);
  const config = loadAllInOneConfig({
    ...testSystemEnv(),
    HEARTBEAT_INTERVAL_MS: String(INTERVAL_MS),
    TUNNEL_SSH_PORT: String(sshPort),
    TUNNEL_SSH_USER: SSH_USER,
    TUNNEL_SSH_KEY: agentKeyFile,
    // The simulator's tunnel addresses are loopback ones.
    TUNNEL_NETWORK: "127.0.0.0/8",
    ENTRY_POINT_HOST: "entry.e2e.test",
    ENTRY_POINT_BIND: "127.0.0.1",
    ENTRY_POINT_PORTS: "63320-63339",
    ENTRY_POINT_PROXY_PROTOCOL: "true",
    TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
  });
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });

  email = `adopt-${crypto.randomUUID()}@example.com`;
  const api = new FleetApi(system.api.url);
  await api.login(email);
  await api.ensureAccount(email);
  // Choosing tunnel_ip takes the platform scope tunnel:assign (docs/api.md "Authentication"): an
  // operator's key made the way `npm run admin -- apikey create --scopes ...` makes it.
  const login = await call("POST", "/v1/auth/dev-login", undefined, { email });
  const operator = await createApiKeyCommand(
    { db, heartbeatIntervalMs: INTERVAL_MS },
    login.body.organization_id,
    "operator",
    ["tunnel:assign", "routers:read", "routers:write"],
  );
  api.useToken((operator.json as { key: string }).key);
  for (const [i, tunnelIp] of TUNNELS.entries()) {
    const router = await api.enroll(`Adopted ${i}`, tunnelIp);
    enrolled.push({
      router_id: router.router_id,
      adoption_command: router.adoption_command ?? "",
      heartbeat_token: router.heartbeat_token,
    });
    // The management tunnel address is the system's to assign (docs/api.md "Routers and heartbeats");
    // where this build's enrollment does not take it from the body yet, the operator's assignment is written here.
    await db.query("update routers set tunnel_ip = $1 where id = $2 and tunnel_ip is null", [
      tunnelIp,
      router.router_id,
    ]);
  }

  fleet = await startAdoptedFleet({
    routers: enrolled,
    onRouter: async (router: AdoptedRouter) => {
      const ros = await startSimulatedRouterOs({ tunnelIp: router.tunnelIp, sshPort, authorize: router.authorize });
      routerOs.set(router.tunnelIp, ros);
      return () => ros.close();
    },
  });
});

afterAll(async () => {
  await fleet?.close();
  await system?.close();
  await db?.close();
  rmSync(keyDir, { recursive: true, force: true });
});

describe("routers adopted with the one-line command", () => {
  it("run the script: group, user limited to the tunnel network, the agent's key, script and scheduler", () => {
    expect(fleet.summary()).toMatchObject({ routers: ROUTERS, adopted: ROUTERS });
    for (const router of fleet.routers) {
      const { tables } = router.device;
      expect(tables["user group"].filter((g) => g.props.name === "fleet-mgmt").map((g) => g.props.policy)).toEqual([
        "ssh,read,write,test",
      ]);
      expect(tables.user.find((u) => u.props.name === SSH_USER)?.props).toMatchObject({
        group: "fleet-mgmt",
        address: "127.0.0.0/8",
      });
      expect(tables["user ssh-keys"].map((k) => k.props)).toEqual([
        { user: SSH_USER, key: system.tunnelAgent.publicKey },
      ]);
      expect(tables["system scheduler"].map((s) => s.props.interval)).toEqual(["300ms"]);
      expect(tables.file).toEqual([]);
    }
  });

  it("beat over HTTP exactly as the installed script posts, and show up online", async () => {
    const token = await accessToken();
    const list = async () => (await call("GET", "/api/routers", token)).body.data as Array<Record<string, unknown>>;
    await eventually(async () => (await list()).filter((r) => r.has_pulse).length === ROUTERS, "every router online");
    const routers = await list();
    for (const [i, router] of fleet.routers.entries()) {
      const row = routers.find((r) => r.id === router.routerId);
      expect(row).toMatchObject({ identity: `sim-000${i + 1}`, last_seen_from: router.tunnelIp });
      const request = router.requests.find((r) => r.method === "POST");
      expect(request?.url).toBe(`${system.heartbeat.url}/v1/heartbeat`);
      expect(request?.headers).toEqual([
        ["Authorization", `Bearer ${enrolled[i]?.heartbeat_token}`],
        ["Content-Type", "application/json"],
      ]);
      expect(request?.status).toBe(200);
    }
    // The CHR (every third router) has no serial number: its system id stands in.
    const chr = routers.find((r) => r.id === fleet.routers[2]?.routerId);
    expect(chr).toMatchObject({ hardwareboard: false, model: "CHR" });
    expect(chr?.serial_number).toBe(chr?.software_id);
  });

  it("used their adoption URLs up: the script answers 410 after the first heartbeat", async () => {
    for (const router of enrolled) {
      const url = /url="([^"]+)"/.exec(router.adoption_command)?.[1] ?? "";
      expect((await fetch(url)).status).toBe(410);
    }
    // Pasting a used command into another router fails at the fetch, before anything is installed.
    const copycat = new AdoptedRouter({
      index: 8,
      routerId: "copycat",
      adoptionCommand: enrolled[0]?.adoption_command ?? "",
      tunnelIp: "127.0.9.8",
      bindTunnelIp: false,
    });
    await expect(copycat.adopt()).rejects.toThrow(/<410>/);
    expect(copycat.device.tables["system scheduler"]).toEqual([]);
    expect(copycat.device.tables.file).toEqual([]);
  });

  it("re-adopt: a new command replaces the token; the old one is refused, the router runs the new script and beats again", async () => {
    const token = await accessToken();
    const router = fleet.routers[0];
    if (!router) throw new Error("router 0 is missing");
    const again = await call("POST", `/api/routers/${router.routerId}/adoption`, token);
    expect(again.status).toBe(201);
    // Its scheduler still posts the old token, which the daemon now refuses.
    await eventually(() => router.requests.at(-1)?.status === 401, "the old token to be refused");
    await router.device.run(again.body.data.command);
    const newToken = (request: (typeof router.requests)[number]) =>
      request.headers.find(([name]) => name === "Authorization")?.[1] !== `Bearer ${enrolled[0]?.heartbeat_token}`;
    await eventually(
      () => router.requests.some((r) => newToken(r) && r.status === 200),
      "heartbeats with the new token",
    );
    // Running the script over the earlier installation left one of each object.
    const { tables } = router.device;
    expect(tables["system scheduler"]).toHaveLength(1);
    expect(tables["system script"]).toHaveLength(1);
    expect(tables["user ssh-keys"]).toHaveLength(1);
    expect(tables.user.filter((u) => u.props.name === SSH_USER)).toHaveLength(1);
  });

  it("keeps hostile names and identities inside their strings, from the enroll answer to the heartbeat", async () => {
    const name = 'Shop "A" $HOME [/system reboot]; /user remove 0 ? Zürich ✓';
    const identity = 'edge "7" $x [/system reset-configuration]; ü東京';
    const api = new FleetApi(system.api.url);
    await api.login(email);
    const enrolledHostile = await api.enroll(name);
    const router = new AdoptedRouter({
      index: 7,
      routerId: enrolledHostile.router_id,
      adoptionCommand: enrolledHostile.adoption_command ?? "",
      tunnelIp: "127.0.9.9",
      bindTunnelIp: false,
      identity,
    });
    try {
      await router.adopt();
      expect(router.device.log.map((l) => l.message)).toContain(
        `fleet adoption of router ${name} (${enrolledHostile.router_id})`,
      );
      // Nothing else ran: the only objects are the ones the script installs.
      expect(router.device.tables.user.map((u) => u.props.name)).toEqual(["admin", SSH_USER]);
      const token = await accessToken();
      await eventually(async () => {
        const rows = (await call("GET", "/api/routers", token)).body.data as Array<Record<string, unknown>>;
        return rows.find((r) => r.id === enrolledHostile.router_id)?.identity === identity;
      }, "the hostile identity to arrive intact");
    } finally {
      router.stop();
    }
  });

  it("let the agent in with the installed key and user only, and a forward carries traffic", async () => {
    const token = await accessToken();
    const router = fleet.routers[1];
    const ros = routerOs.get(router?.tunnelIp ?? "");
    if (!router || !ros) throw new Error("router 1 is missing");
    const created = await call("POST", `/api/routers/${router.routerId}/transient-forwarding`, token, {
      expire_after_minutes: 30,
      dst_port: 7,
      dst_address: "192.168.88.20",
      allow_from: "8.8.8.0/24",
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const forward = created.body as { id: string; port: number };
    await eventually(() => ros.ssh.rules().some((r) => r.props.comment === `fleet-fwd:${forward.id}`), "the rule");
    await eventually(() => system.tunnelAgent.relay.listening().some((l) => l.id === forward.id), "the relay");
    const client = await connectAs(forward.port, "8.8.8.8", { payload: "hello " });
    expect(await echo(client.socket, "adopted")).toBe("hello adopted");
    client.socket.end();

    // The same key under another name, or another key under the installed name, is refused.
    for (const [username, key] of [
      ["admin", undefined],
      [SSH_USER, generateEd25519KeyPair().private],
    ] as const) {
      const connector = new SshRouterOsConnector({
        username,
        privateKey: key ?? agentKey.private,
        connectTimeoutMs: 3000,
        commandTimeoutMs: 3000,
        hostKeys: new InMemoryHostKeyStore(),
      });
      await expect(
        connector.connect({ routerId: router.routerId, host: router.tunnelIp, port: sshPort }),
      ).rejects.toThrow();
    }
  });
});
