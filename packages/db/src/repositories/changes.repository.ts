import { isUuid } from "@fleet/shared";
import { type ExpressionBuilder, sql } from "kysely";
import type { Query, Row, Schema } from "../database.ts";
import { type AuditActor, changeRouterAuditInsert } from "./audit-log.repository.ts";
import { plainArray, textArray } from "./pg-arrays.ts";
import { toDate, toNumber } from "./sql-values.ts";

/** docs/api.md "Changes": where a change stands. */
export type TChangeState =
  | "awaiting_approval"
  | "scheduled"
  | "running"
  | "paused"
  | "halted"
  | "completed"
  | "cancelled";

/** Where one router of a change stands; the last five are final. */
export type TChangeRouterState =
  | "pending"
  | "running"
  | "succeeded"
  | "failed"
  | "reverted"
  | "skipped_offline"
  | "cancelled";

export const CHANGE_ROUTER_FINAL_STATES: readonly TChangeRouterState[] = [
  "succeeded",
  "failed",
  "reverted",
  "skipped_offline",
  "cancelled",
];

export interface ChangeSelectorRecord {
  router_ids?: string[];
  tags?: string[];
  team_id?: string;
}

export interface ChangeRecord {
  id: string;
  organizationId: string;
  teamId: string | null;
  name: string;
  kind: "script" | "firmware";
  script: string | null;
  firmwareChannel: string | null;
  firmwareVersion: string | null;
  selector: ChangeSelectorRecord;
  canary: number;
  waveSize: number;
  waveIntervalSeconds: number;
  maxFailures: number;
  guardSeconds: number;
  requiresApproval: boolean;
  startAt: Date | null;
  state: TChangeState;
  createdBy: AuditActor;
  approvedBy: string | null;
  approvedAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export type NewChange = Omit<
  ChangeRecord,
  "id" | "approvedBy" | "approvedAt" | "startedAt" | "finishedAt" | "updatedAt"
>;

export interface ChangeRouterRecord {
  id: string;
  changeId: string;
  routerId: string;
  wave: number;
  position: number;
  state: TChangeRouterState;
  phase: string | null;
  script: string | null;
  output: string | null;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A router of a change's wave with what its dispatch needs: facts for the placeholders, liveness. */
export interface ChangeTargetRecord extends ChangeRouterRecord {
  identity: string;
  name: string;
  tunnelIp: string | null;
  metadata: Record<string, unknown>;
  hasPulse: boolean;
}

/** One wave's progress. */
export interface ChangeWaveRecord {
  wave: number;
  pending: number;
  running: number;
  final: number;
  failed: number;
  startedAt: Date | null;
  lastFinishedAt: Date | null;
}

/** jsonb as the driver hands it: parsed already, or its text (computed columns are not converted). */
const json = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;
const dateOrNull = (value: unknown): Date | null => (value === null || value === undefined ? null : toDate(value));

/** A cursor's time as epoch ms: a Date's ISO text past year 9999 is no timestamp PostgreSQL reads. */
const instant = (at: Date) => sql<Date>`to_timestamp(${at.getTime()}::float8 / 1000.0)`;

/** A uuid[] parameter: one bound value for any number of ids. */
const uuids = (ids: readonly string[]) => sql<string[]>`${textArray(ids)}::uuid[]`;

const CHANGE_COLUMNS = [
  "id",
  "organization_id",
  "team_id",
  "name",
  "kind",
  "script",
  "firmware_channel",
  "firmware_version",
  "selector",
  "canary",
  "wave_size",
  "wave_interval_seconds",
  "max_failures",
  "guard_seconds",
  "requires_approval",
  "start_at",
  "state",
  "created_by_type",
  "created_by",
  "approved_by",
  "approved_at",
  "started_at",
  "finished_at",
  "created_at",
  "updated_at",
] as const;

const ROUTER_COLUMNS = [
  "id",
  "change_id",
  "router_id",
  "wave",
  "position",
  "state",
  "phase",
  "script",
  "output",
  "started_at",
  "finished_at",
] as const;

const changeFromRow = (row: Row<"changes">): ChangeRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  teamId: row.team_id,
  name: row.name,
  kind: row.kind as ChangeRecord["kind"],
  script: row.script,
  firmwareChannel: row.firmware_channel,
  firmwareVersion: row.firmware_version,
  selector: json<ChangeSelectorRecord>(row.selector) ?? {},
  canary: row.canary,
  waveSize: row.wave_size,
  waveIntervalSeconds: row.wave_interval_seconds,
  maxFailures: row.max_failures,
  guardSeconds: row.guard_seconds,
  requiresApproval: row.requires_approval,
  startAt: row.start_at,
  state: row.state as TChangeState,
  createdBy: { type: row.created_by_type as AuditActor["type"], id: row.created_by },
  approvedBy: row.approved_by,
  approvedAt: row.approved_at,
  startedAt: row.started_at,
  finishedAt: row.finished_at,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const routerFromRow = (row: Pick<Row<"change_routers">, (typeof ROUTER_COLUMNS)[number]>): ChangeRouterRecord => ({
  id: row.id,
  changeId: row.change_id,
  routerId: row.router_id,
  wave: row.wave,
  position: row.position,
  state: row.state as TChangeRouterState,
  phase: row.phase,
  script: row.script,
  output: row.output,
  startedAt: row.started_at,
  finishedAt: row.finished_at,
});

/** A router row of a raw statement (timestamps as the driver hands them). */
const rawRouterFromRow = (row: Record<(typeof ROUTER_COLUMNS)[number], unknown>): ChangeRouterRecord => ({
  id: row.id as string,
  changeId: row.change_id as string,
  routerId: row.router_id as string,
  wave: toNumber(row.wave),
  position: toNumber(row.position),
  state: row.state as TChangeRouterState,
  phase: row.phase as string | null,
  script: row.script as string | null,
  output: row.output as string | null,
  startedAt: dateOrNull(row.started_at),
  finishedAt: dateOrNull(row.finished_at),
});

/** The change's timestamps: its `*_at` columns. */
const CHANGE_DATE_COLUMNS = CHANGE_COLUMNS.filter((column) => column.endsWith("_at"));

/** A change row of a raw statement (timestamps as the driver hands them, jsonb parsed or not). */
const rawChangeFromRow = (row: Record<string, unknown>): ChangeRecord =>
  changeFromRow({
    ...row,
    ...Object.fromEntries(CHANGE_DATE_COLUMNS.map((column) => [column, dateOrNull(row[column])])),
  } as Row<"changes">);

const STEP_OF_CHANGE_SQL = `select ${ROUTER_COLUMNS.map((column) => `cr.${column}`).join(", ")},
    ${CHANGE_COLUMNS.map((column) => `c.${column} as c_${column}`).join(", ")}, r.tunnel_ip, k.fingerprint
  from change_routers cr join changes c on c.id = cr.change_id
    left join routers r on r.id = cr.router_id left join ssh_host_keys k on k.router_id = r.id
  where cr.id = $1`;

/** A change's routers with their routers' facts and liveness (a dispatch's or a preview's look). */
const selectTargets = (query: Query, changeId: string) =>
  query.kysely
    .selectFrom("change_routers as cr")
    .innerJoin("routers as r", "r.id", "cr.router_id")
    .leftJoin("router_liveness as l", "l.router_id", "cr.router_id")
    .select((eb) => [
      ...ROUTER_COLUMNS.map((column) => `cr.${column}` as const),
      "r.identity",
      "r.name",
      "r.tunnel_ip",
      sql<Record<string, unknown>>`${eb.ref("r.reported_metadata")} || ${eb.ref("r.user_metadata")}`.as("metadata"),
      eb.fn.coalesce("l.has_pulse", eb.lit(false)).as("has_pulse"),
    ])
    .where("cr.change_id", "=", changeId);

type TargetRow = Awaited<ReturnType<ReturnType<typeof selectTargets>["executeTakeFirstOrThrow"]>>;

const targetFromRow = (row: TargetRow): ChangeTargetRecord => ({
  ...routerFromRow(row),
  identity: row.identity,
  name: row.name,
  tunnelIp: row.tunnel_ip,
  metadata: json<Record<string, unknown>>(row.metadata) ?? {},
  hasPulse: row.has_pulse === true,
});

/** `changes` and `change_routers`: reads and writes only (decisions are the workflow's and the service's). */
export class ChangesRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async insert(input: NewChange): Promise<ChangeRecord> {
    const row = await this.#query.kysely
      .insertInto("changes")
      .values({
        id: sql<string>`gen_random_uuid()`,
        organization_id: input.organizationId,
        team_id: input.teamId,
        name: input.name,
        kind: input.kind,
        script: input.script,
        firmware_channel: input.firmwareChannel,
        firmware_version: input.firmwareVersion,
        selector: { ...input.selector },
        canary: input.canary,
        wave_size: input.waveSize,
        wave_interval_seconds: input.waveIntervalSeconds,
        max_failures: input.maxFailures,
        guard_seconds: input.guardSeconds,
        requires_approval: input.requiresApproval,
        start_at: input.startAt,
        state: input.state,
        created_by_type: input.createdBy.type,
        created_by: input.createdBy.id,
        created_at: input.createdAt,
        updated_at: input.createdAt,
      })
      .returning(CHANGE_COLUMNS)
      .executeTakeFirstOrThrow();
    return changeFromRow(row);
  }

