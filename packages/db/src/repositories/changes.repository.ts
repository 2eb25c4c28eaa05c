import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import type { AuditActor } from "./audit-log.repository.ts";
import { plainArray, textArray } from "./pg-arrays.ts";
import { toNumber } from "./sql-values.ts";

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

type Row = Record<string, unknown>;

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const json = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;
const dateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toNumber(value));
const textOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

const CHANGE_COLUMNS = `c.id, c.organization_id, c.team_id, c.name, c.kind, c.script, c.firmware_channel, c.firmware_version,
  c.selector, c.canary, c.wave_size, c.wave_interval_seconds, c.max_failures, c.guard_seconds, c.requires_approval,
  ${ms("c.start_at", "start_ms")}, c.state, c.created_by_type, c.created_by, c.approved_by, ${ms("c.approved_at", "approved_ms")},
  ${ms("c.started_at", "started_ms")}, ${ms("c.finished_at", "finished_ms")}, ${ms("c.created_at", "created_ms")},
  ${ms("c.updated_at", "updated_ms")}`;

const changeFromRow = (row: Row): ChangeRecord => ({
  id: String(row.id),
  organizationId: String(row.organization_id),
  teamId: textOrNull(row.team_id),
  name: String(row.name),
  kind: String(row.kind) as ChangeRecord["kind"],
  script: textOrNull(row.script),
  firmwareChannel: textOrNull(row.firmware_channel),
  firmwareVersion: textOrNull(row.firmware_version),
  selector: json<ChangeSelectorRecord>(row.selector) ?? {},
  canary: toNumber(row.canary),
  waveSize: toNumber(row.wave_size),
  waveIntervalSeconds: toNumber(row.wave_interval_seconds),
  maxFailures: toNumber(row.max_failures),
  guardSeconds: toNumber(row.guard_seconds),
  requiresApproval: row.requires_approval === true,
  startAt: dateOrNull(row.start_ms),
  state: String(row.state) as TChangeState,
  createdBy: { type: String(row.created_by_type) as AuditActor["type"], id: textOrNull(row.created_by) },
  approvedBy: textOrNull(row.approved_by),
  approvedAt: dateOrNull(row.approved_ms),
  startedAt: dateOrNull(row.started_ms),
  finishedAt: dateOrNull(row.finished_ms),
  createdAt: new Date(toNumber(row.created_ms)),
  updatedAt: new Date(toNumber(row.updated_ms)),
});

const ROUTER_COLUMNS = `cr.id, cr.change_id, cr.router_id, cr.wave, cr.position, cr.state, cr.phase, cr.script, cr.output,
  ${ms("cr.started_at", "started_ms")}, ${ms("cr.finished_at", "finished_ms")}`;

const routerFromRow = (row: Row): ChangeRouterRecord => ({
  id: String(row.id),
  changeId: String(row.change_id),
  routerId: String(row.router_id),
  wave: toNumber(row.wave),
  position: toNumber(row.position),
  state: String(row.state) as TChangeRouterState,
  phase: textOrNull(row.phase),
  script: textOrNull(row.script),
  output: textOrNull(row.output),
  startedAt: dateOrNull(row.started_ms),
  finishedAt: dateOrNull(row.finished_ms),
});

const targetFromRow = (row: Row): ChangeTargetRecord => ({
  ...routerFromRow(row),
  identity: String(row.identity ?? ""),
  name: String(row.name ?? ""),
  tunnelIp: textOrNull(row.tunnel_ip),
  metadata: json<Record<string, unknown>>(row.metadata) ?? {},
  hasPulse: row.has_pulse === true,
});

const FINAL = `('succeeded', 'failed', 'reverted', 'skipped_offline', 'cancelled')`;

