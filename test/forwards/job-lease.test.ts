import { startTestTunnelAgent, type TestTunnelAgent } from "@fleet/tunnel-agent/testing";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  acquireJobEngine,
  type Database,
  type JobEngine,
  listRouterJobs,
  openDatabase,
  routerJobsQueue,
} from "@fleet/db";
import { createTestDatabase, makeForward, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { type SimulatedRouterOs, startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";
import { ROUTER_JOB_KINDS, generateEd25519KeyPair, systemClock } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { loadTunnelAgentConfig } from "@fleet/tunnel-agent";
import { InMemoryHostKeyStore } from "@fleet/tunnel-agent/routeros/host-key-store";
import type { RouterOsConnector } from "@fleet/tunnel-agent/routeros/routeros-client";
import { SshRouterOsConnector } from "@fleet/tunnel-agent/routeros/ssh-routeros-client";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePortOn } from "./forward-fixtures.ts";

/**
 * Router jobs whose attempt outlives its lease (docs/architecture.md "How a forward travels"): the
 * job is failed over and retried while the first attempt still talks to the router, and the
 * router's lock must keep the two apart. A file of its own: pg-boss's expiry of a fresh engine is
 * what it needs, not one that earlier scenarios (killed agents) left behind.
 */
const TUNNEL = "127.0.0.41";
const key = generateEd25519KeyPair();

let db: TestDatabase;
let engine: JobEngine;
let sshPort: number;
let workDir: string;
let keyFile: string;
const routers: SimulatedRouterOs[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db, { monitorIntervalSeconds: 1 });
  sshPort = await freePortOn([TUNNEL]);
  workDir = mkdtempSync(path.join(tmpdir(), "fleet-lease-"));
  keyFile = path.join(workDir, "agent_key");
  writeFileSync(keyFile, key.private, { mode: 0o600 });
});

afterAll(async () => {
  for (const router of routers) await router.close();
  await engine?.stop();
  await db?.close();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

const startRouter = async (tunnelIp: string) => {
  const router = await startSimulatedRouterOs({ tunnelIp, sshPort, sshUser: "mgmt", authorizedKeys: [key.public] });
  routers.push(router);
  return router;
};

const agentEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
  DATA_DIR: workDir,
  LOG_LEVEL: "silent",
  ENTRY_POINT_HOST: "lease.fleet.test",
  ENTRY_POINT_BIND: "127.0.0.3",
  ENTRY_POINT_PORTS: "63600-63699",
  TUNNEL_SSH_PORT: String(sshPort),
  TUNNEL_SSH_KEY: keyFile,
  TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
  TUNNEL_NETWORK: "127.0.0.0/8",
  ...extra,
});

const newForward = async (tunnelIp: string) => {
  const user = await makeUser(db);
  const router = await makeRouter(db, user, { tunnelIp });
  return makeForward(
    db,
    engine,
    {
      routerId: router.id,
      entryPoint: "lease.fleet.test",
      ports: [63600, 63699],
      dstAddress: "192.168.88.20",
      dstPort: 22,
      allowOnlyCidr: "8.8.8.0/24",
      expiresAt: new Date(systemClock.now().getTime() + 3_600_000),
    },
    systemClock.now(),
  );
};

const jobOf = async (forwardId: string, kind: string) => {
  const [job] = await listRouterJobs(db, { forwardId, kind });
  if (!job) throw new Error(`no ${kind} job for ${forwardId}`);
  return job;
};

const tagged = (router: SimulatedRouterOs, forwardId: string) =>
  router.ssh.rules().filter((r) => r.props.comment === `fleet-fwd:${forwardId}`);

const deadAgentConnector = (): RouterOsConnector =>
  new SshRouterOsConnector({
    username: "mgmt",
    privateKey: key.private,
    connectTimeoutMs: 5000,
    commandTimeoutMs: 5000,
    hostKeys: new InMemoryHostKeyStore(),
  });

describe("router job leases", () => {
  it("an attempt that outlives its lease never runs beside its retry: the router's lock holds the retry back", async () => {
    // A router that answers its first add only once the job was failed over and taken again: the
    // first attempt outlives its lease by construction and is still talking to the router while
    // its retry starts. The retry waits out that attempt (held at most 2 s more) and finishes
    // within its own 4 s lease (a shorter one only adds retries).
    const leaseMs = 4_000;
    await engine.defineQueue(routerJobsQueue(leaseMs / 1000));
    const device = await startRouter(TUNNEL);
    const forward = await newForward(device.tunnelIp);
    const handles: Database[] = [db];
    if (db.url) handles.push(await openDatabase({ databaseUrl: db.url, dataDir: "memory", poolSize: 3 }));
    let busy = 0;
    let overlaps = 0;
    let slowAdd = true;
    let sessions = 0;
    const watched = (inner: RouterOsConnector): RouterOsConnector => ({
      connect: async (target) => {
        const client = await inner.connect(target);
        // Other tests' routers are reconciled by these agents too: only this router is watched.
        if (target.host !== device.tunnelIp) return client;
        sessions += 1;
        return {
          exec: async (command) => {
            busy += 1;
            if (busy > 1) overlaps++;
            try {
              // The slow router is outside the system: its delay is faked here, at the protocol edge.
              if (slowAdd && command.startsWith("/ip firewall nat add")) {
                slowAdd = false;
                await eventually(
                  async () => {
                    const job = await jobOf(forward.id, ROUTER_JOB_KINDS.apply);
                    return job.attempts > 1 && job.state === "active";
                  },
                  "the lease to run out and the retry to be taken",
                  60_000,
                );
                // ... and then until the retry reaches the router too. With the lock it never does
                // while this attempt runs, so the router answers after a bounded while anyway.
                const retryTakenAt = performance.now();
                await eventually(() => sessions > 1 || performance.now() - retryTakenAt > 2_000, "a while", 10_000);
              }
              return await client.exec(command);
            } finally {
              busy -= 1;
            }
          },
          close: () => client.close(),
        };
      },
    });
    const agents: TestTunnelAgent[] = [];
    try {
      for (const [i, handle] of [handles[0], handles[1] ?? handles[0]].entries()) {
        agents.push(
          await startTestTunnelAgent({
            config: loadTunnelAgentConfig(
              agentEnv({
                DATA_DIR: "memory",
                ENTRY_POINT_HOST: `lease-${i}.fleet.test`,
                TUNNEL_JOB_LEASE_MS: String(leaseMs),
              }),
            ),
            db: handle as Database,
            logger: pino({ level: "silent" }),
            connector: watched(deadAgentConnector()),
          }),
        );
      }
      const done = await eventually(
        async () => {
          const job = await jobOf(forward.id, ROUTER_JOB_KINDS.apply);
          return job.state === "completed" ? job : null;
        },
        "the apply job to finish",
        100_000,
      );
      // The lease did run out (the job was attempted again), and no two attempts ever overlapped.
      expect(done.attempts).toBeGreaterThan(1);
    } finally {
      for (const agent of agents) await agent.close();
      for (const handle of handles.slice(1)) await handle.close();
    }
    expect(overlaps).toBe(0);
    expect(tagged(device, forward.id)).toHaveLength(1);
    // It waits out a lease by design: longer than the default test timeout on a loaded machine.
  }, 120_000);
});