  /** The change's routers in dispatch order (arrays through unnest: one statement for any fleet). */
  async insertRouters(changeId: string, routers: ReadonlyArray<{ routerId: string; wave: number; position: number }>) {
    if (routers.length === 0) return;
    // Raw: one statement text for any fleet, its columns as arrays through unnest.
    await sql`
      insert into change_routers (id, change_id, router_id, wave, position, state)
      select gen_random_uuid(), ${changeId}, v.router_id, v.wave, v.position, 'pending'
      from unnest(${textArray(routers.map((r) => r.routerId))}::uuid[], ${plainArray(routers.map((r) => r.wave))}::int[],
        ${plainArray(routers.map((r) => r.position))}::int[]) as v(router_id, wave, position)`.execute(
      this.#query.kysely,
    );
  }

  /** With `teamId` (a team-bound credential): only that team's changes. */
  async get(organizationId: string, id: string, teamId?: string): Promise<ChangeRecord | null> {
    if (!isUuid(id)) return null;
    const row = await this.#query.kysely
      .selectFrom("changes")
      .select(CHANGE_COLUMNS)
      .where("id", "=", id)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .executeTakeFirst();
    return row ? changeFromRow(row) : null;
  }

  /** A change by id whatever its organization (the agent's look from a router step). */
  async find(id: string): Promise<ChangeRecord | null> {
    if (!isUuid(id)) return null;
    const row = await this.#query.kysely
      .selectFrom("changes")
      .select(CHANGE_COLUMNS)
      .where("id", "=", id)
      .executeTakeFirst();
    return row ? changeFromRow(row) : null;
  }

