import {
  acquireJobEngine,
  type AuditOrigin,
  ChangeWorkflow,
  changeAdvanceQueue,
  ChangesRepository,
  type JobEngine,
  listRouterJobs,
  queryOf,
  routerJobsQueue,
} from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import {
  CHANGE_LIMITS,
  ManualClock,
  ROUTER_JOB_KINDS,
  type TCreateChangeInput,
  ZCreateChangeInput,
} from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { mintApiKey, storeApiKey } from "../api-keys/api-keys.service.ts";
import { ChangesService } from "./changes.service.ts";

// The service tier (docs/contributing.md "Add a test"): ChangesService and the dispatcher on a real
// database and job engine, time a ManualClock; routers report through finishChangeRouter as the
// agent's executor does, and the dispatcher's steps are called as its job calls them.

let db: TestDatabase;
let engine: JobEngine;
const clock = new ManualClock(Date.UTC(2026, 11, 1, 9, 0, 0));
let workflow: ChangeWorkflow;
let service: ChangesService;
let repo: ChangesRepository;

beforeAll(async () => {
  db = await createTestDatabase();
  engine = await acquireJobEngine(db);
  await engine.defineQueue(routerJobsQueue());
  await engine.defineQueue(changeAdvanceQueue());
  workflow = new ChangeWorkflow(db, engine, clock);
  service = new ChangesService({ db, jobs: engine, workflow, clock });
  repo = new ChangesRepository(queryOf(db));
});
afterAll(async () => {
  await engine?.stop();
  await db?.close();
});

const originOf = (userId: string): AuditOrigin => ({ actor: { type: "user", id: userId }, sourceIp: "192.0.2.1" });

const body = (overrides: Partial<TCreateChangeInput> = {}): TCreateChangeInput =>
  ZCreateChangeInput.parse({
    name: "ntp",
    kind: "script",
    script: "/system ntp client set enabled=yes comment={{name}}",
    routers: {},
    strategy: { canary: 1, wave_size: 2, wave_interval_seconds: 0 },
    ...overrides,
  });

const org = async (routers: number) => {
  const owner = await makeUser(db);
  const ids: string[] = [];
  for (let i = 0; i < routers; i++) ids.push((await makeRouter(db, owner, { name: `r${i}` })).id);
  return { owner, ids, origin: originOf(owner.userId) };
};

const running = async (changeId: string) =>
  (await repo.listRouters(changeId)).filter((r) => r.state === "running").map((r) => r.id);

