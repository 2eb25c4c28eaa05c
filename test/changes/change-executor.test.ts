import { createHash } from "node:crypto";
import {
  acquireJobEngine,
  ChangeExecutorRepository,
  changeAdvanceQueue,
  ChangesRepository,
  ChangeWorkflow,
  ConfigBackupsRepository,
  ForwardTargetsRepository,
  HeartbeatsRepository,
  type JobEngine,
  type JobRecord,
  listRouterJobs,
  type NewChange,
  queryOf,
  queueRouterJob,
  ROUTER_JOB_ATTEMPTS,
  routerJobsQueue,
} from "@fleet/db";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { type RouterOsSshServer, startRouterOsSshServer } from "@fleet/router-simulator/routeros/routeros-ssh-server";
import { RouterOsDevice } from "@fleet/router-simulator/routeros/script/routeros-device";
import {
  generateEd25519KeyPair,
  ManualClock,
  parseTunnelNetwork,
  ROUTER_JOB_KINDS,
  type TunnelNetwork,
} from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { applyChangeHandler, type ChangeJobDeps, encodePhase } from "@fleet/tunnel-agent/jobs/apply-change";
import { BeatWatcher } from "@fleet/tunnel-agent/jobs/beat-watcher";
import { backupRouterHandler } from "@fleet/tunnel-agent/jobs/backup-router";
import { addGuard, guardName } from "@fleet/tunnel-agent/routeros/change-commands";
import { InMemoryHostKeyStore } from "@fleet/tunnel-agent/routeros/host-key-store";
import { SshRouterOsConnector } from "@fleet/tunnel-agent/routeros/ssh-routeros-client";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

/**
 * The agent's `change.apply` (docs/routeros.md "The guard") on a real database and job engine,
 * against a simulated RouterOS device over SSH: each job run is one attempt, as the worker would
 * make it; heartbeats land through the daemon's repository. Phases recorded by one attempt are
 * what the next one, in this or another agent, resumes from.
 */
const HOST = "127.39.1.1";
const GUARD_SECONDS = 120;
const agentKey = generateEd25519KeyPair();
const logger = pino({ level: "silent" });

let db: TestDatabase;
let engine: JobEngine;
let workflow: ChangeWorkflow;
let changes: ChangesRepository;
const clock = new ManualClock(Date.UTC(2026, 10, 29, 4, 0, 0));
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  await engine.defineQueue(routerJobsQueue());
  await engine.defineQueue(changeAdvanceQueue());
  workflow = new ChangeWorkflow(db, engine, clock);
  changes = new ChangesRepository(queryOf(db));
});
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

/** A simulated adopted router on HOST (7.15.1, reboots of 50 ms) and the agent's connector to it. */
const simulatedRouter = async () => {
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
    system: { rebootSeconds: 0.05 },
  });
  const ssh: RouterOsSshServer = await startRouterOsSshServer({
    host: HOST,
    port: 0,
    username: "fleet",
    authorizedKeys: [agentKey.public],
    lan: () => ({ host: "127.0.0.1", port: 9 }),
    script: (text) => device.system.runRemote(text),
    reachable: () => device.system.reachable,
  });
  cleanups.push(
    () => device.stop(),
    () => device.system.stop(),
    () => ssh.close(),
  );
  return { device, ssh };
};

const executorDeps = (port: number): ChangeJobDeps => {
  const connector = new SshRouterOsConnector({
    username: "fleet",
    privateKey: agentKey.private,
    connectTimeoutMs: 5000,
    commandTimeoutMs: 5000,
    hostKeys: new InMemoryHostKeyStore(),
  });
  const tunnelNetwork = parseTunnelNetwork("127.0.0.0/8") as TunnelNetwork;
  const forwards = new ForwardTargetsRepository(db);
  return {
    changes: workflow,
    steps: new ChangeExecutorRepository(queryOf(db)),
    connector,
    clock,
    logger,
    sshPort: port,
    tunnelNetwork,
    backup: backupRouterHandler({
      db,
      backups: new ConfigBackupsRepository(queryOf(db)),
      forwards,
      connector,
      clock,
      logger,
      sshPort: port,
      tunnelNetwork,
      retention: 10,
      maxBytes: 1024 * 1024,
    }),
    requeue: async (routerId, changeRouterId, at) => {
      await queueRouterJob(
        engine,
        { kind: ROUTER_JOB_KINDS.changeApply, router_id: routerId, change_router_id: changeRouterId },
        undefined,
        { startAfter: at },
      );
    },
    pollMs: 1000,
  };
};

