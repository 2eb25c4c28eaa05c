import { sql } from "kysely";
import type { Database, Query, Row } from "../database.ts";
import { plainArray, textArray } from "./pg-arrays.ts";
import { toNumber } from "./sql-values.ts";

/** Who did it (docs/api.md "Audit log and webhooks"). */
export type TAuditActorType = "user" | "api_key" | "router" | "system";

export interface AuditActor {
  type: TAuditActorType;
  /** User id (token subject), API key id, router id; null for the system. */
  id: string | null;
}

/** The actor and the address a change came from, handed by the API down to the repositories. */
export interface AuditOrigin {
  actor: AuditActor;
  sourceIp: string | null;
}

/** The system itself (sweeps, expiry, retention). */
export const SYSTEM_ORIGIN: AuditOrigin = { actor: { type: "system", id: null }, sourceIp: null };

export interface NewAuditEntry {
  organizationId: string;
  occurredAt: Date;
  action: string;
  actor: AuditActor;
  target: { type: string; id: string };
  routerId?: string | null;
  /**
   * The team the entry belongs to (docs/api.md "Audit log and webhooks"): given by a team-bound
   * credential's action or a team webhook's; else its router's team (looked up at insert).
   */
  teamId?: string | null;
  sourceIp?: string | null;
  details?: Record<string, unknown>;
}

export interface AuditRecord {
  id: string;
  organizationId: string;
  occurredAt: Date;
  action: string;
  actor: AuditActor;
  target: { type: string; id: string };
  routerId: string | null;
  /** Null: an organization-wide entry, seen only by organization-wide credentials. */
  teamId: string | null;
  sourceIp: string | null;
  details: Record<string, unknown>;
}

export interface AuditListFilter {
  organizationId: string;
  /** Only the entries of this team (a team-bound credential's view). */
  teamId?: string | undefined;
  limit: number;
  routerId?: string | undefined;
  action?: string | undefined;
  /** Entries strictly older than this position (the previous page's last entry). */
  before?: { occurredAt: Date; id: string } | undefined;
}

export const AUDIT_COLUMNS = [
  "id",
  "organization_id",
  "occurred_at",
  "action",
  "actor_type",
  "actor_id",
  "target_type",
  "target_id",
  "router_id",
  "team_id",
  "source_ip",
  "details",
] as const;

/**
 * `dispatched_at` of a new entry: null (waiting in the outbox) only when its organization has an
 * enabled webhook; otherwise the entry is born dispatched, so the outbox holds only work and the
 * dispatcher writes nothing for organizations without webhooks. Raw SQL text, for the batches.
 */
const outboxState = (organizationId: string, occurredAt: string) =>
  sql.raw(`(case when exists (select 1 from webhooks w where w.organization_id = ${organizationId} and w.disabled_at is null)
    then null else ${occurredAt} end)`);

/**
 * `team_id` of a new entry, the one rule of every writer: the team given, else its router's team,
 * else (the router was removed in this transaction or before) the team of the router's latest entry.
 * Each value is a column (`sql.raw`) or a parameter.
 */
const entryTeam = (teamId: unknown, organizationId: unknown, routerId: unknown) =>
  sql<string | null>`coalesce(${teamId}, (select tr.team_id from routers tr where tr.id = ${routerId}),
    (select ta.team_id from audit_log ta where ta.organization_id = ${organizationId} and ta.router_id = ${routerId}
      and ta.team_id is not null order by ta.occurred_at desc, ta.id desc limit 1))`;

/** Writes one entry through `query`, so it commits or rolls back with the change it records. */
export const insertAuditEntry = async (query: Query, entry: NewAuditEntry): Promise<void> => {
  const routerId = entry.routerId ?? null;
  await query.kysely
    .insertInto("audit_log")
    .values((eb) => ({
      id: sql<string>`gen_random_uuid()`,
      organization_id: entry.organizationId,
      occurred_at: entry.occurredAt,
      action: entry.action,
      actor_type: entry.actor.type,
      actor_id: entry.actor.id,
      target_type: entry.target.type,
      target_id: entry.target.id,
      router_id: routerId,
      source_ip: entry.sourceIp ?? null,
      details: entry.details ?? {},
      // The outbox state (see `outboxState`), computed from rows of the same transaction.
      dispatched_at: eb
        .case()
        .when(
          eb.not(
            eb.exists(
              eb
                .selectFrom("webhooks as w")
                .select("w.id")
                .where("w.organization_id", "=", entry.organizationId)
                .where("w.disabled_at", "is", null),
            ),
          ),
        )
        .then(eb.cast<Date>(eb.val(entry.occurredAt), "timestamptz"))
        .end(),
      // `entryTeam`; an entry that names its team (or no router) costs no lookup.
      team_id:
        entry.teamId != null || routerId === null
          ? (entry.teamId ?? null)
          : entryTeam(sql.raw("null"), entry.organizationId, routerId),
    }))
    .execute();
};

