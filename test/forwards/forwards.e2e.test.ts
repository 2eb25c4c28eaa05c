import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { countOpenRouterJobs, listRouterJobs } from "@fleet/db";
import { databaseFingerprint, createTestDatabase, makeRouter, type TestDatabase } from "@fleet/db/testing";
import { type SimulatedRouterOs, startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";
import { ManualClock, generateEd25519KeyPair } from "@fleet/shared";
import { InMemoryHostKeyStore } from "@fleet/tunnel-agent/routeros/host-key-store";
import type { RouterOsClient } from "@fleet/tunnel-agent/routeros/routeros-client";
import {
  addForwardRule,
  listForwardRulesJson,
  removeForwardRule,
} from "@fleet/tunnel-agent/routeros/routeros-commands";
import { SshRouterOsConnector } from "@fleet/tunnel-agent/routeros/ssh-routeros-client";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "@fleet/shared/testing";
import { connectAs, connectOutcome, echo, freePortOn } from "./forward-fixtures.ts";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * Transient forwarding end to end, through real servers on loopback: the all-in-one process (API,
 * tunnel agent with its entry-point relay) over a private database, and simulated routers whose
 * RouterOS SSH servers apply dst-nat rules by relaying to a simulated LAN. Sources are presented
 * with PROXY headers (ENTRY_POINT_PROXY_PROTOCOL=true): tests may only use 127.0.0.0/8, and
 * allow_from must be publicly routed.
 */
/**
 * This run's own loopback /24: the entry point's port range and the routers' rule ports are fixed,
 * so two runs of this file at once (another worktree, another shard) collided on 127.0.0.x
 * (EADDRINUSE on a rule's listener, a relay port taken).
 */
const NET = `127.${1 + Math.floor(Math.random() * 250)}.0`;
const ENTRY_BIND = `${NET}.1`;
const TUNNEL_A = `${NET}.21`;
const TUNNEL_B = `${NET}.22`;
/** Router A's public (WAN) address: a dst-nat rule without dst-address opens the port here too. */
const WAN_A = `${NET}.23`;
const ALLOWED = "8.8.8.8";
const OUTSIDER = "9.9.9.9";

let db: TestDatabase;
let system: TestSystem;
let sshPort: number;
let routerA: SimulatedRouterOs;
let routerB: SimulatedRouterOs;
const clock = new ManualClock(new Date());
const hostKeyB = generateEd25519KeyPair().private;
/** A second authorized key: the test plays an operator editing the router by hand. */
const operatorKey = generateEd25519KeyPair();

const asOperator = async (work: (router: RouterOsClient) => Promise<void>) => {
  const connector = new SshRouterOsConnector({
    username: "fleet",
    privateKey: operatorKey.private,
    connectTimeoutMs: 5000,
    commandTimeoutMs: 5000,
    hostKeys: new InMemoryHostKeyStore(),
  });
  const router = await connector.connect({ routerId: "operator-session", host: TUNNEL_A, port: sshPort });
  try {
    await work(router);
  } finally {
    router.close();
  }
};

beforeAll(async () => {
  db = await createTestDatabase();
  sshPort = await freePortOn([TUNNEL_A, TUNNEL_B]);
  const config = loadAllInOneConfig({
    ...testSystemEnv(),
    ENTRY_POINT_HOST: "entry.e2e.test",
    ENTRY_POINT_BIND: ENTRY_BIND,
    ENTRY_POINT_PORTS: "63000-63199",
    ENTRY_POINT_PROXY_PROTOCOL: "true",
    TUNNEL_SSH_PORT: String(sshPort),
    TUNNEL_SSH_USER: "fleet",
    // Nothing periodic may talk to the routers behind the tests' backs.
    TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
    BACKUP_INTERVAL_HOURS: "0",
    // Tests may only use loopback: the simulated routers' tunnel addresses are 127.x.0.x.
    TUNNEL_NETWORK: "127.0.0.0/8",
    // The relay reaches the routers from 127.0.0.1: every rule also matches that source only.
    ENTRY_POINT_TUNNEL_SOURCE: "127.0.0.1",
  });
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db, clock });
  const authorizedKeys = [system.tunnelAgent.publicKey, operatorKey.public];
  routerA = await startSimulatedRouterOs({
    tunnelIp: TUNNEL_A,
    sshPort,
    sshUser: "fleet",
    authorizedKeys,
    wanAddress: WAN_A,
  });
  routerB = await startSimulatedRouterOs({
    tunnelIp: TUNNEL_B,
    sshPort,
    sshUser: "fleet",
    authorizedKeys,
    hostKey: hostKeyB,
  });
});