/** `changes` and `change_routers`: reads and writes only (decisions are the workflow's and the service's). */
export class ChangesRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async insert(input: NewChange): Promise<ChangeRecord> {
    const rows = await this.#query<Row>(
      `insert into changes as c (id, organization_id, team_id, name, kind, script, firmware_channel, firmware_version,
         selector, canary, wave_size, wave_interval_seconds, max_failures, guard_seconds, requires_approval, start_at, state,
         created_by_type, created_by, created_at, updated_at)
       values (gen_random_uuid(), $1, $2::uuid, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13, $14,
         to_timestamp($15::float8 / 1000.0), $16, $17, $18, to_timestamp($19::float8 / 1000.0), to_timestamp($19::float8 / 1000.0))
       returning ${CHANGE_COLUMNS}`,
      [
        input.organizationId,
        input.teamId,
        input.name,
        input.kind,
        input.script,
        input.firmwareChannel,
        input.firmwareVersion,
        JSON.stringify(input.selector),
        input.canary,
        input.waveSize,
        input.waveIntervalSeconds,
        input.maxFailures,
        input.guardSeconds,
        input.requiresApproval,
        input.startAt?.getTime() ?? null,
        input.state,
        input.createdBy.type,
        input.createdBy.id,
        input.createdAt.getTime(),
      ],
    );
    const row = rows[0];
    if (!row) throw new Error("change insert returned no row");
    return changeFromRow(row);
  }

  /** The change's routers in dispatch order (arrays through unnest: one statement for any fleet). */
  async insertRouters(changeId: string, routers: ReadonlyArray<{ routerId: string; wave: number; position: number }>) {
    if (routers.length === 0) return;
    await this.#query(
      `insert into change_routers (id, change_id, router_id, wave, position, state)
       select gen_random_uuid(), $1, v.router_id, v.wave, v.position, 'pending'
       from unnest($2::uuid[], $3::int[], $4::int[]) as v(router_id, wave, position)`,
      [
        changeId,
        textArray(routers.map((r) => r.routerId)),
        plainArray(routers.map((r) => r.wave)),
        plainArray(routers.map((r) => r.position)),
      ],
    );
  }

  /** With `teamId` (a team-bound credential): only that team's changes. */
  async get(organizationId: string, id: string, teamId?: string): Promise<ChangeRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      `select ${CHANGE_COLUMNS} from changes c where c.id = $1 and c.organization_id = $2
       and ($3::uuid is null or c.team_id = $3::uuid)`,
      [id, organizationId, teamId ?? null],
    );
    return rows[0] ? changeFromRow(rows[0]) : null;
  }

  /** A change by id whatever its organization (the agent's look from a router step). */
  async find(id: string): Promise<ChangeRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(`select ${CHANGE_COLUMNS} from changes c where c.id = $1`, [id]);
    return rows[0] ? changeFromRow(rows[0]) : null;
  }

  /** Changes the dispatcher should look at now: running ones and scheduled ones whose time has come. */
  async dueIds(now: Date, limit: number): Promise<string[]> {
    const rows = await this.#query<Row>(
      `select id from changes where state = 'running'
         or (state = 'scheduled' and (start_at is null or start_at <= to_timestamp($1::float8 / 1000.0)))
       order by updated_at limit $2`,
      [now.getTime(), limit],
    );
    return rows.map((row) => String(row.id));
  }

  /** The change, its row locked until the transaction ends: the one order of every change writer (change, then its routers). */
  async lock(id: string): Promise<ChangeRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(`select ${CHANGE_COLUMNS} from changes c where c.id = $1 for update`, [id]);
    return rows[0] ? changeFromRow(rows[0]) : null;
  }

  /** Newest first; `before` is the previous page's last change. */
  async list(
    organizationId: string,
    limit: number,
    options: { teamId?: string | undefined; before?: { createdAt: Date; id: string } | undefined } = {},
  ): Promise<ChangeRecord[]> {
    const rows = await this.#query<Row>(
      `select ${CHANGE_COLUMNS} from changes c where c.organization_id = $1
       and ($2::uuid is null or c.team_id = $2::uuid)
       and ($3::float8 is null or (c.created_at, c.id) < (to_timestamp($3::float8 / 1000.0), $4::uuid))
       order by c.created_at desc, c.id desc limit $5`,
      [
        organizationId,
        options.teamId ?? null,
        options.before?.createdAt.getTime() ?? null,
        options.before?.id ?? null,
        limit,
      ],
    );
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
    const rows = await this.#query<Row>(
      `update changes c set state = $2,
         approved_by = case when $3::boolean then $4 else approved_by end,
         approved_at = case when $3::boolean then to_timestamp($5::float8 / 1000.0) else approved_at end,
         started_at = case when $6::boolean then to_timestamp($7::float8 / 1000.0) else started_at end,
         finished_at = case when $8::boolean then to_timestamp($9::float8 / 1000.0) else finished_at end,
         updated_at = to_timestamp($10::float8 / 1000.0)
       where c.id = $1 returning ${CHANGE_COLUMNS}`,
      [
        id,
        patch.state,
        patch.approvedBy !== undefined,
        patch.approvedBy ?? null,
        patch.approvedAt?.getTime() ?? null,
        patch.startedAt !== undefined,
        patch.startedAt?.getTime() ?? null,
        patch.finishedAt !== undefined,
        patch.finishedAt?.getTime() ?? null,
        now.getTime(),
      ],
    );
    const row = rows[0];
    if (!row) throw new Error(`change ${id} not found`);
    return changeFromRow(row);
  }

  /** Routers per state (`{"pending": 3, ...}`); states without a router are absent. */
  async counts(changeId: string): Promise<Record<string, number>> {
    const rows = await this.#query<Row>(
      "select state, count(*)::int as n from change_routers where change_id = $1 group by state",
      [changeId],
    );
    return Object.fromEntries(rows.map((row) => [String(row.state), toNumber(row.n)]));
  }

  /** `counts` of many changes in one statement (a page of the list). */
  async countsOf(changeIds: readonly string[]): Promise<Map<string, Record<string, number>>> {
    const out = new Map<string, Record<string, number>>(changeIds.map((id) => [id, {}]));
    if (changeIds.length === 0) return out;
    const rows = await this.#query<Row>(
      `select change_id, state, count(*)::int as n from change_routers where change_id = any($1::uuid[])
       group by change_id, state`,
      [textArray(changeIds)],
    );
    for (const row of rows) {
      const counts = out.get(String(row.change_id));
      if (counts) counts[String(row.state)] = toNumber(row.n);
    }
    return out;
  }

  async listRouters(changeId: string): Promise<ChangeRouterRecord[]> {
    const rows = await this.#query<Row>(
      `select ${ROUTER_COLUMNS} from change_routers cr where cr.change_id = $1 order by cr.wave, cr.position`,
      [changeId],
    );
    return rows.map(routerFromRow);
  }

  async findRouter(changeId: string, routerId: string): Promise<ChangeRouterRecord | null> {
    if (!isUuid(routerId)) return null;
    const rows = await this.#query<Row>(
      `select ${ROUTER_COLUMNS} from change_routers cr where cr.change_id = $1 and cr.router_id = $2`,
      [changeId, routerId],
    );
    return rows[0] ? routerFromRow(rows[0]) : null;
  }

  /** One router step by its own id (the agent's job payload). */
  async getRouterStep(id: string): Promise<ChangeRouterRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(`select ${ROUTER_COLUMNS} from change_routers cr where cr.id = $1`, [id]);
    return rows[0] ? routerFromRow(rows[0]) : null;
  }

  /** Per wave: how many routers wait, run and are done, and when the wave started and last finished. */
  async waves(changeId: string): Promise<ChangeWaveRecord[]> {
    const rows = await this.#query<Row>(
      `select wave,
         count(*) filter (where state = 'pending')::int as pending,
         count(*) filter (where state = 'running')::int as running,
         count(*) filter (where state in ${FINAL})::int as final,
         count(*) filter (where state in ('failed', 'reverted'))::int as failed,
         ${ms("min(started_at)", "started_ms")}, ${ms("max(finished_at)", "finished_ms")}
       from change_routers where change_id = $1 group by wave order by wave`,
      [changeId],
    );
    return rows.map((row) => ({
      wave: toNumber(row.wave),
      pending: toNumber(row.pending),
      running: toNumber(row.running),
      final: toNumber(row.final),
      failed: toNumber(row.failed),
      startedAt: dateOrNull(row.started_ms),
      lastFinishedAt: dateOrNull(row.finished_ms),
    }));
  }

  /** The pending routers of one wave with their facts (metadata as the API shows it: reported, then user-set). */
  async pendingTargets(changeId: string, wave: number): Promise<ChangeTargetRecord[]> {
    const rows = await this.#query<Row>(
      `select ${ROUTER_COLUMNS}, r.identity, r.name, r.tunnel_ip, r.reported_metadata || r.user_metadata as metadata,
         coalesce(l.has_pulse, false) as has_pulse
       from change_routers cr join routers r on r.id = cr.router_id
       left join router_liveness l on l.router_id = cr.router_id
       where cr.change_id = $1 and cr.wave = $2 and cr.state = 'pending' order by cr.position`,
      [changeId, wave],
    );
    return rows.map(targetFromRow);
  }

  /** One router of a change with its facts now (a preview), whatever its state. */
  async target(changeId: string, routerId: string): Promise<ChangeTargetRecord | null> {
    if (!isUuid(routerId)) return null;
    const rows = await this.#query<Row>(
      `select ${ROUTER_COLUMNS}, r.identity, r.name, r.tunnel_ip, r.reported_metadata || r.user_metadata as metadata,
         coalesce(l.has_pulse, false) as has_pulse
       from change_routers cr join routers r on r.id = cr.router_id
       left join router_liveness l on l.router_id = cr.router_id
       where cr.change_id = $1 and cr.router_id = $2`,
      [changeId, routerId],
    );
    return rows[0] ? targetFromRow(rows[0]) : null;
  }

  /** Marks a pending router running with the script rendered for it. */
  async startRouter(id: string, script: string | null, now: Date): Promise<void> {
    await this.#query(
      `update change_routers set state = 'running', script = $2, started_at = to_timestamp($3::float8 / 1000.0)
       where id = $1 and state = 'pending'`,
      [id, script, now.getTime()],
    );
  }

  /** Ends a pending or running router; null when it had already ended (a repeated report). */
  async finishRouter(
    id: string,
    state: TChangeRouterState,
    output: string | null,
    now: Date,
  ): Promise<ChangeRouterRecord | null> {
    const rows = await this.#query<Row>(
      `update change_routers cr set state = $2, output = coalesce($3, cr.output),
         started_at = coalesce(cr.started_at, to_timestamp($4::float8 / 1000.0)),
         finished_at = to_timestamp($4::float8 / 1000.0)
       where cr.id = $1 and cr.state in ('pending', 'running') returning ${ROUTER_COLUMNS}`,
      [id, state, output, now.getTime()],
    );
    return rows[0] ? routerFromRow(rows[0]) : null;
  }

  /** Cancels every router that has not started. */
  async cancelPending(changeId: string, now: Date): Promise<number> {
    const rows = await this.#query<Row>(
      `update change_routers set state = 'cancelled', finished_at = to_timestamp($2::float8 / 1000.0)
       where change_id = $1 and state = 'pending' returning id`,
      [changeId, now.getTime()],
    );
    return rows.length;
  }

  /**
   * Records the executor's resumable step of a running router, and the script's output when given
   * (one statement); false when it is not running.
   */
  async setPhase(id: string, phase: string | null, output?: string): Promise<boolean> {
    if (!isUuid(id)) return false;
    const rows = await this.#query<Row>(
      "update change_routers set phase = $2, output = coalesce($3, output) where id = $1 and state = 'running' returning id",
      [id, phase, output ?? null],
    );
    return rows.length > 0;
  }

  /**
   * The organization's routers a selector names, in dispatch order (the ids' order, else name):
   * every condition given holds (`team_id`, any of `tags`, one of `router_ids`); `teamId` bounds a
   * team-bound credential to its team.
   */
  async selectRouters(
    organizationId: string,
    selector: ChangeSelectorRecord,
    teamId?: string,
  ): Promise<Array<{ id: string; teamId: string }>> {
    const ids = selector.router_ids ?? [];
    const rows = await this.#query<Row>(
      `select r.id, r.team_id from routers r
       left join unnest($4::uuid[]) with ordinality as picked(id, n) on picked.id = r.id
       where r.organization_id = $1 and ($2::uuid is null or r.team_id = $2::uuid)
         and ($3::uuid is null or r.team_id = $3::uuid)
         and (cardinality($4::uuid[]) = 0 or picked.id is not null)
         and (cardinality($5::text[]) = 0 or exists (select 1 from jsonb_array_elements_text(r.tags) t where t = any($5::text[])))
       order by picked.n nulls last, r.name, r.id`,
      [
        organizationId,
        teamId ?? null,
        selector.team_id ?? null,
        textArray([...new Set(ids)]),
        textArray(selector.tags ?? []),
      ],
    );
    return rows.map((row) => ({ id: String(row.id), teamId: String(row.team_id) }));
  }

  /** The user who made an API key (the person an approval by that key stands for); null when it is gone. */
  async apiKeyMaker(keyId: string): Promise<string | null> {
    if (!isUuid(keyId)) return null;
    const rows = await this.#query<Row>("select created_by from api_keys where id = $1", [keyId]);
    return rows[0] ? String(rows[0].created_by) : null;
  }

  /** Of these ids, the ones that are routers of the organization (and team, when given). */
  async ownedRouterIds(organizationId: string, ids: readonly string[], teamId?: string): Promise<Set<string>> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return new Set();
    const rows = await this.#query<Row>(
      `select id from routers where organization_id = $1 and id = any($2::uuid[]) and ($3::uuid is null or team_id = $3::uuid)`,
      [organizationId, textArray(valid), teamId ?? null],
    );
    return new Set(rows.map((row) => String(row.id)));
  }
}
