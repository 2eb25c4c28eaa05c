import { ManualClock, ROUTER_JOB_KINDS } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { acquireJobEngine, type JobEngine } from "../jobs/job-engine.ts";
import { CHANGE_JOB_PRIORITY, listRouterJobs, ROUTER_JOBS_QUEUE, routerJobsQueue } from "../jobs/router-jobs.ts";
import { ChangesRepository, type NewChange } from "../repositories/changes.repository.ts";
import { queryOf } from "../database.ts";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "../testing/index.ts";
import {
  assignWaves,
  CHANGE_ADVANCE_QUEUE,
  CHANGE_AUDIT_OUTPUT_CHARS,
  CHANGE_OUTPUT_CHARS,
  changeAdvanceQueue,
  ChangeWorkflow,
} from "./change-workflow.ts";

// The workflow on a real database and job engine, driven as the agent drives it: the dispatcher's
// steps are called as its job would call them, routers finish through finishChangeRouter.

let db: TestDatabase;
let engine: JobEngine;
const clock = new ManualClock();
let workflow: ChangeWorkflow;
let changes: ChangesRepository;
const USER = { actor: { type: "user" as const, id: crypto.randomUUID() }, sourceIp: null };

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  await engine.defineQueue(routerJobsQueue());
  await engine.defineQueue(changeAdvanceQueue());
  workflow = new ChangeWorkflow(db, engine, clock);
  changes = new ChangesRepository(queryOf(db));
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

const newChange = (owner: { organizationId: string }, overrides: Partial<NewChange> = {}): NewChange => ({
  organizationId: owner.organizationId,
  teamId: null,
  name: "ntp",
  kind: "script",
  script: "/system identity set name={{identity}}",
  firmwareChannel: null,
  firmwareVersion: null,
  selector: {},
  canary: 1,
  waveSize: 2,
  waveIntervalSeconds: 60,
  maxFailures: 0,
  guardSeconds: 300,
  requiresApproval: false,
  startAt: null,
  state: "scheduled",
  createdBy: USER.actor,
  createdAt: clock.now(),
  ...overrides,
});

const fleet = async (n: number, overrides: Parameters<typeof makeRouter>[2] = {}) => {
  const owner = await makeUser(db);
  const routers = [];
  for (let i = 0; i < n; i++) routers.push(await makeRouter(db, owner, { name: `r${i}`, ...overrides }));
  return { owner, ids: routers.map((r) => r.id) };
};

const states = async (changeId: string) => (await changes.listRouters(changeId)).map((r) => r.state);
const stepIds = async (changeId: string, state = "running") =>
  (await changes.listRouters(changeId)).filter((r) => r.state === state).map((r) => r.id);
const actions = async (changeId: string) =>
  (
    await db.query<{ action: string }>(
      "select action from audit_log where target_id = $1 order by occurred_at, action",
      [changeId],
    )
  ).map((r) => r.action);

describe("assignWaves", () => {
  it("puts the canaries in wave 0 and the rest in waves of wave_size", () => {
    expect(assignWaves(["a", "b", "c", "d", "e", "f"], 2, 3).map((r) => r.wave)).toEqual([0, 0, 1, 1, 1, 2]);
  });
});

