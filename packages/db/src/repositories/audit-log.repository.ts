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

// The inserts below stay raw: the outbox state and the team are computed in the statement, from
// rows of the same transaction, and the batches take their columns as arrays through unnest.

/**
 * `dispatched_at` of a new entry: null (waiting in the outbox) only when its organization has an
 * enabled webhook; otherwise the entry is born dispatched, so the outbox holds only work and the
 * dispatcher writes nothing for organizations without webhooks.
 */
const outboxState = (organizationId: string, occurredAt: string) =>
  `(case when exists (select 1 from webhooks w where w.organization_id = ${organizationId} and w.disabled_at is null)
    then null else ${occurredAt} end)`;

/**
 * `team_id` of a new entry: the one given, else its router's team, else (the router was removed in
 * this transaction or before) the team of the router's latest entry. COALESCE evaluates lazily, so
 * an entry that names its team costs no lookup.
 */
const teamOf = (organizationId: string, routerId: string, given: string) =>
  `coalesce(${given}, (select tr.team_id from routers tr where tr.id = ${routerId}),
    (select ta.team_id from audit_log ta where ta.organization_id = ${organizationId} and ta.router_id = ${routerId}
      and ta.team_id is not null order by ta.occurred_at desc, ta.id desc limit 1))`;

const INSERT_SQL = `insert into audit_log (id, organization_id, occurred_at, action, actor_type, actor_id, target_type,
  target_id, router_id, source_ip, details, dispatched_at, team_id)
  values (gen_random_uuid(), $1::uuid, to_timestamp($2::float8 / 1000.0), $3, $4, $5, $6, $7, $8, $9, $10::jsonb,
    ${outboxState("$1::uuid", "to_timestamp($2::float8 / 1000.0)")}, ${teamOf("$1::uuid", "$8::uuid", "$11::uuid")})`;

// Batched inserts (the relay's connection log): rows whose forward no longer exists are dropped,
// and the organization and router come from the forward, so a caller cannot misfile an entry.
const INSERT_FORWARD_EVENTS_SQL = `insert into audit_log (id, organization_id, occurred_at, action, actor_type, actor_id,
  target_type, target_id, router_id, source_ip, details, dispatched_at, team_id)
  select gen_random_uuid(), r.organization_id, to_timestamp(v.occurred_ms / 1000.0), v.action, 'system', null,
    'forward', f.id::text, f.router_id, v.source_ip, v.details,
    ${outboxState("r.organization_id", "to_timestamp(v.occurred_ms / 1000.0)")}, r.team_id
  from unnest($1::uuid[], $2::float8[], $3::text[], $4::text[], $5::jsonb[]) as v(forward_id, occurred_ms, action, source_ip, details)
  join forwards f on f.id = v.forward_id
  join routers r on r.id = f.router_id`;

// The same batch for temporary router access (the relay serves both): `forward.connection.*` is
// recorded as `router.access.connection.*` against the access session.
const INSERT_ACCESS_EVENTS_SQL = `insert into audit_log (id, organization_id, occurred_at, action, actor_type, actor_id,
  target_type, target_id, router_id, source_ip, details, dispatched_at, team_id)
  select gen_random_uuid(), r.organization_id, to_timestamp(v.occurred_ms / 1000.0),
    replace(v.action, 'forward.connection.', 'router.access.connection.'), 'system', null,
    'router_access', a.id::text, a.router_id, v.source_ip, v.details,
    ${outboxState("r.organization_id", "to_timestamp(v.occurred_ms / 1000.0)")}, r.team_id
  from unnest($1::uuid[], $2::float8[], $3::text[], $4::text[], $5::jsonb[]) as v(forward_id, occurred_ms, action, source_ip, details)
  join router_access a on a.id = v.forward_id
  join routers r on r.id = a.router_id`;