  /** Changes the dispatcher should look at now: running ones and scheduled ones whose time has come. */
  async dueIds(now: Date, limit: number): Promise<string[]> {
    const rows = await this.#query.kysely
      .selectFrom("changes")
      .select("id")
      .where((eb) =>
        eb.or([
          eb("state", "=", "running"),
          eb.and([eb("state", "=", "scheduled"), eb.or([eb("start_at", "is", null), eb("start_at", "<=", now)])]),
        ]),
      )
      .orderBy("updated_at")
      .limit(limit)
      .execute();
    return rows.map((row) => row.id);
  }

  /** The change, its row locked until the transaction ends: the one order of every change writer (change, then its routers). */
  async lock(id: string): Promise<ChangeRecord | null> {
    if (!isUuid(id)) return null;
    const row = await this.#query.kysely
      .selectFrom("changes")
      .select(CHANGE_COLUMNS)
      .where("id", "=", id)
      .forUpdate()
      .executeTakeFirst();
    return row ? changeFromRow(row) : null;
  }

  /** Newest first; `before` is the previous page's last change. */
  async list(
    organizationId: string,
    limit: number,
    options: { teamId?: string | undefined; before?: { createdAt: Date; id: string } | undefined } = {},
  ): Promise<ChangeRecord[]> {
    const { teamId, before } = options;
    const rows = await this.#query.kysely
      .selectFrom("changes")
      .select(CHANGE_COLUMNS)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .$if(before !== undefined, (qb) =>
        qb.where((eb) =>
          eb(
            eb.refTuple("created_at", "id"),
            "<",
            eb.tuple(instant(before?.createdAt ?? new Date(0)), before?.id ?? ""),
          ),
        ),
      )
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    return rows.map(changeFromRow);
  }