describe("ChangeWorkflow", () => {
  it("runs the canary, then waves of wave_size once the previous wave is done and the interval has passed", async () => {
    const { owner, ids } = await fleet(5);
    const change = await workflow.create(newChange(owner), ids, USER);
    expect(change.state).toBe("running");

    await workflow.advance(change.id);
    expect(await states(change.id)).toEqual(["running", "pending", "pending", "pending", "pending"]);
    const canaryJobs = await listRouterJobs(db, { kind: ROUTER_JOB_KINDS.changeApply, routerId: ids[0] });
    expect(canaryJobs).toHaveLength(1);
    // A second look while the canary runs starts nothing.
    await workflow.advance(change.id);
    expect(await stepIds(change.id)).toHaveLength(1);

    const [canary] = await stepIds(change.id);
    await workflow.finishChangeRouter(canary ?? "", { state: "succeeded", output: "ok" });
    await workflow.advance(change.id);
    expect(await stepIds(change.id)).toHaveLength(0);
    clock.advance(59_000);
    await workflow.advance(change.id);
    expect(await stepIds(change.id)).toHaveLength(0);
    clock.advance(1_000);
    await workflow.advance(change.id);
    expect(await states(change.id)).toEqual(["succeeded", "running", "running", "pending", "pending"]);

    for (const id of await stepIds(change.id)) await workflow.finishChangeRouter(id, { state: "succeeded" });
    clock.advance(60_000);
    await workflow.advance(change.id);
    expect(await states(change.id)).toEqual(["succeeded", "succeeded", "succeeded", "running", "running"]);
    for (const id of await stepIds(change.id)) await workflow.finishChangeRouter(id, { state: "succeeded" });

    expect((await changes.get(owner.organizationId, change.id))?.state).toBe("completed");
    expect(await changes.counts(change.id)).toEqual({ succeeded: 5 });
    // Entries of one instant have no order among themselves: compare as sets with counts.
    expect((await actions(change.id)).sort()).toEqual(
      ["change.created", "change.started", ...Array(5).fill("change.router.succeeded"), "change.completed"].sort(),
    );
  });

  it("renders the script per router when its wave starts, a hostile identity quoted", async () => {
    const { owner, ids } = await fleet(1, { identity: 'x" ; /system reboot' });
    const change = await workflow.create(newChange(owner), ids, USER);
    await workflow.advance(change.id);
    const [step] = await changes.listRouters(change.id);
    expect(step?.script).toBe('/system identity set name="x\\" \\3B /system reboot"');
    const read = await workflow.step(step?.id ?? "");
    expect(read?.change.id).toBe(change.id);
  });

  it.each([
    [1, "completed"],
    [2, "halted"],
  ])(
    "with max_failures 1, %i failures leave the change %s; running routers still report, nothing new starts",
    async (failures, end) => {
      const { owner, ids } = await fleet(4);
      const change = await workflow.create(
        newChange(owner, { canary: 1, waveSize: 3, waveIntervalSeconds: 0, maxFailures: 1 }),
        ids,
        USER,
      );
      await workflow.advance(change.id);
      const [canary] = await stepIds(change.id);
      await workflow.finishChangeRouter(canary ?? "", { state: failures > 0 ? "failed" : "succeeded", output: "bad" });
      await workflow.advance(change.id);
      const wave = await stepIds(change.id);
      expect(wave).toHaveLength(3);
      await workflow.finishChangeRouter(wave[0] ?? "", { state: failures > 1 ? "reverted" : "succeeded" });
      if (end === "halted") {
        expect((await changes.get(owner.organizationId, change.id))?.state).toBe("halted");
      }
      await workflow.finishChangeRouter(wave[1] ?? "", { state: "succeeded" });
      await workflow.finishChangeRouter(wave[2] ?? "", { state: "succeeded" });
      await workflow.advance(change.id);
      expect((await changes.get(owner.organizationId, change.id))?.state).toBe(end);
      expect((await actions(change.id)).filter((a) => a === "change.halted")).toHaveLength(end === "halted" ? 1 : 0);
    },
  );

  it("with no interval the last result of a wave starts the next one itself; earlier results start nothing", async () => {
    const { owner, ids } = await fleet(4);
    const change = await workflow.create(newChange(owner, { waveIntervalSeconds: 0, waveSize: 2 }), ids, USER);
    await workflow.advance(change.id);
    const [canary] = await stepIds(change.id);
    await workflow.finishChangeRouter(canary ?? "", { state: "succeeded" });
    // No dispatcher step in between: the result's own transaction started wave 1.
    expect(await states(change.id)).toEqual(["succeeded", "running", "running", "pending"]);
    const [first, second] = await stepIds(change.id);
    await workflow.finishChangeRouter(first ?? "", { state: "succeeded" });
    expect(await states(change.id)).toEqual(["succeeded", "succeeded", "running", "pending"]);
    await workflow.finishChangeRouter(second ?? "", { state: "succeeded" });
    expect(await states(change.id)).toEqual(["succeeded", "succeeded", "succeeded", "running"]);
    for (const id of await stepIds(change.id)) await workflow.finishChangeRouter(id, { state: "succeeded" });
    expect((await changes.get(owner.organizationId, change.id))?.state).toBe("completed");
  });

  it("starts a wave's routers and queues their jobs in one insert, not one per router (issue 39)", async () => {
    const { owner, ids } = await fleet(4);
    const change = await workflow.create(newChange(owner, { waveIntervalSeconds: 0, waveSize: 3 }), ids, USER);
    await workflow.advance(change.id);
    const [canary] = await stepIds(change.id);
    const send = vi.spyOn(engine, "send");
    const sendMany = vi.spyOn(engine, "sendMany");
    try {
      await workflow.finishChangeRouter(canary ?? "", { state: "succeeded" });
      expect(send).not.toHaveBeenCalled();
      expect(sendMany).toHaveBeenCalledTimes(1);
      expect(sendMany.mock.calls[0]?.[1]).toHaveLength(3);
    } finally {
      send.mockRestore();
      sendMany.mockRestore();
    }
    // Each router runs its own rendered script and has its own job, keyed by the router.
    const running = (await changes.listRouters(change.id)).filter((r) => r.state === "running");
    expect(running.map((r) => r.routerId)).toEqual(ids.slice(1));
    for (const step of running) {
      const [row] = await db.query<{ script: string; started_at: unknown }>(
        "select script, started_at from change_routers where id = $1",
        [step.id],
      );
      expect(row?.script).toMatch(/^\/system identity set name=/);
      expect(row?.started_at).not.toBeNull();
      const jobs = await db.query<{ data: unknown; priority: number; singleton_key: string }>(
        "select data, priority, singleton_key from pgboss.job where name = $1 and data->>'router_id' = $2",
        [ROUTER_JOBS_QUEUE, step.routerId],
      );
      expect(jobs.map((j) => ({ ...j, data: typeof j.data === "string" ? JSON.parse(j.data) : j.data }))).toEqual([
        {
          data: { kind: ROUTER_JOB_KINDS.changeApply, router_id: step.routerId, change_router_id: step.id },
          priority: CHANGE_JOB_PRIORITY,
          singleton_key: step.routerId,
        },
      ]);
    }
  });

  it("a result tallies the rest of its wave only; a failure amid running wave-mates halts at once", async () => {
    const { owner, ids } = await fleet(5);
    const change = await workflow.create(
      newChange(owner, { waveIntervalSeconds: 0, canary: 4, maxFailures: 1 }),
      ids,
      USER,
    );
    await workflow.advance(change.id);
    const [a, b, c, d] = await stepIds(change.id);
    const tally = (id: string | undefined, state: "succeeded" | "failed") =>
      changes.finishRouter(id ?? "", state, null, clock.now()).then((r) => r?.waveOthers);
    expect(await tally(a, "succeeded")).toEqual({ running: 3, failed: 0 });
    await workflow.finishChangeRouter(b ?? "", { state: "failed", output: "failure: no such item" });
    expect((await changes.get(owner.organizationId, change.id))?.state).toBe("running");
    await workflow.finishChangeRouter(c ?? "", { state: "reverted" });
    // Two failures past a budget of one, with d still running: halted now, not at the wave's end.
    expect((await changes.get(owner.organizationId, change.id))?.state).toBe("halted");
    expect(await tally(d, "succeeded")).toEqual({ running: 0, failed: 2 });
    expect(await states(change.id)).toEqual(["succeeded", "failed", "reverted", "succeeded", "pending"]);
  });

  it("halts before the next wave when failures exceed max_failures, leaving its routers pending", async () => {
    const { owner, ids } = await fleet(3);
    const change = await workflow.create(newChange(owner, { waveIntervalSeconds: 0 }), ids, USER);
    await workflow.advance(change.id);
    const [canary] = await stepIds(change.id);
    await workflow.finishChangeRouter(canary ?? "", { state: "failed", output: "failure: no such item" });
    await workflow.advance(change.id);
    expect(await states(change.id)).toEqual(["failed", "pending", "pending"]);
    expect((await changes.get(owner.organizationId, change.id))?.state).toBe("halted");
    expect(await listRouterJobs(db, { kind: ROUTER_JOB_KINDS.changeApply, routerId: ids[1] })).toHaveLength(0);
  });

  it("skips a router offline at its turn without a job and goes on", async () => {
    const owner = await makeUser(db);
    const offline = await makeRouter(db, owner, { hasPulse: false });
    const online = await makeRouter(db, owner);
    const change = await workflow.create(newChange(owner, { waveIntervalSeconds: 0 }), [offline.id, online.id], USER);
    await workflow.advance(change.id);
    expect(await states(change.id)).toEqual(["skipped_offline", "running"]);
    expect(await listRouterJobs(db, { kind: ROUTER_JOB_KINDS.changeApply, routerId: offline.id })).toHaveLength(0);
    expect(await actions(change.id)).toContain("change.router.skipped_offline");
  });

  it("records a result once: a repeated report changes nothing", async () => {
    const { owner, ids } = await fleet(2);
    const change = await workflow.create(newChange(owner), ids, USER);
    await workflow.advance(change.id);
    const [canary] = await stepIds(change.id);
    expect(await workflow.setChangeRouterPhase(canary ?? "", "guard")).toBe(true);
    expect((await changes.listRouters(change.id))[0]?.phase).toBe("guard");
    expect(await workflow.finishChangeRouter(canary ?? "", { state: "succeeded", output: "done" })).not.toBeNull();
    expect(await workflow.finishChangeRouter(canary ?? "", { state: "failed", output: "again" })).toBeNull();
    expect(await workflow.setChangeRouterPhase(canary ?? "", "confirm")).toBe(false);
    const [row] = await changes.listRouters(change.id);
    expect([row?.state, row?.output]).toEqual(["succeeded", "done"]);
    expect((await actions(change.id)).filter((a) => a.startsWith("change.router."))).toEqual([
      "change.router.succeeded",
    ]);
    expect(await workflow.finishChangeRouter(crypto.randomUUID(), { state: "succeeded" })).toBeNull();
  });

  it("a success keeps the output its step recorded; its audit entry copies it, cut when long", async () => {
    const { owner, ids } = await fleet(2);
    const change = await workflow.create(newChange(owner, { canary: 2 }), ids, USER);
    await workflow.advance(change.id);
    const [short, long] = await stepIds(change.id);
    const longOutput = `${"y".repeat(CHANGE_AUDIT_OUTPUT_CHARS - 1)}\u{1F600}${"z".repeat(10)}`;
    expect(await workflow.setChangeRouterPhase(short ?? "", "confirm:1:2", "ok")).toBe(true);
    expect(await workflow.setChangeRouterPhase(long ?? "", "confirm:1:2", longOutput)).toBe(true);
    expect((await workflow.finishChangeRouter(short ?? "", { state: "succeeded" }))?.output).toBe("ok");
    expect((await workflow.finishChangeRouter(long ?? "", { state: "succeeded", output: null }))?.output).toBe(
      longOutput,
    );
    const entries = await db.query<{ router_id: string; details: { output: string; wave: number; name: string } }>(
      "select router_id, details from audit_log where target_id = $1 and action = 'change.router.succeeded'",
      [change.id],
    );
    const byRouter = new Map(entries.map((e) => [e.router_id, e.details]));
    expect(byRouter.get(ids[0] ?? "")).toMatchObject({ output: "ok", wave: 0, name: "ntp" });
    expect(byRouter.get(ids[1] ?? "")?.output).toBe(`${"y".repeat(CHANGE_AUDIT_OUTPUT_CHARS - 1)}\uFFFD`);
    expect((await changes.get(owner.organizationId, change.id))?.state).toBe("completed");
  });

  it("concurrent looks dispatch a wave once, concurrent results complete the change once", async () => {
    const { owner, ids } = await fleet(4);
    const change = await workflow.create(
      newChange(owner, { kind: "firmware", script: null, firmwareChannel: "stable", canary: 4 }),
      ids,
      USER,
    );
    await Promise.all([workflow.advance(change.id), workflow.advance(change.id), workflow.advance(change.id)]);
    for (const id of ids) {
      expect(await listRouterJobs(db, { kind: ROUTER_JOB_KINDS.changeApply, routerId: id })).toHaveLength(1);
    }
    const steps = await changes.listRouters(change.id);
    expect(steps.map((s) => [s.state, s.script])).toEqual(Array(4).fill(["running", null]));
    await Promise.all(steps.map((s) => workflow.finishChangeRouter(s.id, { state: "succeeded" })));
    expect((await actions(change.id)).filter((a) => a === "change.completed")).toHaveLength(1);
  });

  it("the sweep queues a step for running changes and scheduled ones whose time has come", async () => {
    const { owner, ids } = await fleet(2);
    const now = await workflow.create(newChange(owner), [ids[0] ?? ""], USER);
    const later = await workflow.create(
      newChange(owner, { startAt: new Date(clock.nowMs() + 60_000) }),
      [ids[1] ?? ""],
      USER,
    );
    await db.query("delete from pgboss.job where name = $1", [CHANGE_ADVANCE_QUEUE]);
    await workflow.sweep();
    const queued = async () =>
      (
        await db.query<{ id: string }>("select data->>'change_id' as id from pgboss.job where name = $1", [
          CHANGE_ADVANCE_QUEUE,
        ])
      ).map((r) => r.id);
    expect(await queued()).toContain(now.id);
    expect(await queued()).not.toContain(later.id);
    clock.advance(60_000);
    await workflow.sweep();
    expect(await queued()).toContain(later.id);
  });

  it("waits for start_at", async () => {
    const { owner, ids } = await fleet(1);
    const change = await workflow.create(newChange(owner, { startAt: new Date(clock.nowMs() + 3_600_000) }), ids, USER);
    expect(change.state).toBe("scheduled");
    await workflow.advance(change.id);
    expect(await states(change.id)).toEqual(["pending"]);
    clock.advance(3_600_000);
    expect((await workflow.advance(change.id))?.state).toBe("running");
    expect(await states(change.id)).toEqual(["running"]);
  });
});