const executor = (port: number) => applyChangeHandler(executorDeps(port));

const USER = { actor: { type: "user" as const, id: crypto.randomUUID() }, sourceIp: null };

/** A change on one router at HOST, dispatched: its step is running and its job queued. */
const dispatched = async (overrides: Partial<NewChange>) => {
  const owner = await makeUser(db);
  await db.query("update routers set tunnel_ip = null where tunnel_ip = $1", [HOST]);
  const router = await makeRouter(db, owner, { tunnelIp: HOST, identity: "edge-1" });
  const change = await workflow.create(
    {
      organizationId: owner.organizationId,
      teamId: null,
      name: "change",
      kind: "script",
      script: null,
      firmwareChannel: null,
      firmwareVersion: null,
      selector: {},
      canary: 1,
      waveSize: 10,
      waveIntervalSeconds: 0,
      maxFailures: 0,
      guardSeconds: GUARD_SECONDS,
      requiresApproval: false,
      startAt: null,
      state: "scheduled",
      createdBy: USER.actor,
      createdAt: clock.now(),
      ...overrides,
    },
    [router.id],
    USER,
  );
  await workflow.advance(change.id);
  const [step] = await changes.listRouters(change.id);
  expect(step?.state).toBe("running");
  const job: JobRecord = {
    id: crypto.randomUUID(),
    kind: ROUTER_JOB_KINDS.changeApply,
    payload: { kind: ROUTER_JOB_KINDS.changeApply, router_id: router.id, change_router_id: step?.id ?? "" },
    attempts: 1,
  };
  const heartbeat = (at: Date, softwareVersion?: string) =>
    new HeartbeatsRepository(db).applyHeartbeats(
      [
        {
          routerId: router.id,
          tokenHash: createHash("sha256").update(router.heartbeatToken).digest("hex"),
          seenAt: at,
          peer: null,
          ...(softwareVersion ? { softwareVersion } : {}),
        },
      ],
      60_000,
    );
  const current = async () => (await changes.listRouters(change.id))[0];
  return { routerId: router.id, stepId: step?.id ?? "", job, heartbeat, current, changeId: change.id };
};

const guards = (device: RouterOsDevice) =>
  device.tables["system scheduler"].map((s) => s.props.name ?? "").filter((n) => n.startsWith("fleet-change-"));
const sent = (ssh: RouterOsSshServer, text: string) => ssh.commands().filter((c) => c.includes(text)).length;

