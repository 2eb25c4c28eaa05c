import { type Clock, renderChangeScript, ROUTER_JOB_KINDS } from "@fleet/shared";
import { type Database, type Query, queryOf } from "../database.ts";
import type { JobEngine, JobQueueDefinition } from "../jobs/job-engine.ts";
import { queueRouterJobs } from "../jobs/router-jobs.ts";
import { type AuditOrigin, insertAuditEntry, SYSTEM_ORIGIN } from "../repositories/audit-log.repository.ts";
import {
  type ChangeRecord,
  type ChangeRouterRecord,
  ChangesRepository,
  type ChangeWaveRecord,
  type NewChange,
} from "../repositories/changes.repository.ts";

/**
 * The dispatcher's queue (docs/api.md "Changes"): one `{change_id}` job per step of a change, sent
 * in the transaction that makes the step possible (a start, a router's result, a resume) or delayed
 * until the change's `start_at` or its next wave's time. Steps of one change are serialized by the
 * change's row lock, so a duplicate job is harmless: it finds nothing to do.
 */
export const CHANGE_ADVANCE_QUEUE = "change.advance";

export const changeAdvanceQueue = (): JobQueueDefinition => ({
  name: CHANGE_ADVANCE_QUEUE,
  retryLimit: 20,
  retryDelaySeconds: 1,
  retryBackoff: true,
  retryDelayMaxSeconds: 60,
  expireInSeconds: 120,
  deleteAfterSeconds: 24 * 3600,
  // A change may be scheduled months ahead: its delayed step must not be dropped unstarted.
  retentionSeconds: 400 * 24 * 3600,
});

/** Changes one sweep re-queues at most (the rest wait for the next minute). */
export const CHANGE_SWEEP_BATCH = 1000;

/** The result an executor reports for one router (docs/api.md "Changes"). */
export type TChangeRouterResult = "succeeded" | "failed" | "reverted" | "skipped_offline";

/** Characters of a router's output copied into its audit entry (the whole output stays on its row). */
export const CHANGE_AUDIT_OUTPUT_CHARS = 1000;

/** Characters of a router's output kept on its row. */
export const CHANGE_OUTPUT_CHARS = 64 * 1024;

/**
 * A router's output as PostgreSQL can hold it (text and jsonb refuse NUL, UTF-8 has no lone
 * surrogate): both become U+FFFD, and the cut at {@link CHANGE_OUTPUT_CHARS} never halves a pair.
 * Without it one hostile byte from a router failed its report forever.
 */
const storableOutput = (output: string): string => {
  let cut = output.slice(0, CHANGE_OUTPUT_CHARS);
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return cut.toWellFormed().replaceAll("\u0000", "\uFFFD");
};

/** A router's output as its audit entry holds it: cut at {@link CHANGE_AUDIT_OUTPUT_CHARS}, a halved pair made U+FFFD. */
const auditOutput = (output: string): string => output.slice(0, CHANGE_AUDIT_OUTPUT_CHARS).toWellFormed();

type Sender = Pick<JobEngine, "send">;

/** Queues the change's next dispatcher step in the caller's transaction, now or at `at`. */
export const queueChangeAdvance = (engine: Sender, changeId: string, query: Query, at?: Date) =>
  engine.send(
    CHANGE_ADVANCE_QUEUE,
    { change_id: changeId },
    { executor: query, group: changeId, ...(at ? { startAfter: at } : {}) },
  );

/**
 * Waves in dispatch order: the first `canary` routers are wave 0, then waves of `waveSize` (1, 2, ...).
 */
export const assignWaves = (
  routerIds: readonly string[],
  canary: number,
  waveSize: number,
): Array<{ routerId: string; wave: number; position: number }> =>
  routerIds.map((routerId, position) => ({
    routerId,
    position,
    wave: position < canary ? 0 : 1 + Math.floor((position - canary) / waveSize),
  }));

/** A router step as its executor reads it: the row, its change, the router's tunnel address and host key pin. */
export interface ChangeStep {
  step: ChangeRouterRecord;
  change: ChangeRecord;
  tunnelIp: string | null;
  hostKey: string | null;
}

/**
 * The state machine of a fleet change that runs without a person: starting, the wave dispatcher
 * and the routers' results. It opens the transactions (the change's row is locked first, then its
 * routers: the one lock order); `ChangesRepository` holds the SQL. The API's transitions (approve,
 * pause, resume, cancel) lock the same row and call `begin` and `queueChangeAdvance`.
 */