// Issue 39 "Bad input and attackers": a router's output is the router's, so hostile.
describe("hostile router output", () => {
  it("NUL, a lone surrogate and an oversized output are stored (cleaned, cut) and the change goes on", async () => {
    const { owner, ids } = await fleet(1);
    const change = await workflow.create(newChange(owner), ids, USER);
    await workflow.advance(change.id);
    const [step] = await changes.listRouters(change.id);
    const cut = `${"x".repeat(CHANGE_OUTPUT_CHARS - 1)}\u{1F600}tail`;
    const finished = await workflow.finishChangeRouter(step?.id ?? "", {
      state: "failed",
      output: `a\u0000b\ud800c${cut}`,
    });
    expect(finished?.output?.startsWith("a\uFFFDb\uFFFDc")).toBe(true);
    expect(finished?.output?.length).toBeLessThanOrEqual(CHANGE_OUTPUT_CHARS);
    expect(finished?.output).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    const audit = await db.query<{ details: unknown }>(
      "select details from audit_log where target_id = $1 and action = 'change.router.failed'",
      [change.id],
    );
    expect(audit).toHaveLength(1);
    expect((await changes.find(change.id))?.state).toBe("halted");
  });

  it("the audit entry's cut of the output never halves a surrogate pair", async () => {
    const { owner, ids } = await fleet(1);
    const change = await workflow.create(newChange(owner), ids, USER);
    await workflow.advance(change.id);
    const [step] = await changes.listRouters(change.id);
    const output = `${"y".repeat(CHANGE_AUDIT_OUTPUT_CHARS - 1)}\u{1F600}`;
    expect((await workflow.finishChangeRouter(step?.id ?? "", { state: "succeeded", output }))?.output).toBe(output);
    const [entry] = await db.query<{ details: { output: string } }>(
      "select details from audit_log where target_id = $1 and action = 'change.router.succeeded'",
      [change.id],
    );
    expect(entry?.details.output).toBe(`${"y".repeat(CHANGE_AUDIT_OUTPUT_CHARS - 1)}\uFFFD`);
  });
});
