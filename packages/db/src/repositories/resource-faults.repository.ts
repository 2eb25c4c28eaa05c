import type { Query } from "../database.ts";
import type { StoredThresholds } from "./health-thresholds.repository.ts";
import { toNumber } from "./sql-values.ts";

/** One router and measure the evaluator has to look at: above its threshold now, or with state. */
export interface ResourceCandidate {
  routerId: string;
  organizationId: string;
  name: string;
  identity: string | null;
  measure: string;
  /** The latest value reported; null when the router does not report this measure. */
  value: number | null;
  /** The threshold that applies (router, else organization, else default); null: not watched. */
  threshold: { above: number; forSeconds: number } | null;
  aboveSince: Date | null;
  belowSince: Date | null;
  faultId: string | null;
}

export interface ResourceStateRecord {
  routerId: string;
  measure: string;
  aboveSince: Date | null;
  belowSince: Date | null;
  faultId: string | null;
}

export interface NewResourceFault {
  routerId: string;
  measure: string;
  message: string;
  createdAt: Date;
}

export interface ResourceFaultRecord {
  id: string;
  routerId: string;
  measure: string;
  /** False when the fault was already open (the state had lost it): no new event. */
  opened: boolean;
  createdAt: Date;
  durationSeconds: number | null;
}

type Row = Record<string, unknown>;
const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const dateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toNumber(value));
const json = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;

// Any fixed number: the API processes' evaluators take turns on it.
const EVALUATE_LOCK_KEY = 727_274_038;

// One statement per sweep (docs/api.md "Health thresholds"): the latest values of every router
// with a pulse, five measures each, against the threshold that applies (coalesce: an explicit JSON
// null at a level stops the fall-through; `real` values rounded to 2 decimals, as reported). Only what can change comes back: a watched measure
// above its threshold, or a measure with state (counting down or with an open fault). A sequential
// read of the one-row-per-router table and primary-key probes of the thresholds and states: no
// index serves "above a per-organization threshold", and the table is as narrow as the fleet.
const CANDIDATES_SQL = `
with m(measure) as (values ('cpu'), ('memory'), ('disk'), ('temperature'), ('ping_loss')),
c as (
  select h.router_id, r.organization_id, r.name, r.identity, m.measure,
    round((case m.measure when 'cpu' then h.cpu_load when 'memory' then h.memory_used_percent
       when 'disk' then h.disk_used_percent when 'temperature' then h.temperature
       else h.ping_loss_percent end)::numeric, 2)::float8 as value,
    coalesce(rt.thresholds -> m.measure, ot.thresholds -> m.measure, $1::jsonb -> m.measure) as threshold
  from router_health_latest h
  join routers r on r.id = h.router_id
  join router_liveness l on l.router_id = h.router_id and l.has_pulse
  cross join m
  left join organization_health_thresholds ot on ot.organization_id = r.organization_id
  left join router_health_thresholds rt on rt.router_id = h.router_id
)
select c.router_id, c.organization_id, c.name, c.identity, c.measure, c.value, c.threshold,
  ${ms("s.above_since", "above_ms")}, ${ms("s.below_since", "below_ms")}, s.fault_id
from c left join router_health_states s on s.router_id = c.router_id and s.measure = c.measure
where s.router_id is not null
  or (jsonb_typeof(c.threshold) = 'object' and c.value > (c.threshold ->> 'above')::float8)`;

const OPEN_SQL = `
with v as (select * from unnest($1::uuid[], $2::text[], $3::text[], $4::float8[]) as v(router_id, cause, message, created_ms)),
ins as (
  insert into router_faults (id, router_id, type, severity, message, cause, status, created_at)
  select gen_random_uuid(), v.router_id, 'resource', 'warning', v.message, v.cause, 'ongoing', to_timestamp(v.created_ms / 1000.0)
  from v join routers r on r.id = v.router_id
  on conflict (router_id, cause) where status = 'ongoing' and type = 'resource' do nothing
  returning id, router_id, cause, created_at
)
select id, router_id, cause, true as opened, ${ms("created_at", "created_ms")} from ins
union all
select f.id, f.router_id, f.cause, false as opened, ${ms("f.created_at", "created_ms")}
from router_faults f join v on f.router_id = v.router_id and f.cause = v.cause
where f.type = 'resource' and f.status = 'ongoing'`;

const COMPLETE_SQL = `
update router_faults f set status = 'completed', resolved_at = to_timestamp($2::float8 / 1000.0),
  duration_seconds = greatest(0, floor($2::float8 / 1000.0 - extract(epoch from f.created_at)))::int
where f.id = any($1::uuid[]) and f.type = 'resource' and f.status = 'ongoing'
returning f.id, f.router_id, f.cause, ${ms("f.created_at", "created_ms")}, f.duration_seconds`;