describe("ChangesService.create", () => {
  it("targets the selected routers in the order given, canaries in wave 0, and starts at once", async () => {
    const { owner, ids, origin } = await org(4);
    const created = await service.create(
      owner.organizationId,
      origin,
      body({ routers: { router_ids: [ids[3] ?? "", ids[1] ?? "", ids[2] ?? ""] } }),
    );
    expect(created).toMatchObject({
      state: "running",
      kind: "script",
      created_by: owner.userId,
      counts: { pending: 3 },
    });
    expect(created.routers.map((r) => [r.router_id, r.wave, r.state])).toEqual([
      [ids[3], 0, "pending"],
      [ids[1], 1, "pending"],
      [ids[2], 1, "pending"],
    ]);
    const audit = await db.query<{ action: string; actor_id: string; source_ip: string }>(
      "select action, actor_id, source_ip from audit_log where target_id = $1 order by action",
      [created.id],
    );
    expect(audit).toEqual([
      { action: "change.created", actor_id: owner.userId, source_ip: "192.0.2.1" },
      { action: "change.started", actor_id: owner.userId, source_ip: "192.0.2.1" },
    ]);
  });

  it("selects by tags and by team", async () => {
    const { owner, ids, origin } = await org(3);
    await db.query(`update routers set tags = '["core"]' where id = $1`, [ids[1]]);
    const byTag = await service.create(owner.organizationId, origin, body({ routers: { tags: ["core", "edge"] } }));
    expect(byTag.routers.map((r) => r.router_id)).toEqual([ids[1]]);
    const byTeam = await service.create(owner.organizationId, origin, body({ routers: { team_id: owner.teamId } }));
    expect(byTeam.routers).toHaveLength(3);
  });

  it("another organization's router or team is not found, and nothing is created", async () => {
    const { owner, ids, origin } = await org(1);
    const stranger = await org(1);
    const before = await databaseFingerprint(db);
    for (const routers of [
      { router_ids: [ids[0] ?? "", stranger.ids[0] ?? ""] },
      { router_ids: [crypto.randomUUID()] },
      { team_id: stranger.owner.teamId },
    ]) {
      const error = await rejection(service.create(owner.organizationId, origin, body({ routers })));
      expect(error.status).toBe(404);
    }
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("a selection of no router is refused with 422 naming routers", async () => {
    const { owner, origin } = await org(1);
    const error = await rejection(service.create(owner.organizationId, origin, body({ routers: { tags: ["none"] } })));
    expect([error.status, Object.keys(error.fields ?? {})]).toEqual([422, ["routers"]]);
  });
});

describe("limits of a change (ZCreateChangeInput)", () => {
  const refused = (input: Record<string, unknown>) => {
    const result = ZCreateChangeInput.safeParse({ name: "x", kind: "script", script: ":put 1", routers: {}, ...input });
    return result.success ? null : result.error.issues.map((i) => i.path.join("."));
  };

  it("a script of 64 KiB is taken, one byte more is refused", () => {
    const max = CHANGE_LIMITS.scriptBytes;
    expect(refused({ script: "a".repeat(max) })).toBeNull();
    expect(refused({ script: "a".repeat(max + 1) })).toEqual(["script"]);
    // Bytes, not characters: 2-byte characters count twice.
    expect(refused({ script: "é".repeat(max / 2) })).toBeNull();
    expect(refused({ script: `${"é".repeat(max / 2)}a` })).toEqual(["script"]);
  });

  it.each([
    ["canary", 1, 50, 0, 51],
    ["wave_size", 1, 500, 0, 501],
    ["wave_interval_seconds", 0, 86_400, -1, 86_401],
    ["max_failures", 0, 1000, -1, 1001],
  ])("strategy.%s takes %i..%i and refuses %i and %i", (key, min, max, below, above) => {
    expect(refused({ strategy: { [key]: min } })).toBeNull();
    expect(refused({ strategy: { [key]: max } })).toBeNull();
    expect(refused({ strategy: { [key]: below } })).toEqual([`strategy.${key}`]);
    expect(refused({ strategy: { [key]: above } })).toEqual([`strategy.${key}`]);
  });

  it("guard_seconds takes 60..3600", () => {
    expect(refused({ guard_seconds: 60 })).toBeNull();
    expect(refused({ guard_seconds: 3600 })).toBeNull();
    expect(refused({ guard_seconds: 59 })).toEqual(["guard_seconds"]);
    expect(refused({ guard_seconds: 3601 })).toEqual(["guard_seconds"]);
  });

  it("a firmware channel that does not exist, a missing part and unknown placeholders are refused", () => {
    const firmware = { kind: "firmware", script: undefined };
    expect(refused({ ...firmware, firmware: { channel: "long-term" } })).toBeNull();
    expect(refused({ ...firmware, firmware: { channel: "beta" } })).toEqual(["firmware.channel"]);
    expect(refused({ ...firmware })).toEqual(["firmware"]);
    expect(refused({ script: undefined })).toEqual(["script"]);
    expect(refused({ script: ":put {{identity}} {{metadata.site}}" })).toBeNull();
    expect(refused({ script: ":put {{password}}" })).toEqual(["script"]);
    expect(refused({ script: ":put 1\r\n" })).toEqual(["script"]);
  });
});

describe("the rollout through the service", () => {
  it("runs canary then waves, skips an offline router, and halts past max_failures", async () => {
    const { owner, origin } = await org(0);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await makeRouter(db, owner, { name: `r${i}`, hasPulse: i !== 2 })).id);
    const change = await service.create(
      owner.organizationId,
      origin,
      body({
        routers: { router_ids: ids },
        strategy: { canary: 1, wave_size: 2, wave_interval_seconds: 0, max_failures: 1 },
      }),
    );
    await workflow.advance(change.id);
    const [canary] = await running(change.id);
    await workflow.finishChangeRouter(canary ?? "", { state: "succeeded", output: "" });
    await workflow.advance(change.id);
    // Wave 1: routers 1 and 2; router 2 is offline and skipped without a job.
    expect((await repo.listRouters(change.id)).map((r) => r.state)).toEqual([
      "succeeded",
      "running",
      "skipped_offline",
      "pending",
      "pending",
      "pending",
    ]);
    expect(await listRouterJobs(db, { kind: ROUTER_JOB_KINDS.changeApply, routerId: ids[2] })).toHaveLength(0);
    const [one] = await running(change.id);
    await workflow.finishChangeRouter(one ?? "", { state: "failed", output: "failure: bad command" });
    await workflow.advance(change.id);
    const wave2 = await running(change.id);
    expect(wave2).toHaveLength(2);
    await workflow.finishChangeRouter(wave2[0] ?? "", { state: "reverted" });
    const halted = await service.get(owner.organizationId, change.id);
    expect(halted.state).toBe("halted");
    await workflow.finishChangeRouter(wave2[1] ?? "", { state: "succeeded" });
    await workflow.advance(change.id);
    expect((await service.get(owner.organizationId, change.id)).counts).toEqual({
      succeeded: 2,
      failed: 1,
      reverted: 1,
      skipped_offline: 1,
      pending: 1,
    });
    const results = await service.routers(owner.organizationId, change.id);
    expect(results[1]).toMatchObject({ state: "failed", output: "failure: bad command" });
    expect(results[1]?.finished_at).toMatch(/\+00:00$/);
  });
});