export class ChangeWorkflow {
  readonly #db: Pick<Database, "query" | "transaction">;
  readonly #engine: JobEngine;
  readonly #clock: Clock;

  constructor(db: Pick<Database, "query" | "transaction">, engine: JobEngine, clock: Clock) {
    this.#db = db;
    this.#engine = engine;
    this.#clock = clock;
  }

  /**
   * Stores a new change and its routers (in the order given, waves assigned) with `change.created`;
   * one that needs no approval leaves the gate at once (`begin`). The caller has checked the input.
   */
  create(input: NewChange, routerIds: readonly string[], origin: AuditOrigin): Promise<ChangeRecord> {
    return this.#db.transaction((query) => this.insert(query, input, routerIds, origin));
  }

  /** `create` in the caller's transaction (the API checks the routers in the same one). */
  async insert(
    query: Query,
    input: NewChange,
    routerIds: readonly string[],
    origin: AuditOrigin,
  ): Promise<ChangeRecord> {
    const changes = new ChangesRepository(query);
    const created = await changes.insert(input);
    await changes.insertRouters(created.id, assignWaves(routerIds, input.canary, input.waveSize));
    await this.audit(query, created, "change.created", origin, {
      kind: created.kind,
      routers: routerIds.length,
      requires_approval: created.requiresApproval,
    });
    return created.state === "awaiting_approval" ? created : this.begin(query, created, origin);
  }

  /**
   * An approved (or approval-free) change leaves the gate: `scheduled` until its `start_at`, else
   * `running` at once (`change.started`); the dispatcher's first step is queued either way.
   */
  async begin(query: Query, change: ChangeRecord, origin: AuditOrigin): Promise<ChangeRecord> {
    const now = this.#clock.now();
    const changes = new ChangesRepository(query);
    if (change.startAt && change.startAt > now) {
      const scheduled = await changes.update(change.id, { state: "scheduled" }, now);
      await queueChangeAdvance(this.#engine, change.id, query, change.startAt);
      return scheduled;
    }
    const running = await changes.update(change.id, { state: "running", startedAt: now }, now);
    await this.audit(query, running, "change.started", origin, {});
    await queueChangeAdvance(this.#engine, change.id, query);
    return running;
  }

  /** One step of the dispatcher (the `change.advance` job): starts what is due, or queues the next look. */
  advance(changeId: string): Promise<ChangeRecord | null> {
    return this.#db.transaction(async (query) => {
      const changes = new ChangesRepository(query);
      let change = await changes.lock(changeId);
      if (!change) return null;
      const now = this.#clock.now();
      if (change.state === "scheduled") {
        if (change.startAt && change.startAt > now) {
          await queueChangeAdvance(this.#engine, change.id, query, change.startAt);
          return change;
        }
        change = await changes.update(change.id, { state: "running", startedAt: now }, now);
        await this.audit(query, change, "change.started", SYSTEM_ORIGIN, {});
      }
      if (change.state !== "running") return change;
      return this.#advanceRunning(query, change, now);
    });
  }

  /**
   * Starts what is due of a running change whose row the caller has locked: the next wave once
   * every earlier router has its result and the interval has passed, or a look queued for then.
   * `waves`: the change's wave counts when the caller has just read them.
   */
  async #advanceRunning(
    query: Query,
    change: ChangeRecord,
    now: Date,
    read?: ChangeWaveRecord[],
  ): Promise<ChangeRecord> {
    const changes = new ChangesRepository(query);
    let waves = read;
    for (;;) {
      waves ??= await changes.waves(change.id);
      const settled = await this.#settle(query, change, waves, now);
      if (settled.state !== "running") return settled;
      const current = waves.find((w) => w.pending > 0);
      if (!current) return change;
      const earlier = waves.filter((w) => w.wave < current.wave);
      // A wave starts when every earlier router has its result and the interval since the last one has passed.
      if (earlier.some((w) => w.running > 0)) return change;
      const last = earlier
        .map((w) => w.lastFinishedAt?.getTime() ?? 0)
        .reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY);
      if (earlier.length > 0 && Number.isFinite(last)) {
        const due = new Date(last + change.waveIntervalSeconds * 1000);
        if (due > now) {
          await queueChangeAdvance(this.#engine, change.id, query, due);
          return change;
        }
      }
      const started = await this.#dispatch(query, change, current.wave, now);
      if (started > 0) return change;
      waves = undefined;
    }
  }