afterAll(async () => {
  await system?.close();
  await routerA?.close();
  await routerB?.close();
  await db?.close();
});

const api = async (method: string, path: string, token?: string, body?: unknown) => {
  const res = await fetch(`${system.api.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { "content-type": "application/json" } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

/** Connects to the entry point as `source` (this run's entry address). */
const enter = (port: number, source: string, options: Parameters<typeof connectAs>[2] = {}) =>
  connectAs(port, source, { host: ENTRY_BIND, ...options });

const login = async () => {
  const res = await api("POST", "/v1/auth/dev-login", undefined, { email: `fwd-${crypto.randomUUID()}@example.com` });
  return {
    organizationId: res.body.organization_id as string,
    teamId: res.body.team_id as string,
    token: res.body.access_token as string,
  };
};

type Owner = Awaited<ReturnType<typeof login>> & { routerId: string; heartbeatToken: string; base: string };

/** The owner of the router at `tunnelIp` (an address is one router's), made on first use. */
const owners = new Map<string, Promise<Owner>>();
const owner = (tunnelIp: string): Promise<Owner> => {
  let found = owners.get(tunnelIp);
  if (!found) {
    found = (async () => {
      const user = await login();
      const router = await makeRouter(db, user, { tunnelIp });
      return {
        ...user,
        routerId: router.id,
        heartbeatToken: router.heartbeatToken,
        base: `/api/routers/${router.id}/transient-forwarding`,
      };
    })();
    owners.set(tunnelIp, found);
  }
  return found;
};

const create = async (who: Awaited<ReturnType<typeof owner>>, body: Record<string, unknown> = {}) => {
  const res = await api("POST", who.base, who.token, {
    expire_after_minutes: 60,
    dst_port: 22,
    dst_address: "192.168.88.10",
    allow_from: "8.8.8.0/24",
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; port: number; expires_at: string };
};

const ruleOf = (router: SimulatedRouterOs, forwardId: string) =>
  router.ssh.rules().find((r) => r.props.comment === `fleet-fwd:${forwardId}`);

/**
 * The fingerprint without the heartbeat daemon's bookkeeping, which moves on its own schedule (its
 * sweep tick marks `heartbeat_daemons`: a tick inside a measured step changed the fingerprint).
 */
const forwardingState = (fingerprint: string) =>
  fingerprint.split(",").filter((t) => !t.startsWith("heartbeat_coverage:") && !t.startsWith("heartbeat_daemons:"));

/** Every queued job has finished (the router side may finish a moment before its job row). */
const settled = () => eventually(async () => (await countOpenRouterJobs(db)) === 0, "the job queue to settle");

/** The rule is on the router and the relay listens: the forward is usable. */
const untilUsable = async (router: SimulatedRouterOs, forward: { id: string; port: number }) => {
  const rule = await eventually(() => ruleOf(router, forward.id), "the rule on the router");
  await eventually(() => system.tunnelAgent.relay.listening().some((l) => l.id === forward.id), "the relay listener");
  await eventually(async () => {
    const [row] = await db.query<{ applied_at: unknown }>("select applied_at from forwards where id = $1", [
      forward.id,
    ]);
    return row?.applied_at;
  }, "the forward to be marked applied");
  return rule;
};

describe("transient forwarding through the entry point and a simulated router", () => {
  it("applies the rule, carries an allowed source's bytes to the LAN and back, and cuts everyone else", async () => {
    const who = await owner(TUNNEL_A);
    const forward = await create(who);
    const rule = await untilUsable(routerA, forward);
    expect(rule.props).toEqual({
      chain: "dstnat",
      protocol: "tcp",
      "dst-address": TUNNEL_A,
      "dst-port": String(forward.port),
      "src-address": "127.0.0.1",
      action: "dst-nat",
      "to-addresses": "192.168.88.10",
      "to-ports": "22",
      comment: `fleet-fwd:${forward.id}`,
    });
    expect(rule.disabled).toBe(false);
    const [row] = await db.query<{ applied_at: unknown }>("select applied_at from forwards where id = $1", [
      forward.id,
    ]);
    expect(row?.applied_at).not.toBeNull();
    // The job is marked completed once its handler returns, a moment after the forward is usable.
    const applyJob = async () => (await listRouterJobs(db, { forwardId: forward.id, kind: "forward.apply" }))[0];
    await eventually(async () => (await applyJob())?.state !== "active", "the apply job to finish");
    expect(await applyJob()).toMatchObject({ state: "completed", attempts: 1 });

    for (const version of [1, 2] as const) {
      const client = await enter(forward.port, ALLOWED, { version, payload: "hello " });
      expect(await echo(client.socket, `through v${version}`)).toBe(`hello through v${version}`);
      client.socket.end();
      await client.received;
    }

    const lanConnections = routerA.lan.connections();
    const lanBytes = routerA.lan.bytesReceived();
    const outsider = await enter(forward.port, OUTSIDER, { payload: "let me in" });
    outsider.socket.write("more bytes");
    expect((await outsider.received).length).toBe(0);
    expect(routerA.lan.connections()).toBe(lanConnections);
    expect(routerA.lan.bytesReceived()).toBe(lanBytes);
    expect(system.tunnelAgent.relay.stats(forward.id)).toEqual({ accepted: 2, refused: 1 });
  });

  it("DELETE removes the rule, drops its connections and closes the port", async () => {
    const who = await owner(TUNNEL_A);
    const forward = await create(who, { dst_port: 2222 });
    await untilUsable(routerA, forward);
    const open = await enter(forward.port, ALLOWED);
    expect(await echo(open.socket, "still here")).toBe("still here");

    expect((await api("DELETE", `${who.base}/${forward.id}`, who.token)).status).toBe(204);
    await eventually(() => !ruleOf(routerA, forward.id), "the rule to go");
    await open.received;
    await eventually(
      async () => (await connectOutcome(forward.port, ENTRY_BIND)) === "ECONNREFUSED",
      "the port to close",
    );
    // The entry point closes its port on its own; the router's last command may still be on its way
    // (and the configuration backup that follows every change may come right after it).
    const drop = `/ip firewall connection remove [find where dst-address="${TUNNEL_A}:${forward.port}"]`;
    const dropAt = await eventually(() => {
      const at = routerA.ssh.commands().lastIndexOf(drop);
      return at >= 1 ? at : undefined;
    }, "the router's connections to be dropped");
    const tail = routerA.ssh.commands().slice(dropAt - 1, dropAt + 1);
    expect(tail).toEqual([
      `/ip firewall nat remove [find where comment="fleet-fwd:${forward.id}"]`,
      `/ip firewall connection remove [find where dst-address="${TUNNEL_A}:${forward.port}"]`,
    ]);
    expect((await api("GET", `${who.base}/${forward.id}`, who.token)).body).toMatchObject({ revoked_early: true });
  });

  it("expiry with the injected clock closes the forward on the router and at the entry point", async () => {
    const who = await owner(TUNNEL_A);
    const forward = await create(who, { expire_after_minutes: 10 });
    await untilUsable(routerA, forward);
    const open = await enter(forward.port, ALLOWED);
    expect(await echo(open.socket, "before expiry")).toBe("before expiry");

    clock.advance(10 * 60_000 - 1);
    expect(await system.tunnelAgent.sweep()).toBe(0);
    expect(ruleOf(routerA, forward.id)).toBeDefined();
    clock.advance(1);
    expect(await system.tunnelAgent.sweep()).toBe(1);
    await eventually(() => !ruleOf(routerA, forward.id), "the rule to go at expiry");
    await open.received;
    await eventually(
      async () => (await connectOutcome(forward.port, ENTRY_BIND)) === "ECONNREFUSED",
      "the port to close at expiry",
    );
    await settled();
    const after = (await api("GET", `${who.base}/${forward.id}`, who.token)).body;
    expect(after).toMatchObject({ expired: true, revoked_early: false, time_to_expire: "expired" });
    const jobs = await listRouterJobs(db, { forwardId: forward.id });
    expect(jobs.map((j) => ({ kind: j.kind, state: j.state }))).toEqual([
      { kind: "forward.apply", state: "completed" },
      { kind: "forward.remove", state: "completed" },
    ]);
  });

  it("refuses injection attempts in every field before anything reaches a router", async () => {
    const who = await owner(TUNNEL_A);
    const payloads = [
      '"',
      '" ; /system reboot ; "',
      ";/system reboot",
      "[/system reboot]",
      "]",
      "\n/system reboot",
      "\r\n/quit",
      "$(x)",
      "$ip",
      "$[:put 1]",
      "\\",
    ];
    await settled();
    // The relay's connection log of earlier cases (written once a second) lands first: on a busy
    // machine it had landed inside this measurement.
    await system.tunnelAgent.flushAudit();
    const commandsBefore = [routerA.ssh.commands().length, routerB.ssh.commands().length];
    const before = await databaseFingerprint(db);
    for (const p of payloads) {
      for (const [field, value] of [
        ["dst_address", `192.168.88.10${p}`],
        ["allow_from", `8.8.8.0/24${p}`],
        ["dst_port", `22${p}`],
        ["expire_after_minutes", `60${p}`],
      ] as const) {
        const res = await api("POST", who.base, who.token, {
          expire_after_minutes: 60,
          dst_port: 22,
          dst_address: "192.168.88.10",
          allow_from: "8.8.8.0/24",
          [field]: value,
        });
        expect(res.status, `${field}=${JSON.stringify(value)}`).toBe(422);
        expect(Object.keys(res.body.data)).toEqual([field]);
      }
    }
    expect(forwardingState(await databaseFingerprint(db))).toEqual(forwardingState(before));
    expect(await system.tunnelAgent.drain()).toBe(0);
    expect([routerA.ssh.commands().length, routerB.ssh.commands().length]).toEqual(commandsBefore);
    for (const command of [...routerA.ssh.commands(), ...routerB.ssh.commands()]) {
      expect(command).not.toMatch(/reboot|\$|;|\n|\r|\\/);
    }
  });

  it("reconciliation removes tagged rules without an active forward and re-applies missing ones", async () => {
    const who = await owner(TUNNEL_A);
    const kept = await create(who, { dst_port: 2200 });
    await untilUsable(routerA, kept);
    const stale = crypto.randomUUID();
    const customerRule =
      '/ip firewall nat add chain=dstnat protocol=tcp dst-port=8081 action=dst-nat to-addresses=192.168.88.5 to-ports=80 comment="customer rule"';
    // Someone changed the router behind the agent's back: our rule gone, a rule of a forward we no
    // longer have, and a rule that is not ours at all.
    await asOperator(async (router) => {
      await router.exec(removeForwardRule(kept.id));
      await router.exec(
        addForwardRule({
          tunnelIp: TUNNEL_A,
          port: 47_198,
          dstAddress: "192.168.88.99",
          dstPort: 80,
          forwardId: stale,
        }),
      );
      await router.exec(customerRule);
    });
    expect(ruleOf(routerA, kept.id)).toBeUndefined();
    expect(ruleOf(routerA, stale)).toBeDefined();

    expect(await system.tunnelAgent.reconcile()).toBeGreaterThanOrEqual(1);
    await eventually(() => ruleOf(routerA, kept.id) && !ruleOf(routerA, stale), "reconciliation to repair the router");
    expect(routerA.ssh.rules().some((r) => r.props.comment === "customer rule")).toBe(true);
    expect(routerA.ssh.rules().filter((r) => r.props.comment === `fleet-fwd:${kept.id}`)).toHaveLength(1);
    const client = await enter(kept.port, ALLOWED);
    expect(await echo(client.socket, "repaired")).toBe("repaired");
    client.socket.end();
  });

  it("pins the router's host key on first contact and refuses a changed one with a clear last_error", async () => {
    const who = await owner(TUNNEL_B);
    const first = await create(who);
    await untilUsable(routerB, first);
    const [pin] = await db.query<{ fingerprint: string }>(
      "select fingerprint from ssh_host_keys where router_id = $1",
      [who.routerId],
    );
    expect(pin?.fingerprint).toBe(routerB.ssh.hostKeyFingerprint);

    await routerB.close();
    const impostor = await startSimulatedRouterOs({
      tunnelIp: TUNNEL_B,
      sshPort,
      authorizedKeys: [system.tunnelAgent.publicKey],
    });
    try {
      const second = await create(who, { dst_port: 23 });
      // A changed host key is permanent: no retries, straight to the dead-letter queue, where the
      // agent records the error and frees the router's queue.
      const job = await eventually(async () => {
        const [row] = await listRouterJobs(db, { forwardId: second.id, kind: "forward.apply", deadLettered: true });
        return row?.state === "completed" && row.lastError ? row : undefined;
      }, "the apply job to be dead-lettered");
      expect(job.lastError).toContain(`refusing router ${who.routerId}`);
      expect(job.lastError).toContain(`host key of router ${who.routerId} (at ${TUNNEL_B}:${sshPort}) changed`);
      expect(job.lastError).toContain(routerB.ssh.hostKeyFingerprint);
      expect(job.lastError).toContain(impostor.ssh.hostKeyFingerprint);
      expect(await listRouterJobs(db, { forwardId: second.id, kind: "forward.apply" })).toEqual([]);
      expect(impostor.ssh.logins()).toBe(0);
      expect(impostor.ssh.commands()).toEqual([]);
    } finally {
      await impostor.close();
      routerB = await startSimulatedRouterOs({
        tunnelIp: TUNNEL_B,
        sshPort,
        sshUser: "fleet",
        authorizedKeys: [system.tunnelAgent.publicKey],
        hostKey: hostKeyB,
      });
    }
  });

  it("reconciliation replaces a tagged rule that is not pinned to the tunnel address (open on the WAN)", async () => {
    const who = await owner(TUNNEL_A);
    const forward = await create(who, { dst_port: 2201 });
    const rule = await untilUsable(routerA, forward);
    expect(rule.props["dst-address"]).toBe(TUNNEL_A);
    expect(await connectOutcome(forward.port, WAN_A)).toBe("ECONNREFUSED");
    // The rule form before the fix, tagged as ours: it matches the port on every address of the router.
    await asOperator(async (router) => {
      await router.exec(removeForwardRule(forward.id));
      await router.exec(
        `/ip firewall nat add chain=dstnat protocol=tcp dst-port=${forward.port} action=dst-nat to-addresses=192.168.88.10 to-ports=22 comment="fleet-fwd:${forward.id}"`,
      );
    });
    expect(await connectOutcome(forward.port, WAN_A)).toBe("connected");

    await system.tunnelAgent.reconcile();
    await eventually(
      () => ruleOf(routerA, forward.id)?.props["dst-address"] === TUNNEL_A,
      "the rule to be pinned again",
    );
    await eventually(
      async () => (await connectOutcome(forward.port, WAN_A)) === "ECONNREFUSED",
      "the WAN port to close",
    );
    expect(routerA.ssh.rules().filter((r) => r.props.comment === `fleet-fwd:${forward.id}`)).toHaveLength(1);
    expect(routerA.ssh.commands()).toContain(listForwardRulesJson());
    const client = await enter(forward.port, ALLOWED);
    expect(await echo(client.socket, "pinned")).toBe("pinned");
    client.socket.end();
  });

  it("a router heartbeating another tenant's tunnel address changes nothing: its forward goes to its own address", async () => {
    const victim = await owner(TUNNEL_A);
    const claimant = await owner(TUNNEL_B);
    expect(claimant.organizationId).not.toBe(victim.organizationId);
    const heartbeat = await fetch(`${system.heartbeat.url}/v1/heartbeat`, {
      method: "POST",
      headers: { authorization: `Bearer ${claimant.heartbeatToken}`, "content-type": "application/json" },
      body: JSON.stringify({ type: "heartbeat", identity: "claimant", tunnel_ip: TUNNEL_A }),
    });
    expect(heartbeat.status).toBe(200);
    await system.heartbeat.flush();
    const rows = await db.query<{ id: string; tunnel_ip: string }>(
      "select id, tunnel_ip from routers where id in ($1, $2) order by tunnel_ip",
      [victim.routerId, claimant.routerId],
    );
    expect(rows).toEqual([
      { id: victim.routerId, tunnel_ip: TUNNEL_A },
      { id: claimant.routerId, tunnel_ip: TUNNEL_B },
    ]);

    await settled();
    const victimCommands = routerA.ssh.commands().length;
    const victimLan = routerA.lan.connections();
    const forward = await create(claimant, { dst_port: 2323 });
    const rule = await untilUsable(routerB, forward);
    expect(rule.props["dst-address"]).toBe(TUNNEL_B);
    const client = await enter(forward.port, ALLOWED);
    expect(await echo(client.socket, "my own LAN")).toBe("my own LAN");
    client.socket.end();
    await client.received;
    await settled();
    expect(routerA.ssh.commands().length).toBe(victimCommands);
    expect(ruleOf(routerA, forward.id)).toBeUndefined();
    expect(routerA.lan.connections()).toBe(victimLan);
  });
});
