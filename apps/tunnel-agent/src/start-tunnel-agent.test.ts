import { startTestTunnelAgent } from "./testing/tunnel-agent-builder.ts";
import {
  acquireJobEngine,
  ForwardsRepository,
  ForwardTargetsRepository,
  listRouterJobs,
  queryOf,
  routerJobsQueue,
} from "@fleet/db";
import { createTestDatabase, makeForward, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { RouterOsTarget } from "./routeros/routeros-client.ts";
import type { WireguardDevice } from "./wireguard/wireguard-device.ts";
import { HostKeyMismatchError } from "./routeros/ssh-routeros-client.ts";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTunnelAgentConfig } from "./start-tunnel-agent.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

describe("tunnel agent start-up", () => {
  it("names the routers it will not connect to: no assigned address, or one outside TUNNEL_NETWORK", async () => {
    const user = await makeUser(db);
    const reachable = await makeRouter(db, user, { tunnelIp: "100.64.3.4" });
    const without = await makeRouter(db, user, { tunnelIp: null });
    const outside = await makeRouter(db, user, { tunnelIp: "127.0.0.1" });
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const agent = await startTestTunnelAgent({
      config: loadTunnelAgentConfig({
        DATA_DIR: "memory",
        ENTRY_POINT_PORTS: "63800-63809",
        TUNNEL_NETWORK: "100.64.0.0/10",
      }),
      db,
      logger,
      manualJobs: true,
    });
    await agent.close();
    const warnings = lines.filter((l) => String(l.msg).startsWith("routers without an assigned tunnel address"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      count: 2,
      tunnelNetwork: "100.64.0.0/10",
      routers: expect.arrayContaining([
        { id: without.id, tunnelIp: null },
        { id: outside.id, tunnelIp: "127.0.0.1" },
      ]),
    });
    expect(JSON.stringify(warnings[0])).not.toContain(reachable.id);
  });

  it("never connects to, nor relays to, a router address outside TUNNEL_NETWORK", async () => {
    const user = await makeUser(db);
    const router = await makeRouter(db, user, { tunnelIp: "127.0.0.9" });
    const engine = await acquireJobEngine(db);
    await engine.defineQueue(routerJobsQueue());
    const forward = await makeForward(
      db,
      engine,
      {
        routerId: router.id,
        entryPoint: "outside.fleet.test",
        ports: [63810, 63819],
        dstAddress: "192.168.88.10",
        dstPort: 22,
        allowOnlyCidr: "8.8.8.0/24",
        expiresAt: new Date(Date.now() + 3_600_000),
      },
      new Date(),
    );
    const connects: RouterOsTarget[] = [];
    const agent = await startTestTunnelAgent({
      config: loadTunnelAgentConfig({
        DATA_DIR: "memory",
        ENTRY_POINT_HOST: "outside.fleet.test",
        ENTRY_POINT_PORTS: "63810-63819",
        TUNNEL_NETWORK: "100.64.0.0/10",
      }),
      db,
      logger: pino({ level: "silent" }),
      manualJobs: true,
      connector: {
        connect: async (target) => {
          connects.push(target);
          throw new Error("no router here");
        },
      },
    });
    try {
      await agent.refresh();
      expect(agent.relay.listening()).toEqual([]);
      await agent.drain();
      const [job] = await listRouterJobs(db, { forwardId: forward.id, kind: "forward.apply" });
      expect(job?.lastError).toContain("outside TUNNEL_NETWORK 100.64.0.0/10; refusing to connect");
      expect(connects).toEqual([]);
    } finally {
      await agent.close();
      await engine.stop();
    }
  });

  it("marks a forward failed, with the reason, audited as forward.failed, when the agent gives up", async () => {
    const user = await makeUser(db);
    const router = await makeRouter(db, user, { tunnelIp: "100.64.9.9" });
    const engine = await acquireJobEngine(db);
    await engine.defineQueue(routerJobsQueue());
    const forwards = new ForwardsRepository(queryOf(db));
    const targets = new ForwardTargetsRepository(db);
    const forward = await makeForward(db, engine, {
      routerId: router.id,
      entryPoint: "failing.fleet.test",
      ports: [63820, 63829],
      dstAddress: "192.168.88.10",
      dstPort: 80,
      expiresAt: new Date(Date.now() + 3_600_000),
    });
    const agent = await startTestTunnelAgent({
      config: loadTunnelAgentConfig({
        DATA_DIR: "memory",
        ENTRY_POINT_HOST: "failing.fleet.test",
        ENTRY_POINT_PORTS: "63820-63829",
        TUNNEL_NETWORK: "100.64.0.0/10",
      }),
      db,
      logger: pino({ level: "silent" }),
      manualJobs: true,
      connector: {
        // A changed host key: no retry can fix it, so the first attempt is the last.
        connect: async (target) => {
          throw new HostKeyMismatchError(target.routerId, target.host, target.port, "SHA256:old", "SHA256:new");
        },
      },
    });
    try {
      await agent.drain();
      const failed = await forwards.get(router.id, forward.id);
      expect(failed).toMatchObject({ status: "failed", closedAt: expect.any(Date) });
      expect(failed?.failureReason).toContain("host key of router");
      // No longer served, and its port and quota slot are free.
      expect(await targets.relayTargets("failing.fleet.test", new Date())).toEqual([]);
      const audit = await db.query<{ action: string; details: unknown }>(
        "select action, details from audit_log where target_id = $1 order by occurred_at",
        [forward.id],
      );
      const entry = audit.find((row) => row.action === "forward.failed");
      expect(entry).toBeDefined();
      const details = typeof entry?.details === "string" ? JSON.parse(entry.details) : entry?.details;
      expect(details).toMatchObject({ port: forward.port, failure_reason: failed?.failureReason });
      // Failing again (a retry that raced the first) changes nothing and audits nothing more.
      expect(await forwards.markFailed(forward.id, "again", new Date())).toBeNull();
    } finally {
      await agent.close();
      await engine.stop();
    }
  });

  it("a failed start closes what was already wired: the hub's interface, the feed, the job engine", async () => {
    // A bad TUNNEL_SSH_KEY is found after the hub exists (the hub is wired first).
    const keyFile = path.join(mkdtempSync(path.join(tmpdir(), "agent-key-")), "id_ed25519");
    writeFileSync(keyFile, "not a key\n");
    let closed = 0;
    const device: WireguardDevice = {
      name: "wg-test",
      implementation: "userspace",
      state: async () => ({ publicKey: null, listenPort: 51820, peers: [] }),
      apply: async () => {},
      close: async () => {
        closed += 1;
      },
    };
    const start = () =>
      startTestTunnelAgent({
        config: loadTunnelAgentConfig({
          DATA_DIR: "memory",
          ENTRY_POINT_PORTS: "63830-63839",
          TUNNEL_NETWORK: "100.64.0.0/10",
          TUNNEL_MODE: "wireguard",
          TUNNEL_WG_ENDPOINT: "hub.fleet.test:51820",
          TUNNEL_SSH_KEY: keyFile,
        }),
        db,
        logger: pino({ level: "silent" }),
        manualJobs: true,
        hubDevice: device,
      });
    await expect(start()).rejects.toThrow(/TUNNEL_SSH_KEY/);
    expect(closed).toBe(1);
    // Nothing was left half-started: the same start fails the same way and closes again.
    await expect(start()).rejects.toThrow(/TUNNEL_SSH_KEY/);
    expect(closed).toBe(2);
  });
});
