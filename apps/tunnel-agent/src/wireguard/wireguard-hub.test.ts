import { execFileSync } from "node:child_process";
import {
  AdoptionsRepository,
  AuditLogRepository,
  acquireStatusFeed,
  queryOf,
  type StatusFeedHandle,
  WireguardPeersRepository,
} from "@fleet/db";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { ConfigError, generateWireguardKeyPair, ManualClock } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { register } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uapiSocketPath } from "./uapi-client.ts";
import type { WireguardDevice } from "./wireguard-device.ts";
import { realTunnelUnavailable } from "./testing/wireguard-environment.ts";
import { WireguardHub } from "./wireguard-hub.ts";
import { createWireguardDevice } from "./wireguard-interface.ts";
import { startWireguardHub } from "./start-hub.ts";

const unavailable = realTunnelUnavailable();
if (unavailable) {
  process.stderr.write(`wireguard-hub.test.ts: the WireGuard hub tests did not run: ${unavailable}\n`);
}

// Unique per run: wireguard-go's sockets live in one directory for every namespace.
const IFNAME = `h23h${process.pid.toString(36).slice(-4)}${Math.floor(Math.random() * 36 ** 2).toString(36)}`;
const logger = pino({ level: "silent" });
const clock = new ManualClock();

let db: TestDatabase;
let feed: StatusFeedHandle;
let device: WireguardDevice;
let owner: { organizationId: string; teamId: string };

const peersOf = async (d: WireguardDevice) =>
  new Map((await d.state()).peers.map((p) => [p.publicKey, p.allowedIps.join(",")]));
const bind = async (routerId: string) => {
  const key = generateWireguardKeyPair().publicKey;
  expect(await new WireguardPeersRepository(db).bind(routerId, key, clock.now())).toBe("bound");
  return key;
};
const metric = async (result: string) =>
  (await register.getSingleMetric("fleet_wireguard_peer_applies_total")?.get())?.values.find(
    (v) => v.labels.result === result,
  )?.value ?? 0;