  async update(
    id: string,
    patch: {
      state: TChangeState;
      approvedBy?: string | null;
      approvedAt?: Date | null;
      startedAt?: Date | null;
      finishedAt?: Date | null;
    },
    now: Date,
  ): Promise<ChangeRecord> {
    const row = await this.#query.kysely
      .updateTable("changes")
      .set({
        state: patch.state,
        // An approval sets both its maker and its time (a missing time clears it).
        ...(patch.approvedBy !== undefined && { approved_by: patch.approvedBy, approved_at: patch.approvedAt ?? null }),
        ...(patch.startedAt !== undefined && { started_at: patch.startedAt }),
        ...(patch.finishedAt !== undefined && { finished_at: patch.finishedAt }),
        updated_at: now,
      })
      .where("id", "=", id)
      .returning(CHANGE_COLUMNS)
      .executeTakeFirst();
    if (!row) throw new Error(`change ${id} not found`);
    return changeFromRow(row);
  }

  /** Routers per state (`{"pending": 3, ...}`); states without a router are absent. */
  async counts(changeId: string): Promise<Record<string, number>> {
    const rows = await this.#query.kysely
      .selectFrom("change_routers")
      .select((eb) => ["state", eb.fn.countAll().as("n")])
      .where("change_id", "=", changeId)
      .groupBy("state")
      .execute();
    return Object.fromEntries(rows.map((row) => [row.state, toNumber(row.n)]));
  }

  /** `counts` of many changes in one statement (a page of the list). */
  async countsOf(changeIds: readonly string[]): Promise<Map<string, Record<string, number>>> {
    const out = new Map<string, Record<string, number>>(changeIds.map((id) => [id, {}]));
    if (changeIds.length === 0) return out;
    const rows = await this.#query.kysely
      .selectFrom("change_routers")
      .select((eb) => ["change_id", "state", eb.fn.countAll().as("n")])
      .where((eb) => eb("change_id", "=", eb.fn.any(uuids(changeIds))))
      .groupBy(["change_id", "state"])
      .execute();
    for (const row of rows) {
      const counts = out.get(row.change_id);
      if (counts) counts[row.state] = toNumber(row.n);
    }
    return out;
  }

  async listRouters(changeId: string): Promise<ChangeRouterRecord[]> {
    const rows = await this.#query.kysely
      .selectFrom("change_routers")
      .select(ROUTER_COLUMNS)
      .where("change_id", "=", changeId)
      .orderBy("wave")
      .orderBy("position")
      .execute();
    return rows.map(routerFromRow);
  }

  async findRouter(changeId: string, routerId: string): Promise<ChangeRouterRecord | null> {
    if (!isUuid(routerId)) return null;
    const row = await this.#query.kysely
      .selectFrom("change_routers")
      .select(ROUTER_COLUMNS)
      .where("change_id", "=", changeId)
      .where("router_id", "=", routerId)
      .executeTakeFirst();
    return row ? routerFromRow(row) : null;
  }

