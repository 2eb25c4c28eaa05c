import { startTestTunnelAgent, type TestTunnelAgent } from "@fleet/tunnel-agent/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  acquireJobEngine,
  type Database,
  type JobEngine,
  listRouterJobs,
  openDatabase,
  ROUTER_JOBS_QUEUE,
  routerJobsQueue,
} from "@fleet/db";
import {
  createTestDatabase,
  makeForward,
  makeRouter,
  makeUser,
  revokeForward,
  type TestDatabase,
} from "@fleet/db/testing";
import { type SimulatedRouterOs, startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";
import { type Clock, ROUTER_JOB_KINDS, generateEd25519KeyPair, ManualClock, systemClock } from "@fleet/shared";
import { EXPIRY_SWEEP_QUEUE, loadTunnelAgentConfig } from "@fleet/tunnel-agent";
import { InMemoryHostKeyStore } from "@fleet/tunnel-agent/routeros/host-key-store";
import type { RouterOsClient, RouterOsConnector } from "@fleet/tunnel-agent/routeros/routeros-client";
import { addForwardRule, removeForwardRule } from "@fleet/tunnel-agent/routeros/routeros-commands";
import { SshRouterOsConnector } from "@fleet/tunnel-agent/routeros/ssh-routeros-client";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "@fleet/shared/testing";
import { freePortOn } from "./forward-fixtures.ts";

/**
 * The router jobs on the job engine (pg-boss) under failure and contention: an agent killed between
 * taking a job and finishing it, and several agents on one database. On PostgreSQL the killed agent
 * is a real child process (SIGKILL); PGlite lives inside one process, so there the dead agent is
 * played in-process: it takes the job and talks to the router, then simply never finishes. The
 * lease is the queue's `expireInSeconds` (TUNNEL_JOB_LEASE_MS rounded up to whole seconds).
 */
const root = path.resolve(import.meta.dirname, "../..");
const ENTRY = "queue.fleet.test";
/** This run's own loopback /24: two runs at once must not meet on the fixed entry and rule ports. */
const NET = `127.${1 + Math.floor(Math.random() * 250)}.0`;
const TUNNELS = [`${NET}.31`, `${NET}.32`, `${NET}.33`, `${NET}.34`];
const LEASE_MS = 1500;
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
  await engine.defineQueue(routerJobsQueue(LEASE_MS / 1000));
  sshPort = await freePortOn(TUNNELS);
  workDir = mkdtempSync(path.join(tmpdir(), "fleet-agent-"));
  keyFile = path.join(workDir, "agent_key");
  writeFileSync(keyFile, key.private, { mode: 0o600 });
});

afterAll(async () => {
  for (const router of routers) await router.close();
  await engine?.stop();
  await db?.close();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

const startRouter = async (tunnelIp: string, commandDelayMs = 0) => {
  const router = await startSimulatedRouterOs({
    tunnelIp,
    sshPort,
    sshUser: "mgmt",
    authorizedKeys: [key.public],
    commandDelayMs,
  });
  routers.push(router);
  return router;
};

const agentEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
  DATA_DIR: workDir,
  LOG_LEVEL: "silent",
  ENTRY_POINT_HOST: ENTRY,
  ENTRY_POINT_BIND: `${NET}.3`,
  ENTRY_POINT_PORTS: "63500-63599",
  TUNNEL_SSH_PORT: String(sshPort),
  TUNNEL_SSH_KEY: keyFile,
  TUNNEL_JOB_LEASE_MS: String(LEASE_MS),
  // Spawned agents serve their health port: never the default one another run (or `npm start`) holds.
  AGENT_HEALTH_PORT: "0",
  TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
  // Tests may only use loopback: the simulated routers' tunnel addresses are 127.x.0.x.
  TUNNEL_NETWORK: "127.0.0.0/8",
  ...extra,
});

/** One router row per tunnel address (an address is one router's), made on first use. */
const owners = new Map<string, Promise<{ routerId: string; teamId: string }>>();
const newRouter = (tunnelIp: string) => {
  let owner = owners.get(tunnelIp);
  if (!owner) {
    owner = (async () => {
      const user = await makeUser(db);
      const router = await makeRouter(db, user, { tunnelIp });
      return { routerId: router.id, teamId: user.teamId };
    })();
    owners.set(tunnelIp, owner);
  }
  return owner;
};

