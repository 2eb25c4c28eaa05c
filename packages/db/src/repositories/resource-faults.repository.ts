import { sql } from "kysely";
import type { Query } from "../database.ts";
import type { StoredThresholds } from "./health-thresholds.repository.ts";

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

// Raw statements hand back the drivers' text for timestamps: they select epoch milliseconds instead.
const ms = (column: string, alias: string) => sql.raw(`(extract(epoch from ${column}) * 1000)::float8 as ${alias}`);
const dateOrNull = (value: number | null): Date | null => (value === null ? null : new Date(value));

// Any fixed number: the API processes' evaluators take turns on it.
const EVALUATE_LOCK_KEY = 727_274_038;

interface CandidateRow {
  router_id: string;
  organization_id: string;
  name: string | null;
  identity: string | null;
  measure: string;
  value: number | null;
  threshold: unknown;
  above_ms: number | null;
  below_ms: number | null;
  fault_id: string | null;
}

interface FaultRow {
  id: string;
  router_id: string;
  cause: string;
  opened: boolean;
  created_ms: number;
}

const faultFromRow = (
  row: { id: string; router_id: string; cause: string; duration_seconds?: number | null },
  createdAt: Date,
  opened: boolean,
): ResourceFaultRecord => ({
  id: row.id,
  routerId: row.router_id,
  measure: row.cause,
  opened,
  createdAt,
  durationSeconds: row.duration_seconds ?? null,
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
    // Raw: an advisory lock is a function call, not a table.
    const { rows } = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(${EVALUATE_LOCK_KEY}) as ok`.execute(
      this.#query.kysely,
    );
    return rows[0]?.ok === true;
  }

  /**
   * One statement per sweep (docs/api.md "Health thresholds"): the latest values of every router
   * with a pulse, five measures each, against the threshold that applies (coalesce: an explicit
   * JSON null at a level stops the fall-through; `real` values rounded to 2 decimals, as reported).
   * Only what can change comes back: a watched measure above its threshold, or a measure with state
   * (counting down or with an open fault). A sequential read of the one-row-per-router table and
   * primary-key probes of the thresholds and states: no index serves "above a per-organization
   * threshold", and the table is as narrow as the fleet.
   */
  async candidates(defaults: StoredThresholds): Promise<ResourceCandidate[]> {
    // Raw: a planner-conscious sweep over a VALUES list and jsonb paths, kept as measured.
    const { rows } = await sql<CandidateRow>`
      with m(measure) as (values ('cpu'), ('memory'), ('disk'), ('temperature'), ('ping_loss')),
      c as (
        select h.router_id, r.organization_id, r.name, r.identity, m.measure,
          round((case m.measure when 'cpu' then h.cpu_load when 'memory' then h.memory_used_percent
             when 'disk' then h.disk_used_percent when 'temperature' then h.temperature
             else h.ping_loss_percent end)::numeric, 2)::float8 as value,
          coalesce(rt.thresholds -> m.measure, ot.thresholds -> m.measure, ${JSON.stringify(defaults)}::jsonb -> m.measure) as threshold
        from router_liveness h
        join routers r on r.id = h.router_id
        cross join m
        left join organization_health_thresholds ot on ot.organization_id = r.organization_id
        left join router_health_thresholds rt on rt.router_id = h.router_id
        where h.has_pulse and h.health_reported_at is not null
      )
      select c.router_id, c.organization_id, c.name, c.identity, c.measure, c.value, c.threshold,
        ${ms("s.above_since", "above_ms")}, ${ms("s.below_since", "below_ms")}, s.fault_id
      from c left join router_health_states s on s.router_id = c.router_id and s.measure = c.measure
      where s.router_id is not null
        or (jsonb_typeof(c.threshold) = 'object' and c.value > (c.threshold ->> 'above')::float8)`.execute(
      this.#query.kysely,
    );
    return rows.map((row) => {
      const t = row.threshold;
      const threshold =
        typeof t === "object" && t !== null && "above" in t && "for_seconds" in t
          ? { above: Number(t.above), forSeconds: Number(t.for_seconds) }
          : null;
      return {
        routerId: row.router_id,
        organizationId: row.organization_id,
        name: row.name ?? "",
        identity: row.identity,
        measure: row.measure,
        value: row.value,
        threshold,
        aboveSince: dateOrNull(row.above_ms),
        belowSince: dateOrNull(row.below_ms),
        faultId: row.fault_id,
      };
    });
  }

  /** Opens these faults; one already ongoing for the router and measure is answered, not doubled. */
  async open(faults: readonly NewResourceFault[]): Promise<ResourceFaultRecord[]> {
    if (faults.length === 0) return [];
    // Raw: one statement text for any batch (unnest), answering the faults it opened and those already open.
    const { rows } = await sql<FaultRow>`
      with v as (
        select * from unnest(${faults.map((f) => f.routerId)}::uuid[], ${faults.map((f) => f.measure)}::text[],
          ${faults.map((f) => f.message)}::text[], ${faults.map((f) => f.createdAt.getTime())}::float8[])
          as v(router_id, cause, message, created_ms)
      ),
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
      where f.type = 'resource' and f.status = 'ongoing'`.execute(this.#query.kysely);
    return rows.map((row) => faultFromRow(row, new Date(row.created_ms), row.opened === true));
  }

  async complete(faultIds: readonly string[], at: Date): Promise<ResourceFaultRecord[]> {
    if (faultIds.length === 0) return [];
    const seconds = at.getTime() / 1000;
    const rows = await this.#query.kysely
      .updateTable("router_faults")
      .set({
        status: "completed",
        resolved_at: at,
        duration_seconds: sql<number>`greatest(0, floor(${seconds}::float8 - extract(epoch from created_at)))::int`,
      })
      .where("id", "=", (eb) => eb.fn.any(eb.val([...faultIds])))
      .where("type", "=", "resource")
      .where("status", "=", "ongoing")
      .returning(["id", "router_id", "cause", "created_at", "duration_seconds"])
      .execute();
    return rows.map((row) => faultFromRow(row, row.created_at, false));
  }

  async save(states: readonly ResourceStateRecord[]): Promise<void> {
    if (states.length === 0) return;
    // Raw: one statement text for any batch, its columns as arrays through unnest.
    await sql`
      insert into router_health_states (router_id, measure, above_since, below_since, fault_id)
      select v.router_id, v.measure, to_timestamp(v.above_ms / 1000.0), to_timestamp(v.below_ms / 1000.0), v.fault_id
      from unnest(${states.map((s) => s.routerId)}::uuid[], ${states.map((s) => s.measure)}::text[],
        ${states.map((s) => s.aboveSince?.getTime() ?? null)}::float8[], ${states.map((s) => s.belowSince?.getTime() ?? null)}::float8[],
        ${states.map((s) => s.faultId)}::uuid[]) as v(router_id, measure, above_ms, below_ms, fault_id)
      join routers r on r.id = v.router_id
      on conflict (router_id, measure) do update set
        above_since = excluded.above_since, below_since = excluded.below_since, fault_id = excluded.fault_id`.execute(
      this.#query.kysely,
    );
  }

  async forget(keys: ReadonlyArray<{ routerId: string; measure: string }>): Promise<void> {
    if (keys.length === 0) return;
    // Raw: one statement text for any batch, its keys as arrays through unnest.
    await sql`
      delete from router_health_states s
      using unnest(${keys.map((k) => k.routerId)}::uuid[], ${keys.map((k) => k.measure)}::text[]) as v(router_id, measure)
      where s.router_id = v.router_id and s.measure = v.measure`.execute(this.#query.kysely);
  }
}