  /**
   * One router step with its change, the router's tunnel address (null once the router is gone)
   * and its SSH host key pin (null before the first login), in one read: the agent's look at the
   * start of each job.
   */
  async routerStepOfChange(id: string): Promise<{
    step: ChangeRouterRecord;
    change: ChangeRecord;
    tunnelIp: string | null;
    hostKey: string | null;
  } | null> {
    if (!isUuid(id)) return null;
    // Raw: the agent's read at the start of every job, its text fixed (no builder, no plugin pass).
    const [row] = await this.#query<Record<string, unknown>>(STEP_OF_CHANGE_SQL, [id]);
    if (!row) return null;
    const change = Object.fromEntries(CHANGE_COLUMNS.map((column) => [column, row[`c_${column}`]]));
    return {
      step: rawRouterFromRow(row as Record<(typeof ROUTER_COLUMNS)[number], unknown>),
      change: rawChangeFromRow(change),
      tunnelIp: (row.tunnel_ip as string | null) ?? null,
      hostKey: (row.fingerprint as string | null) ?? null,
    };
  }

  /** The change of a router step, its row locked as {@link lock} does; null for an unknown step. */
  async lockOfRouterStep(id: string): Promise<ChangeRecord | null> {
    if (!isUuid(id)) return null;
    const row = await this.#query.kysely
      .selectFrom("changes")
      .select(CHANGE_COLUMNS)
      .where("id", "=", (eb) => eb.selectFrom("change_routers").select("change_id").where("id", "=", id))
      .forUpdate()
      .executeTakeFirst();
    return row ? changeFromRow(row) : null;
  }

  /** Per wave: how many routers wait, run and are done, and when the wave started and last finished. */
  async waves(changeId: string): Promise<ChangeWaveRecord[]> {
    const rows = await this.#query.kysely
      .selectFrom("change_routers")
      .select((eb) => [
        "wave",
        eb.fn.countAll().filterWhere("state", "=", "pending").as("pending"),
        eb.fn.countAll().filterWhere("state", "=", "running").as("running"),
        eb.fn
          .countAll()
          .filterWhere("state", "in", [...CHANGE_ROUTER_FINAL_STATES])
          .as("final"),
        eb.fn.countAll().filterWhere("state", "in", ["failed", "reverted"]).as("failed"),
        eb.fn.min("started_at").as("first_started_at"),
        eb.fn.max("finished_at").as("last_finished_at"),
      ])
      .where("change_id", "=", changeId)
      .groupBy("wave")
      .orderBy("wave")
      .execute();
    return rows.map((row) => ({
      wave: row.wave,
      pending: toNumber(row.pending),
      running: toNumber(row.running),
      final: toNumber(row.final),
      failed: toNumber(row.failed),
      startedAt: dateOrNull(row.first_started_at),
      lastFinishedAt: dateOrNull(row.last_finished_at),
    }));
  }