describe("approval and transitions", () => {
  it("waits for a second person: the author is refused with 403, another approves, a second approval is 409", async () => {
    const { owner, ids, origin } = await org(1);
    const change = await service.create(owner.organizationId, origin, body({ requires_approval: true }));
    expect(change.state).toBe("awaiting_approval");
    await workflow.advance(change.id);
    expect(await running(change.id)).toEqual([]);

    const before = await databaseFingerprint(db);
    const refused = await rejection(service.approve(owner.organizationId, change.id, origin));
    expect(refused.status).toBe(403);
    expect(await databaseFingerprint(db)).toBe(before);

    const approver = originOf(crypto.randomUUID());
    const approved = await service.approve(owner.organizationId, change.id, approver);
    expect([approved.state, approved.approved_by]).toEqual(["running", approver.actor.id]);
    await workflow.advance(change.id);
    expect((await repo.listRouters(change.id)).map((r) => [r.routerId, r.state])).toEqual([[ids[0], "running"]]);
    expect((await rejection(service.approve(owner.organizationId, change.id, approver))).status).toBe(409);
  });

  it("pause stops new waves, resume goes on, cancel cancels what has not started; impossible moves are 409", async () => {
    const { owner, origin } = await org(3);
    const change = await service.create(owner.organizationId, origin, body());
    await workflow.advance(change.id);
    expect((await rejection(service.resume(owner.organizationId, change.id, origin))).status).toBe(409);
    expect((await service.pause(owner.organizationId, change.id, origin)).state).toBe("paused");
    expect((await rejection(service.pause(owner.organizationId, change.id, origin))).status).toBe(409);
    const [canary] = await running(change.id);
    await workflow.finishChangeRouter(canary ?? "", { state: "succeeded" });
    await workflow.advance(change.id);
    expect(await running(change.id)).toEqual([]);

    expect((await service.resume(owner.organizationId, change.id, origin)).state).toBe("running");
    await workflow.advance(change.id);
    const wave = await running(change.id);
    expect(wave).toHaveLength(2);
    await workflow.finishChangeRouter(wave[0] ?? "", { state: "succeeded" });

    const cancelled = await service.cancel(owner.organizationId, change.id, origin);
    expect(cancelled.state).toBe("cancelled");
    // The running router still reports; nothing else starts.
    await workflow.finishChangeRouter(wave[1] ?? "", { state: "succeeded" });
    await workflow.advance(change.id);
    expect((await service.get(owner.organizationId, change.id)).counts).toEqual({ succeeded: 3 });
    for (const move of [service.cancel, service.pause, service.resume, service.approve]) {
      expect((await rejection(move.call(service, owner.organizationId, change.id, origin))).status).toBe(409);
    }
  });

  it("cancel before the start marks every router cancelled", async () => {
    const { owner, origin } = await org(2);
    const change = await service.create(
      owner.organizationId,
      origin,
      body({ start_at: new Date(clock.nowMs() + 3_600_000).toISOString() }),
    );
    expect(change.state).toBe("scheduled");
    expect((await service.cancel(owner.organizationId, change.id, origin)).counts).toEqual({ cancelled: 2 });
    clock.advance(3_600_000);
    expect((await workflow.advance(change.id))?.state).toBe("cancelled");
  });

  it("another organization's change is not found by any method, and nothing changes", async () => {
    const { owner, ids, origin } = await org(1);
    const stranger = await org(0);
    const change = await service.create(owner.organizationId, origin, body({ requires_approval: true }));
    const before = await databaseFingerprint(db);
    const other = stranger.owner.organizationId;
    for (const attempt of [
      () => service.get(other, change.id),
      () => service.routers(other, change.id),
      () => service.preview(other, change.id, ids[0] ?? ""),
      () => service.approve(other, change.id, stranger.origin),
      () => service.pause(other, change.id, stranger.origin),
      () => service.resume(other, change.id, stranger.origin),
      () => service.cancel(other, change.id, stranger.origin),
      () => service.get(owner.organizationId, crypto.randomUUID()),
      () => service.get(owner.organizationId, "not-a-uuid"),
    ]) {
      expect((await rejection(attempt())).status).toBe(404);
    }
    expect(await databaseFingerprint(db)).toBe(before);
  });
});