const newForward = async (
  tunnelIp: string,
  clock: Clock = systemClock,
  owner?: { routerId: string; teamId: string },
) => {
  const { routerId } = owner ?? (await newRouter(tunnelIp));
  return makeForward(
    db,
    engine,
    {
      routerId,
      entryPoint: ENTRY,
      ports: [63500, 63599],
      dstAddress: "192.168.88.20",
      dstPort: 22,
      allowOnlyCidr: "8.8.8.0/24",
      expiresAt: new Date(clock.now().getTime() + 3_600_000),
    },
    clock.now(),
  );
};

const jobOf = async (forwardId: string, kind: string) => {
  const [job] = await listRouterJobs(db, { forwardId, kind });
  if (!job) throw new Error(`no ${kind} job for ${forwardId}`);
  return job;
};

const tagged = (router: SimulatedRouterOs, forwardId: string) =>
  router.ssh.rules().filter((r) => r.props.comment === `fleet-fwd:${forwardId}`);

const sent = (router: SimulatedRouterOs, command: string) => router.ssh.commands().filter((c) => c === command).length;

/** `npm run start:tunnel-agent` as a real process; resolves once it has started. */
const spawnAgent = async (env: Record<string, string>) => {
  const child: ChildProcess = spawn(process.execPath, [path.join(root, "apps/tunnel-agent/src/main.ts")], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const workerId = await eventually(
    () => {
      if (child.exitCode !== null) throw new Error(`agent exited: ${stderr}`);
      return /Tunnel agent (\S+) running/.exec(stderr)?.[1];
    },
    "the agent to start",
    30_000,
  );
  return { child, workerId, kill: () => child.kill("SIGKILL") };
};

/** The agent's own connector (same key, host keys of its own) for the in-process dead agent. */
const deadAgentConnector = (): RouterOsConnector =>
  new SshRouterOsConnector({
    username: "mgmt",
    privateKey: key.private,
    connectTimeoutMs: 5000,
    commandTimeoutMs: 5000,
    hostKeys: new InMemoryHostKeyStore(),
  });

/**
 * On PostgreSQL the case below starts three agent processes one after another (1.7 to 5 s each on a
 * loaded machine) and waits out two leases; each of its waits has 30 s, so the case gets room for
 * them instead of the default 30 s in all (which it overran under load, timing out mid-wait).
 */
const AGENT_DEATH_CASE_MS = 120_000;

describe("durable jobs", () => {
  it(
    "a job whose agent dies between claiming and finishing is completed once by the next agent",
    async () => {
      if (db.driver === "postgresql") {
        const router = await startRouter(TUNNELS[0] ?? "", 700);
        const env = agentEnv({ DATABASE_URL: db.url ?? "" });
        const forward = await newForward(router.tunnelIp);
        const add = addForwardRule({
          tunnelIp: router.tunnelIp,
          port: forward.port,
          dstAddress: "192.168.88.20",
          dstPort: 22,
          forwardId: forward.id,
        });

        // Apply: killed after the router received the add, before the agent could record success.
        const first = await spawnAgent(env);
        await eventually(() => sent(router, add) === 1, "the add command to reach the router");
        first.kill();
        // Taken once and not finished: still active, or back for a retry when the 2 s lease ran out
        // before this read (the engine's monitor runs every second; a loaded machine is slow here).
        const stuck = await jobOf(forward.id, ROUTER_JOB_KINDS.apply);
        expect(stuck).toMatchObject({ state: expect.stringMatching(/^(active|retry)$/), attempts: 1 });
        const second = await spawnAgent(env);
        try {
          await eventually(
            async () => (await jobOf(forward.id, ROUTER_JOB_KINDS.apply)).state === "completed",
            "the apply to complete",
            30_000,
          );
          // Taken over after the death: attempt 2, or 3 when attempt 2 itself outlived the 2 s lease on
          // a loaded machine (the 700 ms router); the router's lock kept them apart, and the add was
          // sent once (below).
          const applied = await jobOf(forward.id, ROUTER_JOB_KINDS.apply);
          expect(applied.state).toBe("completed");
          expect(applied.attempts).toBeGreaterThanOrEqual(2);
          expect(tagged(router, forward.id)).toHaveLength(1);
          expect(sent(router, add)).toBe(1);

          // Remove: the same, killed after the router received the removal. The start-up
          // reconciliation of this router must be over first: it could send the same command.
          await eventually(async () => {
            const open = (await listRouterJobs(db, { routerId: forward.routerId })).filter(
              (job) => job.state !== "completed",
            );
            return open.length === 0;
          }, "the router's queue to drain");
          await revokeForward(db, engine, forward);
          const remove = removeForwardRule(forward.id);
          await eventually(() => sent(router, remove) >= 1, "the remove command to reach the router");
          second.kill();
          expect(await jobOf(forward.id, ROUTER_JOB_KINDS.remove)).toMatchObject({
            state: expect.stringMatching(/^(active|retry)$/),
            attempts: 1,
          });
        } finally {
          second.kill();
        }
        const third = await spawnAgent(env);
        try {
          await eventually(
            async () => (await jobOf(forward.id, ROUTER_JOB_KINDS.remove)).state === "completed",
            "the removal to complete",
            30_000,
          );
          const removed = await jobOf(forward.id, ROUTER_JOB_KINDS.remove);
          expect(removed.state).toBe("completed");
          expect(removed.attempts).toBeGreaterThanOrEqual(2);
          expect(tagged(router, forward.id)).toHaveLength(0);
          expect(router.ssh.rules()).toEqual([]);
        } finally {
          third.kill();
        }
        return;
      }

      // PGlite: the dead agent is this test. It takes the job, sends the add, and is never heard of again.
      const router = await startRouter(TUNNELS[0] ?? "");
      const clock = new ManualClock(new Date());
      const forward = await newForward(router.tunnelIp, clock);
      const [claimed] = await engine.boss.fetch<{ forward_id: string }>(ROUTER_JOBS_QUEUE);
      expect(claimed?.data).toMatchObject({ forward_id: forward.id, kind: ROUTER_JOB_KINDS.apply });
      const add = addForwardRule({
        tunnelIp: router.tunnelIp,
        port: forward.port,
        dstAddress: "192.168.88.20",
        dstPort: 22,
        forwardId: forward.id,
      });
      const session: RouterOsClient = await deadAgentConnector().connect({
        routerId: forward.routerId,
        host: router.tunnelIp,
        port: sshPort,
      });
      await session.exec(add);
      session.close();

      const agent = await startTestTunnelAgent({
        config: loadTunnelAgentConfig(agentEnv({ DATA_DIR: "memory" })),
        db,
        logger: pino({ level: "silent" }),
        clock,
        manualJobs: true,
      });
      const drainUntil = (forwardId: string, kind: string, what: string) =>
        eventually(
          async () => {
            await agent.drain();
            return (await jobOf(forwardId, kind)).state === "completed";
          },
          what,
          30_000,
        );
      try {
        // The lease still holds: nobody may touch the job, and the router's later jobs wait behind it.
        expect(await agent.drain()).toBe(0);
        expect((await jobOf(forward.id, ROUTER_JOB_KINDS.apply)).state).toBe("active");
        await drainUntil(forward.id, ROUTER_JOB_KINDS.apply, "the apply to be taken over and completed");
        expect(await jobOf(forward.id, ROUTER_JOB_KINDS.apply)).toMatchObject({ state: "completed", attempts: 2 });
        expect(tagged(router, forward.id)).toHaveLength(1);
        expect(sent(router, add)).toBe(1);
        // The dead agent's late "done" concerns an attempt that is no longer its own.
        const late = await engine.boss.complete(ROUTER_JOBS_QUEUE, {
          id: claimed?.id ?? "",
          retryCount: claimed?.retryCount ?? 0,
        });
        expect((late as { affected?: number }).affected).toBe(0);

        await revokeForward(db, engine, forward, clock.now());
        const [removal] = await engine.boss.fetch<{ forward_id: string }>(ROUTER_JOBS_QUEUE);
        expect(removal?.data).toMatchObject({ forward_id: forward.id, kind: ROUTER_JOB_KINDS.remove });
        const again = await deadAgentConnector().connect({
          routerId: forward.routerId,
          host: router.tunnelIp,
          port: sshPort,
        });
        await again.exec(removeForwardRule(forward.id));
        again.close();
        await drainUntil(forward.id, ROUTER_JOB_KINDS.remove, "the removal to be taken over and completed");
        expect(await jobOf(forward.id, ROUTER_JOB_KINDS.remove)).toMatchObject({ state: "completed", attempts: 2 });
        expect(router.ssh.rules()).toEqual([]);
      } finally {
        await agent.close();
      }
    },
    AGENT_DEATH_CASE_MS,
  );

  it("closes and removes at start a forward that expired while no agent ran", async () => {
    const router = await startRouter(`${NET}.35`);
    const clock = new ManualClock(new Date());
    const config = loadTunnelAgentConfig(agentEnv({ DATA_DIR: "memory" }));
    const logger = pino({ level: "silent" });
    const forward = await newForward(router.tunnelIp, clock);
    const first = await startTestTunnelAgent({ config, db, logger, clock });
    try {
      await eventually(
        async () => (await jobOf(forward.id, ROUTER_JOB_KINDS.apply)).state === "completed",
        "the apply",
        30_000,
      );
    } finally {
      await first.close();
    }
    expect(tagged(router, forward.id)).toHaveLength(1);

    // Nobody is running when the hour passes.
    clock.advance(3_600_000);
    expect(
      (await db.query<{ status: string }>("select status from forwards where id = $1", [forward.id]))[0]?.status,
    ).toBe("active");
    const second = await startTestTunnelAgent({ config, db, logger, clock });
    try {
      expect(
        (await db.query<{ status: string }>("select status from forwards where id = $1", [forward.id]))[0]?.status,
      ).toBe("expired");
      // The agent's own loop and its start-up reconciliation share this router's queue: wait for it.
      await eventually(
        async () => (await jobOf(forward.id, ROUTER_JOB_KINDS.remove)).state === "completed",
        "the removal",
        30_000,
      );
      expect(await jobOf(forward.id, ROUTER_JOB_KINDS.remove)).toMatchObject({ state: "completed", attempts: 1 });
      expect(tagged(router, forward.id)).toHaveLength(0);
    } finally {
      await second.close();
    }
  });

  it("retries a job that fails with exponential backoff and keeps the last error visible", async () => {
    // No router answers at this address.
    const clock = new ManualClock(new Date());
    const forward = await newForward(`${NET}.36`, clock);
    const agent = await startTestTunnelAgent({
      config: loadTunnelAgentConfig(agentEnv({ DATA_DIR: "memory" })),
      db,
      logger: pino({ level: "silent" }),
      clock,
      manualJobs: true,
    });
    try {
      // Other routers' reconciliations (from earlier tests) may run in the same drain, after the
      // apply (it has priority): on a slow machine its 1 s retry may come due within that drain.
      expect(await agent.drain()).toBeGreaterThanOrEqual(1);
      const job = await jobOf(forward.id, ROUTER_JOB_KINDS.apply);
      expect(job.state).toBe("retry");
      expect(job.attempts).toBeGreaterThanOrEqual(1);
      expect(job.lastError).toMatch(/ECONNREFUSED/);
      expect(job.startAfter.getTime()).toBeGreaterThan(job.createdOn.getTime());
      // The backoff is the queue's: 1 s doubled per attempt up to 5 minutes, 10 attempts in all,
      // then the dead-letter queue.
      const [stored] = await engine.findJobs(ROUTER_JOBS_QUEUE, { id: job.id });
      expect(stored).toMatchObject({
        retryDelay: 1,
        retryBackoff: true,
        retryDelayMax: 300,
        retryLimit: 9,
        deadLetter: "router.jobs.dead",
      });
      await eventually(
        async () => {
          await agent.drain();
          return (await jobOf(forward.id, ROUTER_JOB_KINDS.apply)).attempts >= 2;
        },
        "the second attempt",
        30_000,
      );
      expect((await jobOf(forward.id, ROUTER_JOB_KINDS.apply)).lastError).toMatch(/ECONNREFUSED/);
    } finally {
      await agent.close();
    }
  });

  it("two agents on one database never run jobs of one router at the same time, and apply each forward once", async () => {
    const devices = await Promise.all(TUNNELS.slice(1).map((ip) => startRouter(ip, 15)));
    // The jobs carry the lease the agents below declare (a job takes the queue's lease when it is
    // sent; earlier tests left the queue at LEASE_MS). An attempt that outlives its lease is the
    // next test's subject.
    await engine.defineQueue(routerJobsQueue(60));
    // One router row per device, four forwards each: the router's jobs must run one at a time.
    const owners = await Promise.all(devices.map((d) => newRouter(d.tunnelIp)));
    const forwards: Array<{ forward: Awaited<ReturnType<typeof newForward>>; device: SimulatedRouterOs }> = [];
    for (let i = 0; i < 12; i++) {
      const device = devices[i % devices.length] as SimulatedRouterOs;
      forwards.push({ forward: await newForward(device.tunnelIp, systemClock, owners[i % devices.length]), device });
    }

    // Each agent gets its own database handle (its own pool on PostgreSQL, like separate processes);
    // PGlite can only be opened once, so there they share it.
    const handles: Database[] = [db];
    if (db.url) handles.push(await openDatabase({ databaseUrl: db.url, dataDir: "memory", poolSize: 3 }));
    // Each handle gets its own job engine (its own pg-boss), as in separate processes.
    const busy = new Map<string, number>();
    let overlaps = 0;
    const watched = (inner: RouterOsConnector): RouterOsConnector => ({
      connect: async (target) => {
        const client = await inner.connect(target);
        return {
          exec: async (command) => {
            const now = (busy.get(target.host) ?? 0) + 1;
            busy.set(target.host, now);
            if (now > 1) overlaps++;
            try {
              return await client.exec(command);
            } finally {
              busy.set(target.host, (busy.get(target.host) ?? 1) - 1);
            }
          },
          close: () => client.close(),
        };
      },
    });
    const agents: TestTunnelAgent[] = [];
    try {
      for (const [i, handle] of [handles[0], handles[1] ?? handles[0]].entries()) {
        const config = loadTunnelAgentConfig(
          agentEnv({ DATA_DIR: "memory", ENTRY_POINT_HOST: `idle-${i}.fleet.test`, TUNNEL_JOB_LEASE_MS: "60000" }),
        );
        agents.push(
          await startTestTunnelAgent({
            config,
            db: handle as Database,
            logger: pino({ level: "silent" }),
            connector: watched(deadAgentConnector()),
          }),
        );
      }
      await eventually(
        async () => {
          const done = await Promise.all(
            forwards.map(
              async ({ forward }) => (await jobOf(forward.id, ROUTER_JOB_KINDS.apply)).state === "completed",
            ),
          );
          return done.every(Boolean);
        },
        "every apply job to finish",
        30_000,
      );
      // Both agents registered the expiry safety sweep: it is still one cluster-wide schedule.
      expect((await engine.boss.getSchedules(EXPIRY_SWEEP_QUEUE)).map((x) => x.cron)).toEqual(["* * * * *"]);
    } finally {
      for (const agent of agents) await agent.close();
      for (const handle of handles.slice(1)) await handle.close();
    }
    expect(overlaps).toBe(0);
    for (const { forward, device } of forwards) {
      const add = addForwardRule({
        tunnelIp: device.tunnelIp,
        port: forward.port,
        dstAddress: "192.168.88.20",
        dstPort: 22,
        forwardId: forward.id,
      });
      expect(sent(device, add)).toBe(1);
      expect(tagged(device, forward.id)).toHaveLength(1);
      const job = await jobOf(forward.id, ROUTER_JOB_KINDS.apply);
      expect(job.attempts).toBe(1);
    }
  });
});