  /** The pending routers of one wave with their facts (metadata as the API shows it: reported, then user-set). */
  async pendingTargets(changeId: string, wave: number): Promise<ChangeTargetRecord[]> {
    const rows = await selectTargets(this.#query, changeId)
      .where("cr.wave", "=", wave)
      .where("cr.state", "=", "pending")
      .orderBy("cr.position")
      .execute();
    return rows.map(targetFromRow);
  }

  /** One router of a change with its facts now (a preview), whatever its state. */
  async target(changeId: string, routerId: string): Promise<ChangeTargetRecord | null> {
    if (!isUuid(routerId)) return null;
    const row = await selectTargets(this.#query, changeId).where("cr.router_id", "=", routerId).executeTakeFirst();
    return row ? targetFromRow(row) : null;
  }

  /** Marks pending routers running, each with the script rendered for it, in one statement (a wave). */
  async startRouters(started: ReadonlyArray<{ id: string; script: string | null }>, now: Date): Promise<void> {
    if (started.length === 0) return;
    // Raw: one row per router through unnest, rather than one statement each.
    await sql`
      update change_routers cr set state = 'running', script = s.script, started_at = ${now}
      from unnest(${textArray(started.map((s) => s.id))}::uuid[], ${textArray(started.map((s) => s.script))}::text[])
        as s(id, script)
      where cr.id = s.id and cr.state = 'pending'`.execute(this.#query.kysely);
  }

  /**
   * Ends a pending or running router; null when it had already ended (a repeated report). With it,
   * how many other routers of its wave still run and have failed (a look at its wave only).
   */
  async finishRouter(
    id: string,
    state: TChangeRouterState,
    output: string | null,
    now: Date,
  ): Promise<(ChangeRouterRecord & { waveOthers: { running: number; failed: number } }) | null> {
    const others = (eb: ExpressionBuilder<Schema, "change_routers">, states: TChangeRouterState[]) =>
      eb
        .selectFrom("change_routers as o")
        .select((o) => o.fn.countAll().as("n"))
        .whereRef("o.change_id", "=", "change_routers.change_id")
        .whereRef("o.wave", "=", "change_routers.wave")
        .whereRef("o.id", "<>", "change_routers.id")
        .where("o.state", "in", states);
    const row = await this.#query.kysely
      .updateTable("change_routers")
      .set((eb) => ({
        state,
        ...(output !== null && { output }),
        started_at: eb.fn.coalesce("started_at", eb.val(now)),
        finished_at: now,
      }))
      .where("id", "=", id)
      .where("state", "in", ["pending", "running"])
      .returning((eb) => [
        ...ROUTER_COLUMNS,
        others(eb, ["running"]).as("wave_running"),
        others(eb, ["failed", "reverted"]).as("wave_failed"),
      ])
      .executeTakeFirst();
    if (!row) return null;
    return {
      ...routerFromRow(row),
      waveOthers: { running: toNumber(row.wave_running), failed: toNumber(row.wave_failed) },
    };
  }

  /**
   * Ends a pending or running router as `succeeded` with its audit entry `change.router.succeeded`
   * in one statement and no transaction: no lock of the change's row, so a wave's results never
   * wait for each other (issue 39). `output` null keeps the row's; the entry's cut of it is
   * `auditOutput`, or, when null, the row's own output, which must then be at most
   * `auditOutputBytes` bytes (no cut needed). Null, with nothing written, when the router has
   * already ended or its stored output is longer: the caller takes the locked way then. What the
   * change does next is the caller's, after this has committed.
   */
  async finishSucceeded(
    id: string,
    output: string | null,
    auditOutput: string | null,
    auditOutputBytes: number,
    now: Date,
  ): Promise<ChangeRouterRecord | null> {
    if (!isUuid(id)) return null;
    // Raw: the result and its audit entry as data-modifying CTEs of one statement.
    const { rows } = await sql<Record<(typeof ROUTER_COLUMNS)[number], unknown>>`
      with s as (
        update change_routers set state = 'succeeded', output = coalesce(${output}::text, output),
          started_at = coalesce(started_at, ${now}::timestamptz), finished_at = ${now}::timestamptz
        where id = ${id} and state in ('pending', 'running')
          and (${output}::text is not null or output is null or octet_length(output) <= ${auditOutputBytes})
        returning ${sql.raw(ROUTER_COLUMNS.join(", "))}
      ), a as (${changeRouterAuditInsert("s", auditOutput)}
      )
      select ${sql.raw(ROUTER_COLUMNS.map((c) => `s.${c}`).join(", "))} from s`.execute(this.#query.kysely);
    const [row] = rows;
    return row ? rawRouterFromRow(row) : null;
  }

  /**
   * The change's state and, of one wave, how many routers run and how many failed: the look a
   * result takes after it has committed (a fresh snapshot sees every result committed before).
   */
  async waveTally(
    changeId: string,
    wave: number,
  ): Promise<{ state: TChangeState; running: number; failed: number } | null> {
    const { rows } = await sql<{ state: string; running: unknown; failed: unknown }>`
      select c.state,
        (select count(*) from change_routers o where o.change_id = c.id and o.wave = ${wave} and o.state = 'running') as running,
        (select count(*) from change_routers o where o.change_id = c.id and o.wave = ${wave}
          and o.state in ('failed', 'reverted')) as failed
      from changes c where c.id = ${changeId}`.execute(this.#query.kysely);
    const [row] = rows;
    return row
      ? { state: row.state as TChangeState, running: toNumber(row.running), failed: toNumber(row.failed) }
      : null;
  }

  /** Cancels every router that has not started. */
  async cancelPending(changeId: string, now: Date): Promise<number> {
    const rows = await this.#query.kysely
      .updateTable("change_routers")
      .set({ state: "cancelled", finished_at: now })
      .where("change_id", "=", changeId)
      .where("state", "=", "pending")
      .returning("id")
      .execute();
    return rows.length;
  }

  /**
   * Records the executor's resumable step of a running router, and the script's output when given
   * (one statement); false when it is not running.
   */
  async setPhase(id: string, phase: string | null, output?: string): Promise<boolean> {
    if (!isUuid(id)) return false;
    // Raw: written several times by every step, its text fixed (no builder, no plugin pass).
    const rows = await this.#query(
      output === undefined
        ? "update change_routers set phase = $2 where id = $1 and state = 'running' returning id"
        : "update change_routers set phase = $2, output = $3 where id = $1 and state = 'running' returning id",
      output === undefined ? [id, phase] : [id, phase, output],
    );
    return rows.length > 0;
  }

  /**
   * The organization's routers a selector names, in dispatch order (the ids' order, else name):
   * every condition given holds (`team_id`, any of `tags`, one of `router_ids`: an empty list holds
   * for no router); `teamId` bounds a team-bound credential to its team.
   */
  async selectRouters(
    organizationId: string,
    selector: ChangeSelectorRecord,
    teamId?: string,
  ): Promise<Array<{ id: string; teamId: string }>> {
    const ids = selector.router_ids ?? [];
    // Raw: the ids' order comes from unnest with ordinality and the tag match from jsonb_array_elements_text.
    const { rows } = await sql<{ id: string; team_id: string }>`
      select r.id, r.team_id from routers r
      left join unnest(${textArray([...new Set(ids)])}::uuid[]) with ordinality as picked(id, n) on picked.id = r.id
      where r.organization_id = ${organizationId} and (${teamId ?? null}::uuid is null or r.team_id = ${teamId ?? null}::uuid)
        and (${selector.team_id ?? null}::uuid is null or r.team_id = ${selector.team_id ?? null}::uuid)
        and (${selector.router_ids === undefined}::boolean or picked.id is not null)
        and (${selector.tags === undefined}::boolean
          or exists (select 1 from jsonb_array_elements_text(r.tags) t where t = any(${textArray(selector.tags ?? [])}::text[])))
      order by picked.n nulls last, r.name, r.id`.execute(this.#query.kysely);
    return rows.map((row) => ({ id: row.id, teamId: row.team_id }));
  }

  /**
   * The user who made an API key of the organization (the person an approval by that key stands
   * for). A revoked key's row is gone: its `api_key.created` entry still names its maker, until the
   * audit log's retention prunes it; then null.
   */
  async apiKeyMaker(keyId: string, organizationId: string): Promise<string | null> {
    if (!isUuid(keyId)) return null;
    const row = await this.#query.kysely
      .selectFrom("api_keys")
      .select("created_by")
      .where("id", "=", keyId)
      .executeTakeFirst();
    if (row) return row.created_by;
    const made = await this.#query.kysely
      .selectFrom("audit_log")
      .select("actor_id")
      .where("organization_id", "=", organizationId)
      .where("action", "=", "api_key.created")
      .where("target_id", "=", keyId)
      .where("actor_type", "=", "user")
      .executeTakeFirst();
    return made?.actor_id ?? null;
  }

  /** Of these ids, the ones that are routers of the organization (and team, when given). */
  async ownedRouterIds(organizationId: string, ids: readonly string[], teamId?: string): Promise<Set<string>> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return new Set();
    const rows = await this.#query.kysely
      .selectFrom("routers")
      .select("id")
      .where("organization_id", "=", organizationId)
      .where((eb) => eb("id", "=", eb.fn.any(uuids(valid))))
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .execute();
    return new Set(rows.map((row) => row.id));
  }
}
