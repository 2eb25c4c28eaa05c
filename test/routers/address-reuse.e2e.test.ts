import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { clearTunnelPinCommand, createApiKeyCommand } from "@fleet/all-in-one/admin/admin-commands";
import { listRouterJobs } from "@fleet/db";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { AdoptedRouter } from "@fleet/router-simulator/adoption/adopted-router";
import { FleetApi } from "@fleet/router-simulator/fleet-api";
import { type SimulatedRouterOs, startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";
import { generateEd25519KeyPair, offboardingCommands } from "@fleet/shared";
import { eventually, OffsetClock } from "@fleet/shared/testing";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectOutcome, freePortOn } from "../forwards/forward-fixtures.ts";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * Issue 20, finding 2 replayed over the wire against the simulator (docs/api.md "Routers and
 * heartbeats", docs/routeros.md "Offboarding"): tenant A adopts a router at tunnel address X and
 * deletes it; tenant B must neither get X while it is quarantined nor reach A's device through it
 * afterwards. The whole system runs in one process; routers adopt as real ones do.
 */
// The adoption script lets the agent's user in only from TUNNEL_NETWORK, and the agent connects
// from 127.0.0.1 here: the network is all of loopback, and addresses are assigned at random in it.
const NETWORK = "127.0.0.0/8";
const SSH_USER = "fleet-agent";
const DAY_MS = 86_400_000;

let db: TestDatabase;
let system: TestSystem;
let sshPort: number;
/** The domain clock runs with real time plus this offset (the quarantine's 30 days pass in a step). */
const clock = new OffsetClock();
const agentKey = generateEd25519KeyPair();
const keyDir = mkdtempSync(path.join(tmpdir(), "fleet-reuse-"));
const agentKeyFile = path.join(keyDir, "id_ed25519");
writeFileSync(agentKeyFile, agentKey.private, { mode: 0o600 });
const cleanups: Array<() => Promise<void>> = [];

const call = async (method: string, url: string, token?: string, body?: unknown) => {
  const res = await fetch(`${system.api.url}${url}`, {
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

/** A tenant with a billing account and a card, its access token, and an operator key (tunnel:assign). */
const tenant = async () => {
  const email = `reuse-${crypto.randomUUID()}@example.com`;
  const api = new FleetApi(system.api.url);
  await api.login(email);
  await api.ensureAccount(email);
  const login = await call("POST", "/v1/auth/dev-login", undefined, { email });
  const operator = await createApiKeyCommand({ db, heartbeatIntervalMs: 300 }, login.body.organization_id, "operator", [
    "tunnel:assign",
    "routers:read",
    "routers:write",
  ]);
  return { api, token: login.body.access_token as string, operator: (operator.json as { key: string }).key };
};

/** Enrolls a router for `who`, adopts it with the pasted command, and serves its RouterOS at its address. */
const adoptedRouter = async (who: Awaited<ReturnType<typeof tenant>>, index: number) => {
  const enrolled = await who.api.enroll(`Reuse ${index}`);
  const tunnelIp = enrolled.tunnel_ip ?? "";
  expect(tunnelIp).toMatch(/^127\./);
  const router = new AdoptedRouter({
    index,
    routerId: enrolled.router_id,
    adoptionCommand: enrolled.adoption_command ?? "",
    tunnelIp,
    bindTunnelIp: true,
  });
  const serve = () =>
    startSimulatedRouterOs({
      tunnelIp,
      sshPort,
      authorize: router.authorize,
      configuration: router.configuration,
    });
  let ros: SimulatedRouterOs = await serve();
  cleanups.push(async () => {
    router.stop();
    await ros.close();
  });
  await router.adopt();
  return {
    router,
    tunnelIp,
    routerId: enrolled.router_id,
    ros: () => ros,
    /** The device goes off the network (powered down, unplugged), keeping its configuration. */
    unplug: () => ros.close(),
    plugIn: async () => {
      ros = await serve();
    },
  };
};

const forwardBody = { expire_after_minutes: 30, dst_port: 80, dst_address: "192.168.88.10", allow_from: "8.8.8.0/24" };

beforeAll(async () => {
  db = await createTestDatabase();
  sshPort = await freePortOn(["127.0.0.1", "127.1.2.3", "127.200.3.4"]);
  const config = loadAllInOneConfig({
    ...testSystemEnv(),
    HEARTBEAT_INTERVAL_MS: "300",
    TUNNEL_SSH_PORT: String(sshPort),
    TUNNEL_SSH_USER: SSH_USER,
    TUNNEL_SSH_KEY: agentKeyFile,
    TUNNEL_NETWORK: NETWORK,
    ENTRY_POINT_HOST: "entry.reuse.test",
    ENTRY_POINT_BIND: "127.0.0.1",
    ENTRY_POINT_PORTS: "63360-63379",
    ENTRY_POINT_PROXY_PROTOCOL: "true",
    TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
  });
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db, clock });
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await system?.close();
  await db?.close();
  rmSync(keyDir, { recursive: true, force: true });
});

describe("a removed router's address and device (finding 2)", () => {
  it("tenant B can neither claim A's quarantined address nor, once it has it, reach A's still-adopted device", async () => {
    const a = await tenant();
    const b = await tenant();
    const victim = await adoptedRouter(a, 0);
    // A forward makes the agent log in (and pin the device's host key) and puts a rule on the device.
    const first = await call("POST", `/api/routers/${victim.routerId}/transient-forwarding`, a.token, forwardBody);
    expect(first.status).toBe(201);
    await eventually(() => victim.ros().ssh.rules().length === 1, "A's rule on A's device");

    // The device is off the network when A removes the router: offboarding cannot clean it.
    await victim.unplug();
    expect((await call("DELETE", `/api/routers/${victim.routerId}`, a.token)).status).toBe(204);

    // The attack: B asks for X (B even holds the platform scope here): 409 while quarantined.
    const claim = await call("POST", "/api/routers", b.operator, { name: "mine now", tunnel_ip: victim.tunnelIp });
    expect(claim.status).toBe(409);
    expect(claim.body.message).toMatch(/quarantined/);
    // B's ordinary enrollments are never given X.
    for (let i = 0; i < 3; i++) {
      const enrolled = await call("POST", "/api/routers", b.token, { name: `b${i}` });
      expect(enrolled.status).toBe(201);
      expect(enrolled.body.data.tunnel_ip).not.toBe(victim.tunnelIp);
    }
    // One day before the quarantine ends: still 409.
    clock.offsetMs = 29 * DAY_MS;
    expect((await call("POST", "/api/routers", b.operator, { tunnel_ip: victim.tunnelIp })).status).toBe(409);

    // After TUNNEL_ADDRESS_QUARANTINE_DAYS the address is B's to have, and A's device is back online.
    clock.offsetMs = 30 * DAY_MS + 60_000;
    const taken = await call("POST", "/api/routers", b.operator, { name: "at X", tunnel_ip: victim.tunnelIp });
    expect(taken.status).toBe(201);
    const bRouter = taken.body.data.router.id as string;
    await victim.plugIn();
    const loginsBefore = victim.ros().ssh.logins();
    const lanBefore = victim.ros().lan.connections();

    // B's forward: the agent refuses the device at X (its last pinned key was A's removed router's).
    const forward = await call("POST", `/api/routers/${bRouter}/transient-forwarding`, b.token, forwardBody);
    expect(forward.status).toBe(201);
    // Pending, the forward has no listener: nothing is relayed to X before the agent has checked
    // the device there (a stale rule of A's on it would otherwise take B's connections to A's LAN).
    let listened = false;
    await eventually(async () => {
      if (system.tunnelAgent.relay.listening().some((l) => l.id === forward.body.id)) listened = true;
      return (await listRouterJobs(db, { routerId: bRouter, deadLettered: true }))[0]?.lastError != null;
    }, "B's apply job refused for good");
    expect(listened).toBe(false);
    const [refused] = await listRouterJobs(db, { routerId: bRouter, deadLettered: true });
    expect(refused?.lastError).toMatch(/removed router .* of another organization.*tunnel clear-pin/);
    expect(victim.ros().ssh.logins()).toBe(loginsBefore);
    expect(victim.ros().ssh.rules()).toEqual([]);
    // The agent gave up: B's forward is `failed` with the reason (docs/api.md "Transient Port
    // Forward"), its listener is closed, and B's connection to its port reaches nothing behind A's device.
    const failed = await eventually(async () => {
      const got = await call("GET", `/api/routers/${bRouter}/transient-forwarding/${forward.body.id}`, b.token);
      return got.body.state === "failed" ? got.body : undefined;
    }, "B's forward failed");
    expect(failed.failure_reason).toMatch(/removed router .* of another organization/);
    await system.tunnelAgent.refresh();
    expect(system.tunnelAgent.relay.listening().some((l) => l.id === forward.body.id)).toBe(false);
    expect(await connectOutcome(forward.body.port)).toBe("ECONNREFUSED");
    expect(victim.ros().ssh.logins()).toBe(loginsBefore);
    expect(victim.ros().lan.connections()).toBe(lanBefore);

    // The operator's way out, after checking the device: clear the pin (here only to show it exists).
    const cleared = await clearTunnelPinCommand({ db, heartbeatIntervalMs: 300 }, victim.tunnelIp);
    expect(cleared.text.join()).toMatch(/cleared the host key SHA256:/);
    clock.offsetMs = 0;
  });

  it("a reachable device is offboarded at removal: everything adoption installed is gone, audited, and the address is free at once", async () => {
    const c = await tenant();
    const b = await tenant();
    const device = await adoptedRouter(c, 1);
    const created = await call("POST", `/api/routers/${device.routerId}/transient-forwarding`, c.token, forwardBody);
    expect(created.status).toBe(201);
    await eventually(() => device.ros().ssh.rules().length === 1, "C's rule on C's device");
    const { tables } = device.router.device;
    expect(tables.user.some((u) => u.props.name === SSH_USER)).toBe(true);

    expect((await call("DELETE", `/api/routers/${device.routerId}`, c.token)).status).toBe(204);
    await eventually(async () => {
      const log = await call("GET", "/api/audit-log?action=router.offboarded", c.token);
      return log.body.data.length === 1;
    }, "router.offboarded in C's audit log");
    const log = await call("GET", "/api/audit-log?action=router.offboarded", c.token);
    expect(log.body.data[0]).toMatchObject({
      action: "router.offboarded",
      actor: { type: "system" },
      target: { type: "router", id: device.routerId },
      details: { tunnel_ip: device.tunnelIp },
    });
    // Nothing of adoption or of the agent is left on the device; its own admin user is.
    expect(device.ros().ssh.rules()).toEqual([]);
    expect(tables.user.map((u) => u.props.name)).toEqual(["admin"]);
    expect(tables["user ssh-keys"]).toEqual([]);
    expect(tables["user group"].map((g) => g.props.name)).toEqual(["read", "write", "full"]);
    expect(tables["system script"]).toEqual([]);
    expect(tables["system scheduler"]).toEqual([]);
    // The audit entry is written by the job's handler; the job is marked completed after it returns.
    await eventually(async () => {
      const offboarding = await listRouterJobs(db, { routerId: device.routerId, kind: "router.offboard" });
      return offboarding.map((j) => j.state).join() === "completed";
    }, "the offboarding job completed, once");
    // Each of offboarding's commands reached the device and was accepted (the tunnel's route,
    // address, peer and interface too, though this router has none in external mode).
    expect(device.ros().ssh.commands()).toEqual(expect.arrayContaining(offboardingCommands(SSH_USER)));
    // Another organization never sees it.
    expect((await call("GET", "/api/audit-log?action=router.offboarded", b.token)).body.data).toEqual([]);

    // Cleaned: no quarantine. B gets the address, and the device no longer lets the agent in.
    const taken = await call("POST", "/api/routers", b.operator, { name: "at Y", tunnel_ip: device.tunnelIp });
    expect(taken.status).toBe(201);
    const loginsBefore = device.ros().ssh.logins();
    const forward = await call(
      "POST",
      `/api/routers/${taken.body.data.router.id}/transient-forwarding`,
      b.token,
      forwardBody,
    );
    expect(forward.status).toBe(201);
    await eventually(
      async () => (await listRouterJobs(db, { routerId: taken.body.data.router.id })).some((j) => j.lastError !== null),
      "B's apply job failing at the login",
    );
    expect(device.ros().ssh.logins()).toBe(loginsBefore);
    expect(device.ros().ssh.rules()).toEqual([]);
  });
});
