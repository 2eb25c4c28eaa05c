import {
  type Database,
  insertAuditEntries,
  type NewAuditEntry,
  type NewResourceFault,
  type ResourceCandidate,
  ResourceFaultsRepository,
  type ResourceStateRecord,
  SYSTEM_ORIGIN,
} from "@fleet/db";
import { type Clock, coalescingRunner, DEFAULT_HEALTH_THRESHOLDS } from "@fleet/shared";
import type { Logger } from "pino";
import { resourceLabel } from "./resource-labels.ts";

/** How often each API process offers to evaluate (one at a time across the cluster). */
export const RESOURCE_EVALUATION_MS = 5_000;

/** What one candidate becomes: its next state (null: forgotten), and a fault to open or complete. */
export interface ResourceDecision {
  state: ResourceStateRecord | null;
  open: boolean;
  complete: boolean;
  /** `router.resource` state: above (opened), below (completed), unwatched (completed by a null threshold). */
  event: "above" | "below" | "unwatched" | null;
}

/**
 * The hysteresis of docs/api.md "Health thresholds" for one router and measure at `now`: above the
 * threshold for `for_seconds` opens the fault (dated when it went above); back at or under it for
 * the same duration completes it; a dip shorter than that keeps it open, and before the fault opens
 * any dip starts the count again. No value (not reported, or the router has no pulse): unchanged.
 * A measure no longer watched completes its open fault.
 */
export const decide = (c: ResourceCandidate, now: Date): ResourceDecision => {
  const keep = { routerId: c.routerId, measure: c.measure };
  const unchanged: ResourceDecision = {
    state: { ...keep, aboveSince: c.aboveSince, belowSince: c.belowSince, faultId: c.faultId },
    open: false,
    complete: false,
    event: null,
  };
  if (!c.threshold) {
    return { state: null, open: false, complete: c.faultId !== null, event: c.faultId ? "unwatched" : null };
  }
  if (c.value === null) return unchanged;
  const forMs = c.threshold.forSeconds * 1000;
  const t = now.getTime();
  if (c.value > c.threshold.above) {
    const aboveSince = c.aboveSince ?? now;
    const open = c.faultId === null && t - aboveSince.getTime() >= forMs;
    return {
      state: { ...keep, aboveSince, belowSince: null, faultId: c.faultId },
      open,
      complete: false,
      event: open ? "above" : null,
    };
  }
  if (c.faultId === null) return { state: null, open: false, complete: false, event: null };
  const belowSince = c.belowSince ?? now;
  if (t - belowSince.getTime() >= forMs) return { state: null, open: false, complete: true, event: "below" };
  return {
    state: { ...keep, aboveSince: null, belowSince, faultId: c.faultId },
    open: false,
    complete: false,
    event: null,
  };
};

export interface EvaluateResourcesDeps {
  db: Pick<Database, "transaction">;
  clock: Clock;
}

export interface EvaluationResult {
  /** False when another process held the evaluation. */
  evaluated: boolean;
  opened: number;
  completed: number;
}

const entry = (
  c: ResourceCandidate,
  faultId: string,
  state: "above" | "below" | "unwatched",
  at: Date,
): NewAuditEntry => ({
  organizationId: c.organizationId,
  occurredAt: at,
  action: "router.resource",
  actor: SYSTEM_ORIGIN.actor,
  target: { type: "router", id: c.routerId },
  routerId: c.routerId,
  sourceIp: null,
  details: { measure: c.measure, value: c.value, threshold: c.threshold?.above ?? null, state, fault_id: faultId },
});

/**
 * One evaluation of every router's latest resources against its thresholds (docs/api.md "Health
 * thresholds"), off the heartbeat path: one read of the candidates, then a statement per kind of
 * write, in one transaction that one process at a time holds. Faults and their `router.resource`
 * audit entries (which feed webhooks and alert rules) commit together. A plain function: the
 * evaluator's timer calls it, and tests call it with a ManualClock.
 */
export const evaluateResources = async (deps: EvaluateResourcesDeps): Promise<EvaluationResult> => {
  const now = deps.clock.now();
  return deps.db.transaction(async (query) => {
    const repository = new ResourceFaultsRepository(query);
    if (!(await repository.tryLock())) return { evaluated: false, opened: 0, completed: 0 };
    const candidates = await repository.candidates(DEFAULT_HEALTH_THRESHOLDS);
    const save: ResourceStateRecord[] = [];
    const forget: Array<{ routerId: string; measure: string }> = [];
    const toOpen: Array<{ c: ResourceCandidate; fault: NewResourceFault }> = [];
    const toComplete: Array<{ c: ResourceCandidate; event: "below" | "unwatched" }> = [];
    for (const c of candidates) {
      const d = decide(c, now);
      if (d.state) save.push(d.state);
      else if (c.aboveSince !== null || c.belowSince !== null || c.faultId !== null) forget.push(c);
      if (d.open && c.threshold) {
        const { name, unit } = resourceLabel(c.measure);
        const who = c.name || c.identity || c.routerId;
        toOpen.push({
          c,
          fault: {
            routerId: c.routerId,
            measure: c.measure,
            message: `${name} above ${c.threshold.above}${unit}: ${who}`.slice(0, 400),
            createdAt: d.state?.aboveSince ?? now,
          },
        });
      }
      if (d.complete && (d.event === "below" || d.event === "unwatched")) toComplete.push({ c, event: d.event });
    }
    const entries: NewAuditEntry[] = [];
    const opened = await repository.open(toOpen.map((o) => o.fault));
    for (const fault of opened) {
      const o = toOpen.find((x) => x.c.routerId === fault.routerId && x.c.measure === fault.measure);
      const state = save.find((s) => s.routerId === fault.routerId && s.measure === fault.measure);
      if (state) state.faultId = fault.id;
      if (o && fault.opened) entries.push(entry(o.c, fault.id, "above", now));
    }
    const completed = await repository.complete(
      toComplete.flatMap((x) => (x.c.faultId ? [x.c.faultId] : [])),
      now,
    );
    for (const fault of completed) {
      const x = toComplete.find((y) => y.c.faultId === fault.id);
      if (x) entries.push(entry(x.c, fault.id, x.event, now));
    }
    await repository.save(save);
    await repository.forget(forget);
    await insertAuditEntries(query, entries);
    return { evaluated: true, opened: opened.filter((f) => f.opened).length, completed: completed.length };
  });
};

/**
 * Each API process offers an evaluation every {@link RESOURCE_EVALUATION_MS}; the advisory lock
 * lets one through at a time. A timer rather than a cron schedule: cron slots are a minute apart,
 * and a `for_seconds` of 0 (disk) should not wait a minute.
 */
export class ResourceEvaluator {
  readonly #deps: EvaluateResourcesDeps & { logger: Logger };
  readonly #runner = coalescingRunner(() => this.#pass());
  readonly #timer: NodeJS.Timeout;
  #stopped = false;

  constructor(deps: EvaluateResourcesDeps & { logger: Logger; intervalMs?: number }) {
    this.#deps = deps;
    this.#timer = setInterval(() => {
      if (!this.#stopped) void this.#runner.run();
    }, deps.intervalMs ?? RESOURCE_EVALUATION_MS);
    this.#timer.unref();
  }

  async #pass(): Promise<void> {
    try {
      await evaluateResources(this.#deps);
    } catch (error) {
      this.#deps.logger.warn({ err: error }, "resource evaluation failed; retrying at the next tick");
    }
  }

  async close(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#runner.current();
  }
}
