import {
  type AuditOrigin,
  type ChangeRecord,
  ChangesRepository,
  type ChangeWorkflow,
  type Database,
  type Query,
  queryOf,
  queueChangeAdvance,
  type JobEngine,
} from "@fleet/db";
import {
  AppError,
  CHANGE_LIMITS,
  ChangePlaceholderError,
  type Clock,
  renderChangeScript,
  type TChange,
  type TChangeListQuery,
  type TChangePage,
  type TChangePreview,
  type TChangeRouter,
  type TCreateChangeInput,
  type TCreatedChange,
} from "@fleet/shared";
import { ownSelector, storedSelector } from "../alerts/alert-rules.service.ts";
import { decodeChangeCursor, encodeChangeCursor, toChangeResponse, toChangeRouterResponse } from "./changes.mapper.ts";

export interface ChangesDeps {
  db: Pick<Database, "query" | "transaction">;
  jobs: Pick<JobEngine, "send">;
  workflow: ChangeWorkflow;
  clock: Clock;
}

/**
 * The person behind an actor: a user, or the user who made an API key (a revoked one's too, from
 * its audit entry); null when nobody can be named (its maker cannot be told apart from anyone, so
 * it approves nothing).
 */
const personOf = async (query: Query, actor: AuditOrigin["actor"], organizationId: string): Promise<string | null> => {
  if (actor.type === "user") return actor.id;
  if (actor.type !== "api_key") return null;
  return actor.id === null ? null : new ChangesRepository(query).apiKeyMaker(actor.id, organizationId);
};

/** How far ahead a change may be scheduled. */
const START_AT_MAX_AHEAD_MS = 366 * 24 * 3600 * 1000;

const notFound = () => new AppError("not_found", "Change not found.");
const conflict = (change: ChangeRecord, verb: string) =>
  new AppError("conflict", `A change that is ${change.state.replace("_", " ")} cannot be ${verb}.`, {
    extra: { state: change.state },
  });

/**
 * Fleet changes (docs/api.md "Changes"): compose, approve, pause, resume, cancel, and read results.
 * The rollout itself is the workflow's (`ChangeWorkflow`, packages/db). Every transition locks the
 * change's row first, as the dispatcher does. With `teamId` (a team-bound credential) only that
 * team's changes are seen (another's is 404) and a change it makes targets only its routers.
 */
export class ChangesService {
  readonly #d: ChangesDeps;
  constructor(deps: ChangesDeps) {
    this.#d = deps;
  }