const SAVE_SQL = `
insert into router_health_states (router_id, measure, above_since, below_since, fault_id)
select v.router_id, v.measure, to_timestamp(v.above_ms / 1000.0), to_timestamp(v.below_ms / 1000.0), v.fault_id
from unnest($1::uuid[], $2::text[], $3::float8[], $4::float8[], $5::uuid[]) as v(router_id, measure, above_ms, below_ms, fault_id)
join routers r on r.id = v.router_id
on conflict (router_id, measure) do update set
  above_since = excluded.above_since, below_since = excluded.below_since, fault_id = excluded.fault_id`;

const FORGET_SQL = `
delete from router_health_states s using unnest($1::uuid[], $2::text[]) as v(router_id, measure)
where s.router_id = v.router_id and s.measure = v.measure`;

const faultRow = (row: Row, opened: boolean): ResourceFaultRecord => ({
  id: String(row.id),
  routerId: String(row.router_id),
  measure: String(row.cause),
  opened,
  createdAt: new Date(toNumber(row.created_ms)),
  durationSeconds:
    row.duration_seconds === null || row.duration_seconds === undefined ? null : toNumber(row.duration_seconds),
});

/**
 * The resource evaluator's reads and writes (docs/api.md "Health thresholds"): the candidates of
 * a sweep, `resource` faults opened and completed, and `router_health_states`. Set-based: a
 * statement per kind of write, whatever the number of routers.
 */
export class ResourceFaultsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /** One evaluator at a time across processes: false when another holds the sweep (transaction-scoped). */
  async tryLock(): Promise<boolean> {
    const [row] = await this.#query<Row>("select pg_try_advisory_xact_lock($1) as ok", [EVALUATE_LOCK_KEY]);
    return row?.ok === true;
  }

  async candidates(defaults: StoredThresholds): Promise<ResourceCandidate[]> {
    const rows = await this.#query<Row>(CANDIDATES_SQL, [JSON.stringify(defaults)]);
    return rows.map((row) => {
      const t = row.threshold === null || row.threshold === undefined ? null : json<unknown>(row.threshold);
      const threshold =
        typeof t === "object" && t !== null && "above" in t && "for_seconds" in t
          ? { above: toNumber(t.above), forSeconds: toNumber(t.for_seconds) }
          : null;
      return {
        routerId: String(row.router_id),
        organizationId: String(row.organization_id),
        name: row.name === null || row.name === undefined ? "" : String(row.name),
        identity: row.identity === null || row.identity === undefined ? null : String(row.identity),
        measure: String(row.measure),
        value: row.value === null || row.value === undefined ? null : toNumber(row.value),
        threshold,
        aboveSince: dateOrNull(row.above_ms),
        belowSince: dateOrNull(row.below_ms),
        faultId: row.fault_id === null || row.fault_id === undefined ? null : String(row.fault_id),
      };
    });
  }

  /** Opens these faults; one already ongoing for the router and measure is answered, not doubled. */
  async open(faults: readonly NewResourceFault[]): Promise<ResourceFaultRecord[]> {
    if (faults.length === 0) return [];
    const rows = await this.#query<Row>(OPEN_SQL, [
      faults.map((f) => f.routerId),
      faults.map((f) => f.measure),
      faults.map((f) => f.message),
      faults.map((f) => f.createdAt.getTime()),
    ]);
    return rows.map((row) => faultRow(row, row.opened === true));
  }

  async complete(faultIds: readonly string[], at: Date): Promise<ResourceFaultRecord[]> {
    if (faultIds.length === 0) return [];
    const rows = await this.#query<Row>(COMPLETE_SQL, [faultIds, at.getTime()]);
    return rows.map((row) => faultRow(row, false));
  }

  async save(states: readonly ResourceStateRecord[]): Promise<void> {
    if (states.length === 0) return;
    await this.#query(SAVE_SQL, [
      states.map((s) => s.routerId),
      states.map((s) => s.measure),
      states.map((s) => s.aboveSince?.getTime() ?? null),
      states.map((s) => s.belowSince?.getTime() ?? null),
      states.map((s) => s.faultId),
    ]);
  }

  async forget(keys: ReadonlyArray<{ routerId: string; measure: string }>): Promise<void> {
    if (keys.length === 0) return;
    await this.#query(FORGET_SQL, [keys.map((k) => k.routerId), keys.map((k) => k.measure)]);
  }
}