  /**
   * The safety net of the durable dispatcher (a scheduled task, each minute): queues a step for
   * every change that is running or due, so a change whose step job was lost still moves on. A
   * duplicate step finds nothing to do.
   */
  sweep(): Promise<number> {
    return this.#db.transaction(async (query) => {
      const ids = await new ChangesRepository(query).dueIds(this.#clock.now(), CHANGE_SWEEP_BATCH);
      for (const id of ids) await queueChangeAdvance(this.#engine, id, query);
      return ids.length;
    });
  }

  /**
   * Records one router's result (the agent's executor, once per router step): its state, output and
   * timings with the audit entry `change.router.<state>`, and the change's next step (a halt past
   * `max_failures`, the completion, the next wave or its delayed look): a failure in the same
   * transaction, a success right after its own (`#finishSucceeded`). A repeated report of a router
   * that already has its result changes nothing and returns null.
   */
  async finishChangeRouter(
    id: string,
    result: { state: TChangeRouterResult; output?: string | null },
  ): Promise<ChangeRouterRecord | null> {
    if (result.state === "succeeded") {
      const finished = await this.#finishSucceeded(id, result.output ?? null);
      if (finished) return finished;
    }
    return this.#finishLocked(id, result);
  }

  /**
   * A success, the usual result: recorded with its audit entry in one statement that locks no
   * change (issue 39: a wave's results no longer queue behind the change's row), then a look at
   * its wave after the commit. A success decides something only when no router of its wave still
   * runs, or one of them failed; only then is the change locked and settled. Each result looks
   * after its own commit, so the last of a wave sees all the others (several may: the locked
   * settle finds nothing left to do). An agent killed between the two leaves the next wave to the
   * minute's sweep. Null when the fast way does not apply (the router has ended, or its stored
   * output needs the audit's cut): the caller takes the locked way.
   */
  async #finishSucceeded(id: string, output: string | null): Promise<ChangeRouterRecord | null> {
    const changes = new ChangesRepository(queryOf(this.#db));
    const stored = output === null ? null : storableOutput(output);
    const finished = await changes.finishSucceeded(
      id,
      stored,
      stored === null ? null : auditOutput(stored),
      // Bytes bound UTF-16 units from above: an output this short needs no cut.
      CHANGE_AUDIT_OUTPUT_CHARS,
      this.#clock.now(),
    );
    if (!finished) return null;
    const tally = await changes.waveTally(finished.changeId, finished.wave);
    const open = tally?.state === "running" || tally?.state === "paused";
    if (open && !(tally.running > 0 && tally.failed === 0)) {
      await this.#db.transaction(async (query) => {
        const locked = await new ChangesRepository(query).lock(finished.changeId);
        if (locked) await this.#afterResult(query, locked, this.#clock.now());
      });
    }
    return finished;
  }

  /** What a result of a running or paused change decides, its row locked: a halt, the completion, the next wave. */
  async #afterResult(query: Query, change: ChangeRecord, now: Date): Promise<void> {
    if (change.state !== "running" && change.state !== "paused") return;
    const waves = await new ChangesRepository(query).waves(change.id);
    const settled = await this.#settle(query, change, waves, now);
    // Only the last result of a wave can start the next one, and it does so here, in the same
    // transaction: no dispatcher job between the waves (issue 39). A delayed wave queues its look.
    if (settled.state === "running" && waves.every((w) => w.running === 0)) {
      await this.#advanceRunning(query, settled, now, waves);
    }
  }

  /** Any result, the change's row locked first: the result, its audit entry and what it decides in one transaction. */
  #finishLocked(
    id: string,
    result: { state: TChangeRouterResult; output?: string | null },
  ): Promise<ChangeRouterRecord | null> {
    return this.#db.transaction(async (query) => {
      const changes = new ChangesRepository(query);
      // The step's change locked in one statement: the results that take this way wait for each other.
      const change = await changes.lockOfRouterStep(id);
      if (!change) return null;
      const now = this.#clock.now();
      const output = result.output === undefined || result.output === null ? null : storableOutput(result.output);
      const finished = await changes.finishRouter(id, result.state, output, now);
      if (!finished) return null;
      await this.#auditRouter(query, change, finished);
      // A success while others of its wave still run and none of them failed decides nothing: the
      // failures are as they were when the wave started (within the budget) and no wave can start
      // yet. Only then is the change's whole tally skipped (issue 39: not O(routers) per result).
      const decidesNothing =
        finished.state === "succeeded" && finished.waveOthers.running > 0 && finished.waveOthers.failed === 0;
      if (!decidesNothing) await this.#afterResult(query, change, now);
      return finished;
    });
  }

  /**
   * The executor's resumable step of a running router (backup, guard, script, confirm, reboot), with
   * the script's output once it ran; false when not running.
   */
  setChangeRouterPhase(id: string, phase: string | null, output?: string): Promise<boolean> {
    return new ChangesRepository(queryOf(this.#db)).setPhase(id, phase, output);
  }

  /** A router step, its change, its router's tunnel address and host key pin (one read); null for an unknown id. */
  step(id: string): Promise<ChangeStep | null> {
    return new ChangesRepository(queryOf(this.#db)).routerStepOfChange(id);
  }

  /** Halts a change past its failure budget, completes one whose routers all have a result. */
  async #settle(query: Query, change: ChangeRecord, waves: readonly ChangeWaveRecord[], now: Date) {
    const changes = new ChangesRepository(query);
    const failures = waves.reduce((sum, w) => sum + w.failed, 0);
    if (failures > change.maxFailures) {
      const halted = await changes.update(change.id, { state: "halted", finishedAt: now }, now);
      await this.audit(query, halted, "change.halted", SYSTEM_ORIGIN, { failures, max_failures: change.maxFailures });
      return halted;
    }
    if (change.state === "running" && waves.every((w) => w.pending === 0 && w.running === 0)) {
      const completed = await changes.update(change.id, { state: "completed", finishedAt: now }, now);
      await this.audit(query, completed, "change.completed", SYSTEM_ORIGIN, { failures });
      return completed;
    }
    return change;
  }

  /** Starts one wave: offline routers are skipped without a job, the others get their script and a router job. */
  async #dispatch(query: Query, change: ChangeRecord, wave: number, now: Date): Promise<number> {
    const changes = new ChangesRepository(query);
    const started: { id: string; routerId: string; script: string | null }[] = [];
    for (const target of await changes.pendingTargets(change.id, wave)) {
      if (!target.hasPulse) {
        const skipped = await changes.finishRouter(target.id, "skipped_offline", null, now);
        if (skipped) await this.#auditRouter(query, change, skipped);
        continue;
      }
      let script: string | null = null;
      if (change.kind === "script") {
        try {
          script = renderChangeScript(change.script ?? "", {
            identity: target.identity,
            name: target.name,
            tunnel_ip: target.tunnelIp ?? "",
            metadata: target.metadata,
          });
        } catch (error) {
          // A value RouterOS cannot hold (checked at create time for the template; values change since).
          const message = error instanceof Error ? error.message : "render failed";
          const failed = await changes.finishRouter(target.id, "failed", `script not rendered: ${message}`, now);
          if (failed) await this.#auditRouter(query, change, failed);
          continue;
        }
      }
      started.push({ id: target.id, routerId: target.routerId, script });
    }
    // The wave's routers and their jobs in two statements, not two per router (issue 39).
    await changes.startRouters(started, now);
    await queueRouterJobs(
      this.#engine,
      started.map((s) => ({ kind: ROUTER_JOB_KINDS.changeApply, router_id: s.routerId, change_router_id: s.id })),
      query,
    );
    return started.length;
  }

  /** Writes a change-level audit entry (`change.<verb>`) in the caller's transaction. */
  audit(
    query: Query,
    change: ChangeRecord,
    action: string,
    origin: AuditOrigin,
    details: Record<string, unknown>,
  ): Promise<void> {
    return insertAuditEntry(query, {
      organizationId: change.organizationId,
      occurredAt: this.#clock.now(),
      action,
      actor: origin.actor,
      sourceIp: origin.sourceIp,
      target: { type: "change", id: change.id },
      teamId: change.teamId,
      details: { change_id: change.id, name: change.name, state: change.state, ...details },
    });
  }

  #auditRouter(query: Query, change: ChangeRecord, step: ChangeRouterRecord): Promise<void> {
    return insertAuditEntry(query, {
      organizationId: change.organizationId,
      occurredAt: this.#clock.now(),
      action: `change.router.${step.state}`,
      actor: SYSTEM_ORIGIN.actor,
      target: { type: "change", id: change.id },
      routerId: step.routerId,
      teamId: change.teamId,
      details: {
        change_id: change.id,
        name: change.name,
        wave: step.wave,
        output: step.output === null ? null : auditOutput(step.output),
      },
    });
  }
}