// Many entries in one statement (a sweep's faults, a hub's tunnel flips): the same columns and
// outbox rule as INSERT_SQL, one row per array element.
const INSERT_MANY_SQL = `insert into audit_log (id, organization_id, occurred_at, action, actor_type, actor_id,
  target_type, target_id, router_id, source_ip, details, dispatched_at, team_id)
  select gen_random_uuid(), v.organization_id, to_timestamp(v.occurred_ms / 1000.0), v.action, v.actor_type, v.actor_id,
    v.target_type, v.target_id, v.router_id, v.source_ip, v.details,
    ${outboxState("v.organization_id", "to_timestamp(v.occurred_ms / 1000.0)")},
    ${teamOf("v.organization_id", "v.router_id", "v.team_id")}
  from unnest($1::uuid[], $2::float8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::uuid[],
    $9::text[], $10::jsonb[], $11::uuid[])
    as v(organization_id, occurred_ms, action, actor_type, actor_id, target_type, target_id, router_id, source_ip, details,
      team_id)`;

/** Parameters of one audit insert, in the order of {@link INSERT_SQL}. */
const insertParams = (entry: NewAuditEntry): unknown[] => [
  entry.organizationId,
  entry.occurredAt.getTime(),
  entry.action,
  entry.actor.type,
  entry.actor.id,
  entry.target.type,
  entry.target.id,
  entry.routerId ?? null,
  entry.sourceIp ?? null,
  JSON.stringify(entry.details ?? {}),
  entry.teamId ?? null,
];

/** Writes one entry through `query`, so it commits or rolls back with the change it records. */
export const insertAuditEntry = async (query: Query, entry: NewAuditEntry): Promise<void> => {
  await query(INSERT_SQL, insertParams(entry));
};

/**
 * Writes many entries in one statement through `query` (the transaction of the change they record):
 * the batched twin of {@link insertAuditEntry}, for services that record a batch of changes.
 */
export const insertAuditEntries = async (query: Query, entries: readonly NewAuditEntry[]): Promise<void> => {
  if (entries.length === 0) return;
  await query(INSERT_MANY_SQL, [
    textArray(entries.map((e) => e.organizationId)),
    plainArray(entries.map((e) => e.occurredAt.getTime())),
    textArray(entries.map((e) => e.action)),
    textArray(entries.map((e) => e.actor.type)),
    textArray(entries.map((e) => e.actor.id)),
    textArray(entries.map((e) => e.target.type)),
    textArray(entries.map((e) => e.target.id)),
    textArray(entries.map((e) => e.routerId ?? null)),
    textArray(entries.map((e) => e.sourceIp ?? null)),
    textArray(entries.map((e) => JSON.stringify(e.details ?? {}))),
    textArray(entries.map((e) => e.teamId ?? null)),
  ]);
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

  /** The relay's batch: one statement for many connections. */
  async recordForwardEvents(events: readonly ForwardConnectionEvent[]): Promise<void> {
    if (events.length === 0) return;
    const params = [
      events.map((e) => e.forwardId),
      events.map((e) => e.occurredAt.getTime()),
      events.map((e) => e.action),
      events.map((e) => e.sourceIp),
      events.map((e) => JSON.stringify(e.details)),
    ];
    await this.#db.query(INSERT_FORWARD_EVENTS_SQL, params);
    await this.#db.query(INSERT_ACCESS_EVENTS_SQL, params);
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
    const { sql, parameters } = listQuery(this.#db.query, filter).compile();
    const rows = await this.#db.query<Record<string, unknown>>(`explain ${sql}`, parameters);
    return rows.map((r) => String(r["QUERY PLAN"] ?? Object.values(r)[0])).join("\n");
  }

  /** Deletes entries older than `before`, at most `batch` per statement; returns how many went. */
  async prune(before: Date, batch = 10_000): Promise<number> {
    let total = 0;
    for (;;) {
      // Raw: a delete cannot take a limit, so the batch is chosen in a CTE.
      const rows = await this.#db.query<{ n: unknown }>(
        `with doomed as (
           select id from audit_log where occurred_at < to_timestamp($1::float8 / 1000.0) limit $2::int
         ), gone as (delete from audit_log a using doomed where a.id = doomed.id returning 1)
         select count(*)::int as n from gone`,
        [before.getTime(), batch],
      );
      const n = toNumber(rows[0]?.n ?? 0);
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