describe("team-bound credentials", () => {
  it("target only their team's routers and see only their team's changes", async () => {
    const { owner, ids, origin } = await org(1);
    const team = crypto.randomUUID();
    await db.query(
      "insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, 'Second', false, now())",
      [team, owner.organizationId],
    );
    const mine = await makeRouter(db, { organizationId: owner.organizationId, teamId: team });
    const before = await databaseFingerprint(db);
    expect(
      (
        await rejection(
          service.create(owner.organizationId, origin, body({ routers: { router_ids: [ids[0] ?? ""] } }), team),
        )
      ).status,
    ).toBe(404);
    expect(await databaseFingerprint(db)).toBe(before);
    const change = await service.create(owner.organizationId, origin, body(), team);
    expect(change.routers.map((r) => r.router_id)).toEqual([mine.id]);
    const orgWide = await service.create(owner.organizationId, origin, body());
    expect(orgWide.routers).toHaveLength(2);
    expect((await service.list(owner.organizationId, {}, team)).data.map((c) => c.id)).toEqual([change.id]);
    expect((await rejection(service.get(owner.organizationId, orgWide.id, team))).status).toBe(404);
    expect((await rejection(service.cancel(owner.organizationId, orgWide.id, origin, team))).status).toBe(404);
  });
});

describe("preview and list", () => {
  it("renders each router's script with its values quoted; a router outside the change is 404", async () => {
    const owner = await makeUser(db);
    const hostile = await makeRouter(db, owner, {
      name: 'x";/system reboot;"',
      identity: "$[/system reset-configuration]",
    });
    const outside = await makeRouter(db, owner);
    await db.query(`update routers set user_metadata = '{"site": "a\\nb"}' where id = $1`, [hostile.id]);
    const change = await service.create(
      owner.organizationId,
      originOf(owner.userId),
      body({
        routers: { router_ids: [hostile.id] },
        script: '/system identity set name={{identity}}\n:log info "site {{metadata.site}} of {{name}}"',
      }),
    );
    const preview = await service.preview(owner.organizationId, change.id, hostile.id);
    expect(preview).toEqual({
      router_id: hostile.id,
      script:
        '/system identity set name="\\$\\5B/system reset-configuration\\5D"\n:log info "site a\\nb of x\\"\\3B/system reboot\\3B\\""',
    });
    expect((await rejection(service.preview(owner.organizationId, change.id, outside.id))).status).toBe(404);
  });

  it("lists newest first in pages; another organization sees none", async () => {
    const { owner, origin } = await org(1);
    const made = [];
    for (let i = 0; i < 3; i++) {
      made.push((await service.create(owner.organizationId, origin, body({ name: `c${i}` }))).id);
      clock.advance(1000);
    }
    const first = await service.list(owner.organizationId, { limit: 2 });
    expect(first.data.map((c) => c.id)).toEqual([made[2], made[1]]);
    const second = await service.list(owner.organizationId, { limit: 2, cursor: first.next_cursor ?? "" });
    expect([second.data.map((c) => c.id), second.next_cursor]).toEqual([[made[0]], null]);
    expect((await service.list((await makeUser(db)).organizationId, {})).data).toEqual([]);
    expect((await rejection(service.list(owner.organizationId, { cursor: "bogus" }))).status).toBe(422);
  });
});