/**
 * Writes many entries in one statement through `query` (the transaction of the change they record):
 * the batched twin of {@link insertAuditEntry}, for services that record a batch of changes.
 */
export const insertAuditEntries = async (query: Query, entries: readonly NewAuditEntry[]): Promise<void> => {
  if (entries.length === 0) return;
  // Raw: one row per array element through unnest; outbox state and team as in insertAuditEntry.
  await sql`insert into audit_log (id, organization_id, occurred_at, action, actor_type, actor_id,
    target_type, target_id, router_id, source_ip, details, dispatched_at, team_id)
    select gen_random_uuid(), v.organization_id, to_timestamp(v.occurred_ms / 1000.0), v.action, v.actor_type, v.actor_id,
      v.target_type, v.target_id, v.router_id, v.source_ip, v.details,
      ${outboxState("v.organization_id", "to_timestamp(v.occurred_ms / 1000.0)")},
      ${entryTeam(sql.raw("v.team_id"), sql.raw("v.organization_id"), sql.raw("v.router_id"))}
    from unnest(${textArray(entries.map((e) => e.organizationId))}::uuid[],
      ${plainArray(entries.map((e) => e.occurredAt.getTime()))}::float8[],
      ${textArray(entries.map((e) => e.action))}::text[], ${textArray(entries.map((e) => e.actor.type))}::text[],
      ${textArray(entries.map((e) => e.actor.id))}::text[], ${textArray(entries.map((e) => e.target.type))}::text[],
      ${textArray(entries.map((e) => e.target.id))}::text[], ${textArray(entries.map((e) => e.routerId ?? null))}::uuid[],
      ${textArray(entries.map((e) => e.sourceIp ?? null))}::text[],
      ${textArray(entries.map((e) => JSON.stringify(e.details ?? {})))}::jsonb[],
      ${textArray(entries.map((e) => e.teamId ?? null))}::uuid[])
      as v(organization_id, occurred_ms, action, actor_type, actor_id, target_type, target_id, router_id, source_ip, details,
        team_id)`.execute(query.kysely);
};

/**
 * `change.router.<state>` for the change step a statement has just ended, as the body of one of its
 * data-modifying CTEs: `step` names the CTE that returns the step's row (`change_routers` columns).
 * Details, outbox state and team (`entryTeam`) as `insertAuditEntry` writes them for
 * `ChangeWorkflow`; `output` is the entry's cut of the step's output, else (null) the row's own output.
 */
export const changeRouterAuditInsert = (step: string, output: string | null) =>
  sql`insert into audit_log (id, organization_id, occurred_at, action, actor_type, actor_id, target_type, target_id,
      router_id, source_ip, details, dispatched_at, team_id)
    select gen_random_uuid(), c.organization_id, s.finished_at, 'change.router.' || s.state, 'system', null,
      'change', c.id::text, s.router_id, null,
      jsonb_build_object('change_id', c.id, 'name', c.name, 'wave', s.wave, 'output', coalesce(${output}::text, s.output)),
      ${outboxState("c.organization_id", "s.finished_at")},
      ${entryTeam(sql.raw("c.team_id"), sql.raw("c.organization_id"), sql.raw("s.router_id"))}
    from ${sql.table(step)} s join changes c on c.id = s.change_id`;

/**
 * `router.config.changed` for the version a statement has just stored, as the body of one of its
 * data-modifying CTEs: `stored` names the CTE that returns the version's `id`, `router_id`,
 * `created_at` and its router's `organization_id`. Details, actor, outbox state and team as
 * `insertAuditEntry` writes them for `storeConfigRead`.
 */
export const configChangedAuditInsert = (
  stored: string,
  previousId: string,
  changes: { added: number; removed: number },
) =>
  sql`insert into audit_log (id, organization_id, occurred_at, action, actor_type, actor_id, target_type, target_id,
      router_id, source_ip, details, dispatched_at, team_id)
    select gen_random_uuid(), s.organization_id, s.created_at, 'router.config.changed', ${SYSTEM_ORIGIN.actor.type},
      null, 'router', s.router_id::text, s.router_id, null,
      jsonb_build_object('backup_id', s.id, 'previous_backup_id', ${previousId}::uuid,
        'lines_added', ${changes.added}::int, 'lines_removed', ${changes.removed}::int),
      ${outboxState("s.organization_id", "s.created_at")},
      ${entryTeam(sql.raw("null"), sql.raw("s.organization_id"), sql.raw("s.router_id"))}
    from ${sql.table(stored)} s`;

/**
 * The relay's batch for one kind of session (forwards, or temporary router access): rows whose
 * session no longer exists are dropped, and the organization and router come from the session, so a
 * caller cannot misfile an entry. Access records `forward.connection.*` as
 * `router.access.connection.*` against the access session.
 */