describe("change.apply: a script change", () => {
  it("backs up, guards, runs the script once, and confirms after a heartbeat by removing the guard", async () => {
    const { device, ssh } = await simulatedRouter();
    const run = executor(ssh.port);
    const c = await dispatched({ script: '/ip dns set servers=9.9.9.9\n:put "applied"' });

    await run(c.job);
    expect(device.system.settings().dns.servers).toBe("9.9.9.9");
    expect(device.system.backups()).toEqual([`${guards(device)[0]}.backup`]);
    expect(guards(device)).toHaveLength(1);
    expect((await c.current())?.phase).toMatch(/^confirm:/);
    expect((await new ConfigBackupsRepository(queryOf(db)).list(c.routerId, 10)).length).toBe(1);
    // No heartbeat since the script: the step waits in a delayed job of its own, not in a worker.
    const waiting = await listRouterJobs(db, { routerId: c.routerId, kind: ROUTER_JOB_KINDS.changeApply });
    expect(waiting.map((j) => j.startAfter.getTime())).toContain(clock.now().getTime() + 1000);
    await run(c.job);
    expect((await c.current())?.state).toBe("running");

    clock.advance(1500);
    await c.heartbeat(clock.now());
    await run(c.job);
    const done = await c.current();
    expect(done?.state).toBe("succeeded");
    expect(done?.output).toBe("applied");
    // Confirmed: neither the guard nor the binary backup it would load stays on the router.
    expect(guards(device)).toEqual([]);
    expect(device.system.backups()).toEqual([]);
    expect(device.tables.file.map((f) => f.props.name)).toEqual([]);
    // Another delivery of the job changes nothing, and the script went to the router once.
    await run(c.job);
    expect(sent(ssh, "/ip dns set servers=9.9.9.9")).toBe(1);
  });

  it("an agent killed while the script ran resumes at the confirmation and never sends it again", async () => {
    const { device, ssh } = await simulatedRouter();
    const run = executor(ssh.port);
    const c = await dispatched({ script: "/ip dns set servers=8.8.4.4" });
    // What the killed attempt left: `ran` recorded just before the script went out, then the agent died.
    await device.system.runRemote(addGuard(guardName(c.stepId), GUARD_SECONDS));
    await workflow.setChangeRouterPhase(c.stepId, encodePhase({ kind: "ran", guardAt: clock.now().getTime() }));

    await run({ ...c.job, attempts: 2 });
    expect(sent(ssh, "8.8.4.4")).toBe(0);
    expect((await c.current())?.phase).toMatch(/^confirm:/);
    clock.advance(1000);
    await c.heartbeat(clock.now());
    await run({ ...c.job, attempts: 3 });
    expect((await c.current())?.state).toBe("succeeded");
    expect(guards(device)).toEqual([]);
    expect(sent(ssh, "8.8.4.4")).toBe(0);
  });

  it("reverted when guard_seconds pass without a heartbeat after the script", async () => {
    const { device, ssh } = await simulatedRouter();
    const run = executor(ssh.port);
    const c = await dispatched({ script: '/ip dns set servers=10.9.9.9\n:put "sent"' });
    await run(c.job);
    await c.heartbeat(new Date(clock.now().getTime() - 1));
    clock.advance(GUARD_SECONDS * 1000 - 1);
    await run(c.job);
    expect((await c.current())?.state).toBe("running");
    clock.advance(1);
    await run(c.job);
    const step = await c.current();
    expect(step?.state).toBe("reverted");
    expect(step?.output).toMatch(/^sent\nno heartbeat/);
    // The guard stays: it is what restores the router.
    expect(guards(device)).toHaveLength(1);
  });

  it("keeps a hostile router's output storable: no NUL reaches the database", async () => {
    const { ssh } = await simulatedRouter();
    const run = executor(ssh.port);
    const c = await dispatched({ script: ':put "nul\\00here"' });
    await run(c.job);
    expect(await c.current()).toMatchObject({ state: "running", output: "nulhere" });
  });

  it("a router that cannot be reached before its script fails the step on the job's last attempt", async () => {
    const { ssh } = await simulatedRouter();
    const run = executor(ssh.port);
    await ssh.close();
    const c = await dispatched({ script: "/ip dns set servers=1.1.1.1" });
    await expect(run({ ...c.job, attempts: ROUTER_JOB_ATTEMPTS - 1 })).rejects.toThrow();
    expect((await c.current())?.state).toBe("running");
    await expect(run({ ...c.job, attempts: ROUTER_JOB_ATTEMPTS })).rejects.toThrow();
    const step = await c.current();
    expect(step?.state).toBe("failed");
    expect(step?.output).toMatch(/^the agent gave up after 10 attempts: /);
  });

  it("a script error fails the step with RouterOS's output and removes the guard", async () => {
    const { device, ssh } = await simulatedRouter();
    const run = executor(ssh.port);
    const c = await dispatched({ script: "/ip dns set servers=1.0.0.1\n/interface bridge add name=br0" });
    await run(c.job);
    const step = await c.current();
    expect(step?.state).toBe("failed");
    expect(step?.output).toMatch(/^bad command name bridge \(line 2 column \d+\)$/);
    expect(device.system.settings().dns.servers).toBe("");
    expect(guards(device)).toEqual([]);
    expect(device.system.backups()).toEqual([]);
  });

  it("waits in its job for the heartbeat when it may, and confirms as soon as it lands", async () => {
    const { device, ssh } = await simulatedRouter();
    const watcher = new BeatWatcher({
      lastSeen: (ids) => new ChangeExecutorRepository(queryOf(db)).lastSeen(ids),
      checkMs: 20,
      logger,
    });
    const run = applyChangeHandler({
      ...executorDeps(ssh.port),
      beats: { wait: watcher.wait.bind(watcher), holdMs: 30_000 },
    });
    const c = await dispatched({ script: "/ip dns set servers=9.9.9.8" });
    const attempt = run(c.job);
    await eventually(async () => (await c.current())?.phase?.startsWith("confirm:"), "the script run");
    clock.advance(10);
    await c.heartbeat(clock.now());
    await attempt;
    expect((await c.current())?.state).toBe("succeeded");
    expect(guards(device)).toEqual([]);
    expect(device.system.backups()).toEqual([]);
    // Confirmed in the one job: nothing was queued again (the one job is the dispatcher's).
    expect(await listRouterJobs(db, { routerId: c.routerId, kind: ROUTER_JOB_KINDS.changeApply })).toHaveLength(1);
    // A hold that ends without a heartbeat goes back to the queue as before.
    const d = await dispatched({ script: "/ip dns set servers=9.9.9.7" });
    const short = applyChangeHandler({
      ...executorDeps(ssh.port),
      beats: { wait: watcher.wait.bind(watcher), holdMs: 50 },
    });
    await short(d.job);
    expect((await d.current())?.state).toBe("running");
    expect(await listRouterJobs(db, { routerId: d.routerId, kind: ROUTER_JOB_KINDS.changeApply })).toHaveLength(2);
    watcher.close();
  });
});