  async create(
    organizationId: string,
    origin: AuditOrigin,
    input: TCreateChangeInput,
    teamId?: string,
  ): Promise<TCreatedChange> {
    const selector = storedSelector(input.routers);
    const now = this.#d.clock.now();
    if (input.start_at !== undefined && Date.parse(input.start_at) > now.getTime() + START_AT_MAX_AHEAD_MS) {
      throw new AppError("validation_failed", "A change can be scheduled at most a year ahead.", {
        fields: { start_at: ["must be at most 366 days ahead"] },
      });
    }
    const strategy = input.strategy ?? {};
    const { change, counts, routers } = await this.#d.db.transaction(async (query) => {
      const owned = await ownSelector(query, organizationId, selector, teamId);
      const changes = new ChangesRepository(query);
      const targets = await changes.selectRouters(organizationId, owned, teamId);
      if (targets.length === 0) {
        throw new AppError("validation_failed", "The change selects no router.", {
          fields: { routers: ["selects no router"] },
        });
      }
      const created = await this.#d.workflow.insert(
        query,
        {
          organizationId,
          teamId: teamId ?? null,
          name: input.name,
          kind: input.kind,
          script: input.kind === "script" ? (input.script ?? "") : null,
          firmwareChannel: input.kind === "firmware" ? (input.firmware?.channel ?? null) : null,
          firmwareVersion: input.kind === "firmware" ? (input.firmware?.version ?? null) : null,
          selector: owned,
          canary: strategy.canary ?? CHANGE_LIMITS.canary.default,
          waveSize: strategy.wave_size ?? CHANGE_LIMITS.waveSize.default,
          waveIntervalSeconds: strategy.wave_interval_seconds ?? CHANGE_LIMITS.waveIntervalSeconds.default,
          maxFailures: strategy.max_failures ?? CHANGE_LIMITS.maxFailures.default,
          guardSeconds: input.guard_seconds ?? CHANGE_LIMITS.guardSeconds.default,
          requiresApproval: input.requires_approval === true,
          startAt: input.start_at === undefined ? null : new Date(input.start_at),
          state: input.requires_approval === true ? "awaiting_approval" : "scheduled",
          createdBy: origin.actor,
          createdAt: now,
        },
        targets.map((t) => t.id),
        origin,
      );
      return {
        change: created,
        counts: await changes.counts(created.id),
        routers: await changes.listRouters(created.id),
      };
    });
    return { ...toChangeResponse(change, counts), routers: routers.map(toChangeRouterResponse) };
  }

  async list(organizationId: string, query: TChangeListQuery, teamId?: string): Promise<TChangePage> {
    const before = query.cursor === undefined ? undefined : decodeChangeCursor(query.cursor);
    if (before === null) {
      throw new AppError("validation_failed", "The cursor is not one this API handed out.", {
        fields: { cursor: ["must be a next_cursor from a previous page"] },
      });
    }
    const limit = query.limit ?? CHANGE_LIMITS.page.default;
    const changes = new ChangesRepository(queryOf(this.#d.db));
    const rows = await changes.list(organizationId, limit + 1, { teamId, before });
    const page = rows.slice(0, limit);
    const counts = await changes.countsOf(page.map((c) => c.id));
    const data = page.map((change) => toChangeResponse(change, counts.get(change.id) ?? {}));
    const last = page.at(-1);
    return { status: "success", data, next_cursor: rows.length > limit && last ? encodeChangeCursor(last) : null };
  }

  async get(organizationId: string, id: string, teamId?: string): Promise<TChange> {
    const changes = new ChangesRepository(queryOf(this.#d.db));
    const change = await changes.get(organizationId, id, teamId);
    if (!change) throw notFound();
    return toChangeResponse(change, await changes.counts(change.id));
  }

  async routers(organizationId: string, id: string, teamId?: string): Promise<TChangeRouter[]> {
    const changes = new ChangesRepository(queryOf(this.#d.db));
    const change = await changes.get(organizationId, id, teamId);
    if (!change) throw notFound();
    return (await changes.listRouters(change.id)).map(toChangeRouterResponse);
  }

  /** The script as one of the change's routers would run it now (its facts as they are now). */
  async preview(organizationId: string, id: string, routerId: string, teamId?: string): Promise<TChangePreview> {
    const changes = new ChangesRepository(queryOf(this.#d.db));
    const change = await changes.get(organizationId, id, teamId);
    if (!change) throw notFound();
    const target = await changes.target(change.id, routerId);
    if (!target) throw new AppError("not_found", "Router not found in this change.");
    if (change.kind !== "script") return { router_id: target.routerId, script: null };
    try {
      return {
        router_id: target.routerId,
        script: renderChangeScript(change.script ?? "", {
          identity: target.identity,
          name: target.name,
          tunnel_ip: target.tunnelIp ?? "",
          metadata: target.metadata,
        }),
      };
    } catch (error) {
      // The router's values as they are now cannot be rendered (its step would fail the same way).
      if (!(error instanceof ChangePlaceholderError)) throw error;
      throw new AppError("validation_failed", "The script cannot be rendered for this router.", {
        fields: { router_id: [error.message] },
      });
    }
  }

  /**
   * A second person lets a change waiting for approval go: a user (or key) other than its author,
   * holding `organizations:write` (checked by the procedure). The author is refused with 403.
   */
  approve(organizationId: string, id: string, origin: AuditOrigin, teamId?: string): Promise<TChange> {
    return this.#transition(organizationId, id, teamId, async (query, change) => {
      if (change.state !== "awaiting_approval") throw conflict(change, "approved");
      // People, not credentials: an API key stands for the user who made it, so an author cannot
      // approve with a key of theirs (nor with their token a change one of their keys made).
      const author = await personOf(query, change.createdBy, change.organizationId);
      const approver = await personOf(query, origin.actor, change.organizationId);
      if (author === null || approver === null || author === approver) {
        throw new AppError("forbidden", "The author of a change cannot approve it: another person must.");
      }
      const now = this.#d.clock.now();
      const approved = await new ChangesRepository(query).update(
        change.id,
        { state: "awaiting_approval", approvedBy: origin.actor.id, approvedAt: now },
        now,
      );
      await this.#d.workflow.audit(query, approved, "change.approved", origin, {});
      return this.#d.workflow.begin(query, approved, origin);
    });
  }

  /** Running or scheduled: nothing new starts (routers already running finish and report). */
  pause(organizationId: string, id: string, origin: AuditOrigin, teamId?: string): Promise<TChange> {
    return this.#transition(organizationId, id, teamId, async (query, change) => {
      if (change.state !== "running" && change.state !== "scheduled") throw conflict(change, "paused");
      const now = this.#d.clock.now();
      const paused = await new ChangesRepository(query).update(change.id, { state: "paused" }, now);
      await this.#d.workflow.audit(query, paused, "change.paused", origin, {});
      return paused;
    });
  }

  resume(organizationId: string, id: string, origin: AuditOrigin, teamId?: string): Promise<TChange> {
    return this.#transition(organizationId, id, teamId, async (query, change) => {
      if (change.state !== "paused") throw conflict(change, "resumed");
      await this.#d.workflow.audit(query, change, "change.resumed", origin, {});
      // Never started (paused while scheduled): the gate's own rules, start_at included.
      if (change.startedAt === null) return this.#d.workflow.begin(query, change, origin);
      const now = this.#d.clock.now();
      const running = await new ChangesRepository(query).update(change.id, { state: "running" }, now);
      await queueChangeAdvance(this.#d.jobs, change.id, query);
      return running;
    });
  }

  /** Before completion: routers not started are cancelled; running ones finish and report. */
  cancel(organizationId: string, id: string, origin: AuditOrigin, teamId?: string): Promise<TChange> {
    return this.#transition(organizationId, id, teamId, async (query, change) => {
      if (change.state === "completed" || change.state === "cancelled") throw conflict(change, "cancelled");
      const now = this.#d.clock.now();
      const changes = new ChangesRepository(query);
      const cancelled = await changes.update(change.id, { state: "cancelled", finishedAt: now }, now);
      const routers = await changes.cancelPending(change.id, now);
      await this.#d.workflow.audit(query, cancelled, "change.cancelled", origin, { routers_cancelled: routers });
      return cancelled;
    });
  }

  async #transition(
    organizationId: string,
    id: string,
    teamId: string | undefined,
    step: (query: Query, change: ChangeRecord) => Promise<ChangeRecord>,
  ): Promise<TChange> {
    const { change, counts } = await this.#d.db.transaction(async (query) => {
      const changes = new ChangesRepository(query);
      const locked = await changes.lock(id);
      if (!locked || locked.organizationId !== organizationId || (teamId !== undefined && locked.teamId !== teamId)) {
        throw notFound();
      }
      const next = await step(query, locked);
      return { change: next, counts: await changes.counts(next.id) };
    });
    return toChangeResponse(change, counts);
  }
}