const insertConnectionEvents = (kind: "forward" | "router_access", events: readonly ForwardConnectionEvent[]) => {
  // Raw: the batch comes in as arrays through unnest.
  const session =
    kind === "forward"
      ? sql.raw("'forward', s.id::text, s.router_id, v.source_ip, v.details")
      : sql.raw("'router_access', s.id::text, s.router_id, v.source_ip, v.details");
  const action =
    kind === "forward"
      ? sql.raw("v.action")
      : sql.raw("replace(v.action, 'forward.connection.', 'router.access.connection.')");
  const table = sql.raw(kind === "forward" ? "forwards" : "router_access");
  return sql`insert into audit_log (id, organization_id, occurred_at, action, actor_type, actor_id,
    target_type, target_id, router_id, source_ip, details, dispatched_at, team_id)
    select gen_random_uuid(), r.organization_id, to_timestamp(v.occurred_ms / 1000.0), ${action}, 'system', null,
      ${session}, ${outboxState("r.organization_id", "to_timestamp(v.occurred_ms / 1000.0)")}, r.team_id
    from unnest(${events.map((e) => e.forwardId)}::uuid[], ${events.map((e) => e.occurredAt.getTime())}::float8[],
      ${events.map((e) => e.action)}::text[], ${events.map((e) => e.sourceIp)}::text[],
      ${events.map((e) => JSON.stringify(e.details))}::jsonb[]) as v(forward_id, occurred_ms, action, source_ip, details)
    join ${table} s on s.id = v.forward_id
    join routers r on r.id = s.router_id`;
};

export const auditFromRow = (row: Pick<Row<"audit_log">, (typeof AUDIT_COLUMNS)[number]>): AuditRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  occurredAt: row.occurred_at,
  action: row.action,
  actor: { type: row.actor_type, id: row.actor_id },
  target: { type: row.target_type, id: row.target_id },
  routerId: row.router_id,
  teamId: row.team_id,
  sourceIp: row.source_ip,
  details: row.details,
});

/** A connection event of the entry-point relay, written in batches. */
export interface ForwardConnectionEvent {
  forwardId: string;
  occurredAt: Date;
  action: "forward.connection.accepted" | "forward.connection.denied";
  sourceIp: string | null;
  details: Record<string, unknown>;
}

/** The audit log (docs/api.md "Audit log and webhooks"): reads, batched writes, retention. */
export class AuditLogRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** One entry in its own statement: for changes that have no transaction of their own. */
  async record(entry: NewAuditEntry): Promise<void> {
    await insertAuditEntry(this.#db.query, entry);
  }

  /** The relay's batch: one statement for many connections (of each kind of session). */
  async recordForwardEvents(events: readonly ForwardConnectionEvent[]): Promise<void> {
    if (events.length === 0) return;
    await insertConnectionEvents("forward", events).execute(this.#db.query.kysely);
    await insertConnectionEvents("router_access", events).execute(this.#db.query.kysely);
  }

  /**
   * Newest first, by (occurred_at, id) descending. Every variant walks one of the
   * `(organization_id[, router_id | action], occurred_at, id)` indexes backwards.
   */
  async list(filter: AuditListFilter): Promise<AuditRecord[]> {
    return (await listQuery(this.#db.query, filter).execute()).map(auditFromRow);
  }

  /** The plan of {@link list} (tests show it uses an index). */
  async explainList(filter: AuditListFilter): Promise<string> {
    const rows = await listQuery(this.#db.query, filter).explain<Record<string, unknown>>();
    return rows.map((r) => String(r["QUERY PLAN"] ?? Object.values(r)[0])).join("\n");
  }

  /** Deletes entries older than `before`, at most `batch` per statement; returns how many went. */
  async prune(before: Date, batch = 10_000): Promise<number> {
    let total = 0;
    for (;;) {
      // A delete cannot take a limit, so the batch is chosen in a CTE.
      const row = await this.#db.query.kysely
        .with("doomed", (db) => db.selectFrom("audit_log").select("id").where("occurred_at", "<", before).limit(batch))
        .with("gone", (db) =>
          db.deleteFrom("audit_log as a").using("doomed").whereRef("a.id", "=", "doomed.id").returning("a.id"),
        )
        .selectFrom("gone")
        .select((eb) => eb.fn.countAll().as("n"))
        .executeTakeFirst();
      const n = toNumber(row?.n ?? 0);
      total += n;
      if (n < batch) return total;
    }
  }
}

const listQuery = (query: Query, filter: AuditListFilter) => {
  let select = query.kysely
    .selectFrom("audit_log as a")
    .select(AUDIT_COLUMNS.map((column) => `a.${column}` as const))
    .where("a.organization_id", "=", filter.organizationId);
  if (filter.teamId !== undefined) select = select.where("a.team_id", "=", filter.teamId);
  if (filter.routerId !== undefined) select = select.where("a.router_id", "=", filter.routerId);
  if (filter.action !== undefined) select = select.where("a.action", "=", filter.action);
  const before = filter.before;
  if (before) {
    select = select.where((eb) =>
      eb(eb.refTuple("a.occurred_at", "a.id"), "<", eb.tuple(before.occurredAt, before.id)),
    );
  }
  return select.orderBy("a.occurred_at", "desc").orderBy("a.id", "desc").limit(filter.limit);
};