describe("change.apply: a firmware change", () => {
  it("installs what the channel offers and succeeds on a heartbeat reporting it", async () => {
    const { device, ssh } = await simulatedRouter();
    const run = executor(ssh.port);
    const c = await dispatched({ kind: "firmware", firmwareChannel: "stable" });
    await run(c.job);
    expect((await c.current())?.phase).toMatch(/^reboot:[0-9a-z]+:7\.16\.2$/);
    await eventually(() => device.version === "7.16.2 (stable)", "the router rebooted into 7.16.2");
    await run(c.job);
    expect((await c.current())?.state).toBe("running");
    clock.advance(1000);
    await c.heartbeat(clock.now(), "7.16.2 (stable)");
    await run(c.job);
    expect((await c.current())?.state).toBe("succeeded");
    expect(sent(ssh, "/system package update install")).toBe(1);
    expect(guards(device)).toEqual([]);
    // Backed up first as for a script (CONTRACT 21): the configuration here, the binary backup left
    // on the router as the way back.
    expect((await new ConfigBackupsRepository(queryOf(db)).list(c.routerId, 10)).length).toBe(1);
    expect(device.system.backups()).toEqual([expect.stringMatching(/^fleet-change-[0-9a-f]{32}\.backup$/)]);
  });

  it("fails without the new version within guard_seconds, and when the channel offers another version", async () => {
    const { ssh } = await simulatedRouter();
    const run = executor(ssh.port);
    const wrong = await dispatched({ kind: "firmware", firmwareChannel: "long-term", firmwareVersion: "7.16.2" });
    await run(wrong.job);
    expect(await wrong.current()).toMatchObject({
      state: "failed",
      output: "the long-term channel offers 7.12.2, not 7.16.2",
    });

    const c = await dispatched({ kind: "firmware", firmwareChannel: "long-term" });
    await run(c.job);
    clock.advance(1000);
    await c.heartbeat(clock.now(), "7.15.1 (stable)");
    clock.advance(GUARD_SECONDS * 1000);
    await run(c.job);
    const step = await c.current();
    expect(step?.state).toBe("failed");
    expect(step?.output).toMatch(
      /no heartbeat reporting 7\.12\.2 within guard_seconds \(120\); last reported 7\.15\.1/,
    );
  });
});