describe.skipIf(unavailable !== undefined)("the WireGuard hub on a real wireguard-go interface", () => {
  beforeAll(async () => {
    db = await createTestDatabase();
    owner = await makeUser(db);
    feed = await acquireStatusFeed(db);
    device = await createWireguardDevice({
      name: IFNAME,
      implementation: "userspace",
      privateKey: generateWireguardKeyPair().privateKey,
      listenPort: 0,
      address: "100.126.250.1/30",
      logger,
    });
  });

  afterAll(async () => {
    await device?.close();
    await feed?.release();
    await db?.close();
    // Nothing may be left behind, also when a test failed.
    expect(() => execFileSync("ip", ["link", "show", "dev", IFNAME], { stdio: "ignore" })).toThrow();
  });

  it("at start replaces whatever the interface held with exactly the bindings, each allowed its tunnel_ip/32", async () => {
    const a = await makeRouter(db, owner);
    const b = await makeRouter(db, owner);
    const unbound = await makeRouter(db, owner);
    const keyA = await bind(a.id);
    const keyB = await bind(b.id);
    const stray = generateWireguardKeyPair().publicKey;
    await device.apply({ put: [{ publicKey: stray, allowedIps: ["10.9.9.9/32"] }], remove: [] });
    const hub = new WireguardHub({
      device,
      store: new WireguardPeersRepository(db),
      db,
      feed: feed.feed,
      clock,
      logger,
    });
    try {
      const report = await hub.start();
      const peers = await peersOf(device);
      expect(peers.has(stray)).toBe(false);
      const tunnelIp = async (id: string) =>
        (await db.query<{ tunnel_ip: string }>("select tunnel_ip from routers where id = $1", [id]))[0]?.tunnel_ip;
      expect(peers.get(keyA)).toBe(`${await tunnelIp(a.id)}/32`);
      expect(peers.get(keyB)).toBe(`${await tunnelIp(b.id)}/32`);
      expect(report.peers).toBe(peers.size);
      expect([...peers.keys()]).not.toContain(unbound.id);
    } finally {
      hub.close();
    }
  });

  it("adds a binding and drops a removed or re-adopted router's peer within a second of the status event", async () => {
    const hub = new WireguardHub({
      device,
      store: new WireguardPeersRepository(db),
      db,
      feed: feed.feed,
      clock,
      logger,
    });
    await hub.start();
    try {
      const router = await makeRouter(db, owner);
      const key = await bind(router.id);
      await feed.feed.publish([{ type: "tunnel_binding", router_id: router.id, team_id: owner.teamId }]);
      await eventually(async () => (await peersOf(device)).has(key), "the new peer", 1_000);

      // Re-adoption clears the binding: the peer goes.
      await new AdoptionsRepository(db).reissue(owner.teamId, router.id, "b".repeat(64), {
        tokenHash: "c".repeat(64),
        createdAt: new Date(),
        expiresAt: new Date(Date.now() + 3_600_000),
        countsFrom: new Date(),
      });
      await feed.feed.publish([{ type: "tunnel_binding", router_id: router.id, team_id: owner.teamId }]);
      await eventually(async () => !(await peersOf(device)).has(key), "the re-adopted router's peer to go", 1_000);

      // Removal: the row goes (and its binding with it).
      const other = await makeRouter(db, owner);
      const otherKey = await bind(other.id);
      await feed.feed.publish([{ type: "tunnel_binding", router_id: other.id, team_id: owner.teamId }]);
      await eventually(async () => (await peersOf(device)).has(otherKey), "the other peer", 1_000);
      await db.query("delete from routers where id = $1", [other.id]);
      await feed.feed.publish([{ type: "removed", router_id: other.id, team_id: owner.teamId }]);
      await eventually(async () => !(await peersOf(device)).has(otherKey), "the removed router's peer to go", 1_000);
    } finally {
      hub.close();
    }
  });

  it("the periodic reconciliation repairs drift nobody announced: a missed event, a peer added by hand", async () => {
    const hub = new WireguardHub({
      device,
      store: new WireguardPeersRepository(db),
      db,
      feed: feed.feed,
      clock,
      logger,
    });
    await hub.start();
    try {
      const router = await makeRouter(db, owner);
      const key = await bind(router.id);
      const intruder = generateWireguardKeyPair().publicKey;
      await device.apply({ put: [{ publicKey: intruder, allowedIps: ["100.126.250.2/32"] }], remove: [] });
      const report = await hub.reconcile();
      expect(report).toMatchObject({ added: 1, removed: 1 });
      const peers = await peersOf(device);
      expect(peers.has(key)).toBe(true);
      expect(peers.has(intruder)).toBe(false);
      // Nothing to do: nothing sent.
      expect(await hub.reconcile()).toMatchObject({ added: 0, removed: 0 });
    } finally {
      hub.close();
    }
  });

  it("a peer set the interface refuses is counted, logged and retried until it applies", async () => {
    let refuse = 2;
    const flaky: WireguardDevice = {
      ...device,
      name: device.name,
      implementation: device.implementation,
      state: () => device.state(),
      close: () => device.close(),
      apply: async (batch) => {
        if (refuse > 0) {
          refuse -= 1;
          throw new Error("simulated: the interface refused the batch");
        }
        return device.apply(batch);
      },
    };
    const failedBefore = await metric("failed");
    const hub = new WireguardHub({
      device: flaky,
      store: new WireguardPeersRepository(db),
      db,
      feed: feed.feed,
      clock,
      logger,
      retryMs: 10,
    });
    try {
      await expect(hub.start()).rejects.toThrow(/refused/);
      const router = await makeRouter(db, owner);
      const key = await bind(router.id);
      await eventually(async () => (await peersOf(device)).has(key), "the retried batch to apply");
      expect((await metric("failed")) - failedBefore).toBe(2);
      expect(hub.failures).toBe(0);
    } finally {
      hub.close();
    }
  });

  it("records handshakes: up under 3 minutes, down after, each flip audited once", async () => {
    const router = await makeRouter(db, owner);
    const key = await bind(router.id);
    let handshake: Date | null = null;
    const probed: string[] = [];
    const reading: WireguardDevice = {
      ...device,
      name: device.name,
      implementation: device.implementation,
      apply: (batch) => device.apply(batch),
      close: () => device.close(),
      state: async () => ({
        publicKey: null,
        listenPort: 0,
        peers: [{ publicKey: key, allowedIps: [], lastHandshakeAt: handshake, endpoint: null }],
      }),
    };
    const hub = new WireguardHub({
      device: reading,
      store: new WireguardPeersRepository(db),
      db,
      feed: feed.feed,
      clock,
      logger,
      probe: async (ip) => {
        probed.push(ip);
        return true;
      },
    });
    const [{ tunnel_ip: tunnelIp } = { tunnel_ip: null }] = await db.query<{ tunnel_ip: string | null }>(
      "select tunnel_ip from routers where id = $1",
      [router.id],
    );
    const flip = (up: boolean) => ({
      routerId: router.id,
      teamId: owner.teamId,
      organizationId: owner.organizationId,
      tunnelIp,
      up,
    });
    const audit = async () =>
      (
        await new AuditLogRepository(db).list({ organizationId: owner.organizationId, routerId: router.id, limit: 10 })
      ).filter((e) => e.action.startsWith("router.tunnel."));
    const times: number[] = [];
    expect(await hub.pollHandshakes()).toEqual([]);
    handshake = clock.now();
    times.push(clock.now().getTime());
    expect(await hub.pollHandshakes()).toEqual([flip(true)]);
    expect(await hub.pollHandshakes()).toEqual([]);
    clock.advance(179_999);
    expect(await hub.pollHandshakes()).toEqual([]);
    clock.advance(1);
    times.push(clock.now().getTime());
    expect(await hub.pollHandshakes()).toEqual([flip(false)]);
    clock.advance(1);
    handshake = clock.now();
    times.push(clock.now().getTime());
    expect(await hub.pollHandshakes()).toEqual([flip(true)]);
    // Newest first, each dated at its poll, by the system, naming the router's tunnel address.
    expect(await audit()).toEqual(
      ["router.tunnel.up", "router.tunnel.down", "router.tunnel.up"].reverse().map((action, i) => ({
        id: expect.any(String),
        organizationId: owner.organizationId,
        occurredAt: new Date(times[times.length - 1 - i] ?? 0),
        action,
        actor: { type: "system", id: null },
        target: { type: "router", id: router.id },
        routerId: router.id,
        teamId: owner.teamId,
        sourceIp: null,
        details: { tunnel_ip: tunnelIp },
      })),
    );
    const stored = await db.query<{ ms: number }>(
      "select (extract(epoch from handshake_at) * 1000)::float8 as ms from router_wireguard_peers where router_id = $1",
      [router.id],
    );
    expect(Number(stored[0]?.ms)).toBe(handshake.getTime());
    // Only routers with a fresh handshake are asked, at their own address, each at most once a minute.
    expect(new Set(probed)).toEqual(new Set([tunnelIp]));
    expect(probed).toHaveLength(2);
    hub.close();
  });

  it("a router that bound a key it does not hold never shows up: the key's holder does not answer at its address", async () => {
    const squatter = await makeRouter(db, owner);
    // Another device's key (say one its previous owner knew), unbound: the squatter binds it.
    const key = await bind(squatter.id);
    const [{ tunnel_ip: tunnelIp } = { tunnel_ip: "" }] = await db.query<{ tunnel_ip: string }>(
      "select tunnel_ip from routers where id = $1",
      [squatter.id],
    );
    // The device holding the key handshakes with the hub all along, but it does not have the
    // squatter's address: nothing answers there through the tunnel.
    const answering = new Set<string>();
    const probed: string[] = [];
    const reading: WireguardDevice = {
      ...device,
      name: device.name,
      implementation: device.implementation,
      apply: (batch) => device.apply(batch),
      close: () => device.close(),
      state: async () => ({
        publicKey: null,
        listenPort: 0,
        peers: [{ publicKey: key, allowedIps: [`${tunnelIp}/32`], lastHandshakeAt: clock.now(), endpoint: null }],
      }),
    };
    const hub = new WireguardHub({
      device: reading,
      store: new WireguardPeersRepository(db),
      db,
      feed: feed.feed,
      clock,
      logger,
      probe: async (ip) => {
        probed.push(ip);
        return answering.has(ip);
      },
    });
    const status = async () =>
      (
        await db.query<{ up: boolean; handshake: boolean; answered: boolean }>(
          "select up, handshake_at is not null as handshake, answered_at is not null as answered from router_wireguard_peers where router_id = $1",
          [squatter.id],
        )
      )[0];
    try {
      for (let i = 0; i < 5; i++) {
        expect(await hub.pollHandshakes()).toEqual([]);
        clock.advance(10_000);
      }
      expect(await status()).toEqual({ up: false, handshake: true, answered: false });
      expect(probed.length).toBeGreaterThanOrEqual(3);
      expect(new Set(probed)).toEqual(new Set([tunnelIp]));
      const audit = await new AuditLogRepository(db).list({
        organizationId: owner.organizationId,
        routerId: squatter.id,
        limit: 10,
      });
      expect(audit.filter((e) => e.action === "router.tunnel.up")).toEqual([]);

      // Had the router itself held the key, it would answer, and be up at the next probe.
      answering.add(tunnelIp);
      expect(await hub.pollHandshakes()).toEqual([expect.objectContaining({ routerId: squatter.id, up: true })]);
      expect(await status()).toEqual({ up: true, handshake: true, answered: true });
    } finally {
      hub.close();
    }
  });

  it("stores each peer's endpoint when it changes, and a restarted hub primes its peers with them", async () => {
    const router = await makeRouter(db, owner);
    const key = await bind(router.id);
    const repo = new WireguardPeersRepository(db);
    const stored = async () =>
      (
        await db.query<{ endpoint: string | null }>(
          "select endpoint from router_wireguard_peers where router_id = $1",
          [router.id],
        )
      )[0]?.endpoint;
    await repo.recordHandshakes(
      queryOf(db),
      [{ publicKey: key, handshakeAt: null, endpoint: "10.201.7.2:40001" }],
      clock.now(),
    );
    expect(await stored()).toBe("10.201.7.2:40001");
    // A reading without an endpoint keeps the stored one; a new mapping replaces it.
    await repo.recordHandshakes(queryOf(db), [{ publicKey: key, handshakeAt: null, endpoint: null }], clock.now());
    expect(await stored()).toBe("10.201.7.2:40001");
    await repo.recordHandshakes(
      queryOf(db),
      [{ publicKey: key, handshakeAt: null, endpoint: "10.201.7.2:40002" }],
      clock.now(),
    );
    expect(await stored()).toBe("10.201.7.2:40002");

    // A new hub (a restart): the interface starts with no peers, and each comes back with its endpoint.
    await device.apply({ put: [], remove: [], replace: true });
    const hub = new WireguardHub({ device, store: repo, db, feed: feed.feed, clock, logger });
    try {
      await hub.start();
      const peer = (await device.state()).peers.find((p) => p.publicKey === key);
      expect(peer?.endpoint).toBe("10.201.7.2:40002");
      // The hub reads the endpoint back: unchanged, so nothing is written.
      await hub.pollHandshakes();
      expect(await stored()).toBe("10.201.7.2:40002");
      // A peer the interface holds without an endpoint (a standby hub whose peers came before the
      // endpoints did) is primed by the next reconciliation.
      await device.apply({ put: [{ publicKey: key, allowedIps: [peer?.allowedIps[0] ?? ""] }], remove: [key] });
      expect((await device.state()).peers.find((p) => p.publicKey === key)?.endpoint).toBeNull();
      expect((await hub.reconcile()).added).toBe(1);
      expect((await device.state()).peers.find((p) => p.publicKey === key)?.endpoint).toBe("10.201.7.2:40002");
      expect((await hub.reconcile()).added).toBe(0);
      // A stored endpoint never overrides where the interface sees the peer now (a roaming router).
      await db.query("update router_wireguard_peers set endpoint = '10.201.7.2:40003' where router_id = $1", [
        router.id,
      ]);
      await hub.reconcile();
      expect((await device.state()).peers.find((p) => p.publicKey === key)?.endpoint).toBe("10.201.7.2:40002");
    } finally {
      hub.close();
    }
  });

  it("an interface that cannot be created stops start-up with one line naming TUNNEL_MODE, and touches no other link", async () => {
    const error = await startWireguardHub({
      tunnel: {
        mode: "wireguard",
        endpoint: { host: "127.0.0.1", port: 51_999 },
        listenPort: 51_999,
        interfaceName: "lo",
        implementation: "userspace",
        privateKey: generateWireguardKeyPair().privateKey,
        publicKey: undefined,
        hubAddress: "100.126.251.1",
      },
      networkPrefix: 30,
      dataDir: "memory",
      db,
      feed: feed.feed,
      clock,
      logger,
      reconcileCron: "*/30 * * * * *",
      statusPollMs: 10_000,
      schedules: false,
      probePort: 22,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe("TUNNEL_MODE");
    expect((error as Error).message).toMatch(/^Invalid configuration: TUNNEL_MODE .*lo.*not a WireGuard interface/);
    expect((error as Error).message).not.toContain("\n");
    expect(execFileSync("ip", ["link", "show", "dev", "lo"]).toString()).toContain("UP");
  });

  it("keeps the UAPI socket beside the interface's name", () => {
    expect(uapiSocketPath(IFNAME)).toBe(`/var/run/wireguard/${IFNAME}.sock`);
  });
});