// Issue 39 "Bad input and attackers": each case an attempt, each with what must hold.
describe("attacks on changes", () => {
  const keyOf = async (organizationId: string, createdBy: string): Promise<AuditOrigin> => {
    const { prefix, keyHash } = mintApiKey();
    const record = await storeApiKey(
      db,
      {
        organizationId,
        createdBy,
        name: "approver",
        prefix,
        keyHash,
        scopes: ["routers:read", "organizations:write"],
        createdAt: clock.now(),
        expiresAt: null,
      },
      originOf(createdBy),
    );
    if (!record) throw new Error("no key stored");
    return { actor: { type: "api_key", id: record.id }, sourceIp: null };
  };

  it("the author cannot approve through an API key of theirs, nor a key's change with their token", async () => {
    const { owner, origin } = await org(1);
    const change = await service.create(owner.organizationId, origin, body({ requires_approval: true }));
    const authorsKey = await keyOf(owner.organizationId, owner.userId);
    const before = await databaseFingerprint(db);
    expect((await rejection(service.approve(owner.organizationId, change.id, authorsKey))).status).toBe(403);
    expect(await databaseFingerprint(db)).toBe(before);

    const byKey = await service.create(owner.organizationId, authorsKey, body({ requires_approval: true }));
    expect((await rejection(service.approve(owner.organizationId, byKey.id, origin))).status).toBe(403);
    const otherPersonsKey = await keyOf(owner.organizationId, crypto.randomUUID());
    expect((await service.approve(owner.organizationId, byKey.id, otherPersonsKey)).state).toBe("running");

    // A key revoked after making a change: its api_key.created entry still names the author.
    const revokedKey = await keyOf(owner.organizationId, owner.userId);
    const byRevoked = await service.create(owner.organizationId, revokedKey, body({ requires_approval: true }));
    await db.query("delete from api_keys where id = $1", [revokedKey.actor.id]);
    expect((await rejection(service.approve(owner.organizationId, byRevoked.id, origin))).status).toBe(403);
    const other = originOf(crypto.randomUUID());
    expect((await service.approve(owner.organizationId, byRevoked.id, other)).state).toBe("running");
  });

  it("two approvals, resumes or cancels at once: exactly one wins, the other is 409", async () => {
    const { owner, origin } = await org(2);
    const change = await service.create(owner.organizationId, origin, body({ requires_approval: true }));
    const approvals = await Promise.allSettled([
      service.approve(owner.organizationId, change.id, originOf(crypto.randomUUID())),
      service.approve(owner.organizationId, change.id, originOf(crypto.randomUUID())),
    ]);
    const statuses = (results: PromiseSettledResult<unknown>[]) =>
      results.map((r) => (r.status === "fulfilled" ? 200 : (r.reason as { status: number }).status)).sort();
    expect(statuses(approvals)).toEqual([200, 409]);
    const started = await db.query("select 1 from audit_log where target_id = $1 and action = 'change.started'", [
      change.id,
    ]);
    expect(started).toHaveLength(1);
    await service.pause(owner.organizationId, change.id, origin);
    const resumes = await Promise.allSettled([
      service.resume(owner.organizationId, change.id, origin),
      service.resume(owner.organizationId, change.id, origin),
    ]);
    expect(statuses(resumes)).toEqual([200, 409]);
    const cancels = await Promise.allSettled([
      service.cancel(owner.organizationId, change.id, origin),
      service.cancel(owner.organizationId, change.id, origin),
    ]);
    expect(statuses(cancels)).toEqual([200, 409]);
  });

  it("a router's identity changed mid-wave: a started router keeps the script rendered at its dispatch", async () => {
    const { owner, ids, origin } = await org(2);
    const change = await service.create(
      owner.organizationId,
      origin,
      body({ script: ":put {{identity}}", routers: { router_ids: ids } }),
    );
    await db.query("update routers set identity = 'before' where id = any($1::uuid[])", [`{${ids.join(",")}}`]);
    await workflow.advance(change.id);
    await db.query(`update routers set identity = 'after";/system reboot' where id = any($1::uuid[])`, [
      `{${ids.join(",")}}`,
    ]);
    const [canary] = await repo.listRouters(change.id);
    expect([canary?.state, canary?.script]).toEqual(["running", ':put "before"']);
    // The preview shows the router's values now; the next wave renders them at its own dispatch.
    expect((await service.preview(owner.organizationId, change.id, ids[1] ?? "")).script).toBe(
      ':put "after\\"\\3B/system reboot"',
    );
    await workflow.finishChangeRouter(canary?.id ?? "", { state: "succeeded" });
    await workflow.advance(change.id);
    expect((await repo.listRouters(change.id))[1]?.script).toBe(':put "after\\"\\3B/system reboot"');
  });

  it("a router whose values render past the limit: preview 422 naming router_id, its step fails, nothing runs", async () => {
    const { owner, ids, origin } = await org(1);
    const change = await service.create(
      owner.organizationId,
      origin,
      body({ script: ":put {{identity}}\n".repeat(1000), routers: { router_ids: ids } }),
    );
    await db.query("update routers set identity = $2 where id = $1", [ids[0], "é".repeat(200)]);
    const error = await rejection(service.preview(owner.organizationId, change.id, ids[0] ?? ""));
    expect([error.status, Object.keys(error.fields ?? {})]).toEqual([422, ["router_id"]]);
    await workflow.advance(change.id);
    const [step] = await repo.listRouters(change.id);
    expect([step?.state, step?.output?.startsWith("script not rendered")]).toEqual(["failed", true]);
    expect(await listRouterJobs(db, { kind: ROUTER_JOB_KINDS.changeApply, routerId: ids[0] })).toHaveLength(0);
  });

  it("start_at: in the past starts at once; up to 366 days ahead is scheduled; further is 422 and writes nothing", async () => {
    const { owner, origin } = await org(1);
    const at = (ms: number) => new Date(clock.nowMs() + ms).toISOString();
    const past = await service.create(owner.organizationId, origin, body({ start_at: "2000-01-01T00:00:00Z" }));
    expect(past.state).toBe("running");
    const year = 366 * 24 * 3600 * 1000;
    expect((await service.create(owner.organizationId, origin, body({ start_at: at(year) }))).state).toBe("scheduled");
    const before = await databaseFingerprint(db);
    const error = await rejection(service.create(owner.organizationId, origin, body({ start_at: at(year + 1000) })));
    expect([error.status, Object.keys(error.fields ?? {})]).toEqual([422, ["start_at"]]);
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("a tag selector matching nothing is 422; another org's router in preview is 404", async () => {
    const { owner, ids, origin } = await org(1);
    const stranger = await org(1);
    const before = await databaseFingerprint(db);
    const none = await rejection(service.create(owner.organizationId, origin, body({ routers: { tags: ["nope"] } })));
    expect(none.status).toBe(422);
    expect(await databaseFingerprint(db)).toBe(before);
    const change = await service.create(owner.organizationId, origin, body({ routers: { router_ids: ids } }));
    for (const routerId of [stranger.ids[0] ?? "", "not-a-uuid", crypto.randomUUID()]) {
      expect((await rejection(service.preview(owner.organizationId, change.id, routerId))).status).toBe(404);
    }
  });
});

describe("hostile input refused by ZCreateChangeInput", () => {
  const fields = (input: Record<string, unknown>) => {
    const result = ZCreateChangeInput.safeParse({ name: "x", kind: "script", script: ":put 1", routers: {}, ...input });
    return result.success ? null : [...new Set(result.error.issues.map((i) => i.path.join(".")))];
  };

  it("script: the text rule (tab and newline only), placeholders where a value could leave its string", () => {
    expect(fields({ script: ":put 1\t\n:put 2" })).toBeNull();
    for (const bad of [
      ":put 1\u0000",
      ":put 1\r",
      ":put \u001b",
      ":put \ud800",
      ':put "\\{{identity}}"',
      `:put ${"$"}{{name}}`,
    ]) {
      expect(fields({ script: bad })).toEqual(["script"]);
    }
  });

  it("firmware version is a RouterOS version; start_at is a real instant", () => {
    const firmware = (version: string) =>
      fields({ kind: "firmware", script: undefined, firmware: { channel: "stable", version } });
    for (const ok of ["7.16", "7.16.2", "7.17rc3", "7.18beta2"]) expect(firmware(ok)).toBeNull();
    for (const bad of ["7", "v7.16", "7.16; /system reset", "7.16\n", "latest", "7.16.2.1"]) {
      expect(firmware(bad)).toEqual(["firmware.version"]);
    }
    expect(fields({ start_at: "2026-12-01T22:00:00Z" })).toBeNull();
    expect(fields({ start_at: "2026-12-01T22:00:00+05:30" })).toBeNull();
    for (const bad of [
      "2026-02-31T00:00:00Z",
      "2026-12-01T24:00:00Z",
      "2026-12-01T22:60:00Z",
      "0000-01-01T00:00:00Z",
      "tomorrow",
      "2026-12-01T22:00:00",
    ]) {
      expect(fields({ start_at: bad })).toEqual(["start_at"]);
    }
  });
});

describe("more hostile selectors, cursors and limits", () => {
  it("a team-bound credential naming another team, or its routers by id or tag, is 404 and writes nothing", async () => {
    const { owner, ids, origin } = await org(1);
    await db.query(`update routers set tags = '["core"]' where id = $1`, [ids[0]]);
    const team = crypto.randomUUID();
    await db.query(
      "insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, 'Bound', false, now())",
      [team, owner.organizationId],
    );
    await makeRouter(db, { organizationId: owner.organizationId, teamId: team });
    const before = await databaseFingerprint(db);
    for (const routers of [{ team_id: owner.teamId }, { router_ids: [ids[0] ?? ""] }]) {
      expect((await rejection(service.create(owner.organizationId, origin, body({ routers }), team))).status).toBe(404);
    }
    // A tag only another team's routers carry selects nothing of this team: 422, not a hint.
    const tagged = await rejection(
      service.create(owner.organizationId, origin, body({ routers: { tags: ["core"] } }), team),
    );
    expect(tagged.status).toBe(422);
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("a well-formed cursor from nowhere (far future, unknown id) pages without error", async () => {
    const { owner, origin } = await org(1);
    const made = await service.create(owner.organizationId, origin, body());
    for (const raw of [`999999999999999:${crypto.randomUUID()}`, `0:${crypto.randomUUID()}`]) {
      const cursor = Buffer.from(raw).toString("base64url");
      const page = await service.list(owner.organizationId, { cursor });
      expect(page.data.map((c) => c.id)).toEqual(raw.startsWith("0:") ? [] : [made.id]);
    }
  });

  it("selector and name limits at n and n+1", () => {
    const refused = (input: Record<string, unknown>) => {
      const result = ZCreateChangeInput.safeParse({
        name: "x",
        kind: "script",
        script: ":put 1",
        routers: {},
        ...input,
      });
      return result.success ? null : [...new Set(result.error.issues.map((i) => i.path.join(".")))];
    };
    const ids = (n: number) => Array.from({ length: n }, () => crypto.randomUUID());
    const tags = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);
    expect(refused({ routers: { router_ids: ids(CHANGE_LIMITS.selectorRouterIds) } })).toBeNull();
    expect(refused({ routers: { router_ids: ids(CHANGE_LIMITS.selectorRouterIds + 1) } })).toEqual([
      "routers.router_ids",
    ]);
    expect(refused({ routers: { tags: tags(CHANGE_LIMITS.selectorTags) } })).toBeNull();
    expect(refused({ routers: { tags: tags(CHANGE_LIMITS.selectorTags + 1) } })).toEqual(["routers.tags"]);
    expect(refused({ name: "n".repeat(CHANGE_LIMITS.name) })).toBeNull();
    expect(refused({ name: "n".repeat(CHANGE_LIMITS.name + 1) })).toEqual(["name"]);
    for (const guard of [60.5, "60", null, -60]) expect(refused({ guard_seconds: guard })).toEqual(["guard_seconds"]);
    expect(refused({ routers: { router_ids: ["a\u0000"] } })).toEqual(["routers.router_ids.0"]);
  });
});
