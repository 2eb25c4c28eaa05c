import { hash } from "node:crypto";
import { coverageOnStart, type HeartbeatCoverageState } from "@fleet/shared";
import type { Database } from "../database.ts";
import { type Query, queryOf } from "../database.ts";
import {
  COVERAGE_COLUMNS,
  type CoverageRecord,
  coverageFromRow,
  type FaultRecord,
  faultFromRow,
} from "./routers.repository.ts";
import { LIVENESS_ROOM_BYTES } from "../migrations/20261128-035-liveness-room.migration.ts";
import { binaryArray, plainArray, textArray } from "./pg-arrays.ts";
import { HEALTH_MEASURES, type HealthValues } from "./router-health.repository.ts";
import { toNumber } from "./sql-values.ts";

/** A router a heartbeat token belongs to. */
export interface TokenOwner {
  routerId: string;
  teamId: string;
  /**
   * The management tunnel address assigned at enrollment (null: none yet). Cached with the token so
   * the daemon compares a reported `tunnel_ip` with it at no cost (docs/api.md "Routers and heartbeats").
   */
  tunnelIp: string | null;
  /**
   * The WireGuard key bound to the router (docs/routeros.md "The management tunnel"; null: none yet),
   * cached with the token so a heartbeat repeating it costs a string compare. The daemon sets it
   * once its own binding succeeded.
   */
  wireguardKey?: string | null;
  /**
   * The hash the router was found by. A heartbeat is written only while it is still the router's
   * (a re-adoption replaces it), and sockets opened with a replaced token are told apart by it.
   */
  tokenHash: string;
  /**
   * The router has an adoption URL no heartbeat spent yet (docs/routeros.md "Adoption"): its next
   * heartbeat spends it before the ack. False for nearly every router, so a beat costs nothing more.
   */
  adoptionOpen?: boolean;
}

/** One router's latest heartbeat of a flush window (docs/api.md "Routers and heartbeats"). Undefined/null: not reported. */
export interface HeartbeatWrite {
  routerId: string;
  /** The hash of the token the heartbeat was made with: written only while it is the router's. */
  tokenHash: string;
  seenAt: Date;
  peer: string | null;
  identity?: string | null | undefined;
  serialNumber?: string | null | undefined;
  softwareVersion?: string | null | undefined;
  softwareId?: string | null | undefined;
  model?: string | null | undefined;
  boardName?: string | null | undefined;
  hardwareboard?: boolean | null | undefined;
  uptimeSeconds?: number | null | undefined;
  metadata?: Record<string, unknown> | null | undefined;
  /**
   * The router's latest health values and when they were reported (docs/api.md "Health"), written
   * into the liveness row by the same update (a measure given as null keeps its value; values
   * older than the row's are not written). Undefined: the heartbeat reported none.
   */
  health?: { atMs: number; values: HealthValues } | undefined;
  /**
   * Not written: when several heartbeats waited in the daemon's buffer as this one write (a
   * database outage), the first one's time and the silences between them, so the downtime and
   * faults they close are judged on what the router did (docs/architecture.md).
   */
  firstSeenAt?: Date | undefined;
  silences?: Array<{ from: Date; to: Date }> | undefined;
}

/** What the router looked like before the heartbeat landed: the daemon derives faults and downtime from it. */
export interface AppliedHeartbeat {
  routerId: string;
  teamId: string;
  previousHasPulse: boolean;
  previousSeenAt: Date | null;
}

/** A heartbeat made with a token that is no longer its router's (re-adoption replaced it). */
export interface ReplacedToken {
  routerId: string;
  tokenHash: string;
}

/**
 * What one flush's statement reports. `notable`: the routers whose heartbeat may flip their pulse,
 * close downtime or end a fault (no pulse before, never seen, or a gap of at least the quiet gap),
 * with their state before it. `gone`: routers whose row no longer exists (nothing was written).
 * `replaced`: heartbeats made with a token the router no longer has (nothing was written).
 * A router beating on time is in none: at the steady cadence a flush reads back nothing.
 */
export interface HeartbeatsApplied {
  notable: AppliedHeartbeat[];
  gone: string[];
  replaced: ReplacedToken[];
}

export interface DowntimeWrite {
  routerId: string;
  hour: Date;
  seconds: number;
}

/**
 * A fault opened or completed by the daemon, with its router's team (status events) and
 * organization (the audit entry its service writes).
 */
export type OwnedFault = FaultRecord & { teamId: string; organizationId: string };

export interface FaultCompletion {
  routerId: string;
  resolvedAt: Date;
  cause: string;
}

/** A router the sweeper found past its threshold, locked until the sweep's transaction ends. */
export interface DueRouter {
  routerId: string;
  teamId: string;
  name: string;
  identity: string;
  lastSeenAt: Date;
}

export interface NewFault {
  routerId: string;
  message: string;
  createdAt: Date;
}

export interface SweepParams {
  now: Date;
  intervalMs: number;
  missedHeartbeats: number;
  /** Added to the threshold so a heartbeat acknowledged but not yet flushed cannot lose a race. */
  graceMs: number;
  /** Jitter tolerance of the restart rule (see router-health.ts). */
  toleranceMs: number;
  limit: number;
  /**
   * False: the caller knows no router can be due yet (see SweepMemo in the daemon's fault sweeper);
   * the sweep then only marks the daemons alive and reads neither the oldest pulse nor the due
   * routers, sparing a scan of router_liveness. Default true.
   */
  scan?: boolean;
  /**
   * The sweeping process's own daemon row (docs/architecture.md "How a heartbeat travels", step 5):
   * marked written through `now` when `caughtUp` (none of its writes is failing), and no router is
   * judged past the oldest daemon row plus `slackMs`: a daemon whose writes fail (a database outage)
   * stops moving its row, so routers whose heartbeats wait in its buffer are not judged until they
   * land. A row stale for `dropAfterMs` is a daemon that died without closing: it is dropped.
   */
  daemon?: { id: string; caughtUp: boolean; slackMs: number; dropAfterMs: number };
}

export interface SweepTransaction {
  coverage: CoverageRecord;
  due: DueRouter[];
  /**
   * The oldest `last_seen_at` of a router with a pulse, read before `due` (null: none). No router
   * can be due before it plus the threshold: `last_seen_at` only moves forward, a pulse comes back
   * only with a fresh heartbeat, and coverage gaps only move the effective time later.
   */
  oldestSeenAt: Date | null;
  /** False when the sweep did not read (`scan: false`): `due` is empty and `oldestSeenAt` null. */
  scanned: boolean;
  /** Judged only up to here (a daemon's writes lag: see SweepParams.daemon); null: up to `now`. */
  heldAt: Date | null;
  /** Flips has_pulse and opens the faults; a router with an ongoing fault is skipped. */
  open(faults: readonly NewFault[]): Promise<OwnedFault[]>;
  /** The sweep's transaction, for what the sweeper writes with the faults (their audit entries). */
  query: Query;
}

// Any fixed number; sweepers of every daemon process take turns on it.
const SWEEP_LOCK_KEY = 727_274_005;
// Rows per statement on PGlite: it runs on the calling thread, and a 10k-row statement blocks it
// for about 100 ms, so big flushes are cut and the event loop breathes between pieces.
const PGLITE_CHUNK = 2_000;
const POSTGRES_CHUNK = 20_000;

// The flush's statements and the daemons' sweeps commit without waiting for the WAL to reach the
// disk (`synchronous_commit` off for their own transaction only; the WAL writer syncs it within
// 3 x wal_writer_delay, 600 ms by default). Heartbeats are acknowledged before they are written
// anyway: a crash of PostgreSQL can lose the last moment of liveness, which the next heartbeat
// writes again, never a fault, its audit entry or downtime (those commit as usual). Waiting for the
// disk at every flush was a third of the database's CPU per heartbeat at 83 rows a flush
// (bench/flush-statement-bench.ts; docs/scale.md). The CTE is materialized and read by the input
// rows, so it runs once, before anything is written.
const COMMIT_ASYNC = "set_config('synchronous_commit', 'off', true)";
const ASYNC_COMMIT = `async_commit as materialized (select ${COMMIT_ASYNC})`;
/** Marks the daemons alive at $1 (ms) with the interval $2 (the sweeps' statements). */
const MARK_ALIVE =
  "update heartbeat_coverage set alive_at = greatest(alive_at, to_timestamp($1::float8 / 1000.0)), interval_ms = $2::int";

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;

// A flush is one statement at the steady cadence (FAST_SQL) and a second one for the rows it could
// not take (APPLY_SQL). Both write a heartbeat only while the token it was made with is still the
// router's: a re-adoption replaces the token, and a heartbeat with the old one must neither write
// nor use up the new adoption URL, whatever a daemon still has cached (docs/routeros.md "Adoption").
// Only the rows the daemon has work for come back: a router that had no pulse or had never been
// seen, a gap of at least the writer's "quiet gap", or a row not written (the router is gone or its
// token was replaced). At the steady cadence a flush returns nothing.

// The quiet gap is compared as timestamps: `extract(epoch ...)` is numeric, and numeric arithmetic
// on every row was a fifth of the steady statement's cost (333 rows a flush: 10.6-13.6 -> 8.6-8.8
// µs per heartbeat, bench/flush-statement-bench.ts). `to_timestamp` rounds to the microsecond as
// the write did, so the gap's edge is exact to the millisecond.

// The steady cadence, on `router_liveness` alone: a router whose row holds the token the heartbeat
// was made with (`heartbeat_token_hash`, kept in step with `routers` by a trigger, migration 034)
// and the digest of the same reported facts as the row's last full write (`facts_digest`: the facts
// are in `routers` already). One UPDATE of the narrow row, HOT (no index covers what it changes),
// which keeps the values it replaces in `previous_*`: RETURNING then gives the state before the
// heartbeat without a second lookup of the row (the statement's cost per row halved on PostgreSQL
// 15, docs/scale.md). `routers` is read only for the rows that come back (their team), one index
// lookup each.
// No `l.router_id = any($1)` beside the join (it was there until 2026-11-28): the prepared
// statement's generic plan assumes 10 input rows and takes a nested loop whose inner index scan
// then carried both conditions, so every row re-read and re-sorted the whole id array: quadratic,
// 2-3x the flush's cost at 167 rows (docs/scale.md "The model"). The generic plan is one
// primary-key lookup per row at every table size; a custom plan (a connection's first five
// executions) may hash a small table instead, which costs little while it is small.
// `missed`: every other row (no liveness row yet, a replaced token, a gone router, new facts), which
// APPLY_SQL then takes; nothing was written for them here. Only the columns it needs travel.
const FAST_SQL = `
with ${ASYNC_COMMIT}, v as (
  select v.* from async_commit cross join
    unnest($1::uuid[], $2::float8[], $3::text[], $4::bigint[], $5::text[], $6::bigint[])
    as v(id, seen_ms, peer, uptime, token_hash, facts_digest)
), f as (
  update router_liveness l set
    previous_has_pulse = l.has_pulse,
    previous_seen_at = l.last_seen_at,
    has_pulse = true,
    last_seen_at = greatest(l.last_seen_at, to_timestamp(v.seen_ms / 1000.0)),
    last_seen_from = coalesce(v.peer, l.last_seen_from),
    uptime_seconds = coalesce(v.uptime, l.uptime_seconds),
    room = null
  from v
  where l.router_id = v.id and l.heartbeat_token_hash = v.token_hash and l.facts_digest = v.facts_digest
  returning l.router_id, l.previous_has_pulse, l.previous_seen_at, v.seen_ms
)
select f.router_id as id, false as missed, (select r.team_id from routers r where r.id = f.router_id) as team_id,
  coalesce(f.previous_has_pulse, false) as previous_has_pulse, ${ms("f.previous_seen_at", "previous_seen_ms")}
from f
where f.previous_has_pulse is not true or f.previous_seen_at is null
  or f.previous_seen_at <= to_timestamp((f.seen_ms - $7) / 1000.0)
union all
select v.id, true, null, null, null from v where not exists (select 1 from f where f.router_id = v.id)`;

// The latest health values a heartbeat carries, set on the liveness row (alias `l`) by its own
// update (migration 170): no second statement and no second row per heartbeat. Values older than
// the row's (another daemon process wrote newer ones) are not written; a measure not reported keeps
// its value. `at`: when the values were reported; `value`: a measure's input, by input name and column.
const HEALTH_MEASURE_COLUMNS = [
  ["cpu", "cpu_load"],
  ["mem", "memory_used_percent"],
  ["disk", "disk_used_percent"],
  ["temp", "temperature"],
  ["volt", "voltage"],
  ["loss", "ping_loss_percent"],
  ["rtt", "ping_rtt_ms"],
] as const;
const healthSet = (at: string, value: (input: string, column: string) => string) =>
  [
    `health_reported_at = greatest(l.health_reported_at, ${at})`,
    ...HEALTH_MEASURE_COLUMNS.map(
      ([input, column]) =>
        `${column} = case when ${at} < l.health_reported_at then l.${column} else coalesce(${value(input, column)}, l.${column}) end`,
    ),
  ].join(",\n    ");
const HEALTH_INPUT = "$timestamptz[], $real[], $real[], $real[], $real[], $real[], $real[], $real[]";
const HEALTH_COLUMNS = `h_at, ${HEALTH_MEASURE_COLUMNS.map(([input]) => input).join(", ")}`;
const numbered = (template: string, first: number) => {
  let n = first;
  return template.replace(/\$(?=[a-z])/g, () => `$${n++}::`);
};

// FAST_SQL for a chunk in which some heartbeat carries health: the same update, which also sets the
// latest values ($8-$15). A chunk without health takes FAST_SQL, whose rows carry nothing more.
const FAST_HEALTH_SQL = FAST_SQL.replace("$6::bigint[])", `$6::bigint[], ${numbered(HEALTH_INPUT, 8)})`)
  .replace(
    "as v(id, seen_ms, peer, uptime, token_hash, facts_digest)",
    `as v(id, seen_ms, peer, uptime, token_hash, facts_digest, ${HEALTH_COLUMNS})`,
  )
  .replace(
    "    room = null\n  from v",
    `    room = null,\n    ${healthSet("v.h_at", (input) => `v.${input}`)}\n  from v`,
  );

// Every column of a heartbeat, for APPLY_SQL. $14: the hash of the token it was made with; $15: the
// digest of its reported facts (factsDigest); $16-$23: its latest health values (see healthSet).
const INPUT_CTE = `
with ${ASYNC_COMMIT}, v as (
  select v.* from async_commit cross join unnest($1::uuid[], $2::float8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
    $8::text[], $9::text[], $10::boolean[], $11::bigint[], $12::jsonb[], $14::text[], $15::bigint[],
    ${numbered(HEALTH_INPUT, 16)})
    as v(id, seen_ms, peer, identity, serial_number, software_version, software_id, model, board_name,
      hardwareboard, uptime, metadata, token_hash, facts_digest, ${HEALTH_COLUMNS})
)`;

// Whether a heartbeat reports a fact `routers` (alias r) does not hold yet.
const FACTS_CHANGED = `(v.identity is not null and v.identity is distinct from r.identity)
      or (v.serial_number is not null and v.serial_number is distinct from r.serial_number)
      or (v.software_version is not null and v.software_version is distinct from r.software_version)
      or (v.software_id is not null and v.software_id is distinct from r.software_id)
      or (v.model is not null and v.model is distinct from r.model)
      or (v.board_name is not null and v.board_name is distinct from r.board_name)
      or (v.hardwareboard is not null and v.hardwareboard is distinct from r.hardwareboard)
      or (v.metadata is not null and (case
        when pg_column_size(r.reported_metadata || v.metadata) > 16384 then v.metadata
        else r.reported_metadata || v.metadata end) is distinct from r.reported_metadata)`;

// Everything FAST_SQL left. Liveness is an upsert into the narrow `router_liveness`, which records
// the token and the facts' digest for FAST_SQL; `routers` is written only for the rows whose reported
// facts differ from what it holds (`a.changed`). `a` locks the routers rows it reads (FOR NO KEY
// UPDATE, re-read if they changed meanwhile): a re-adoption committed while this statement runs is
// waited for and its new token seen, so the old token never lands in the liveness row (where
// FAST_SQL would then accept it), and two daemon processes writing one router's facts take turns
// (in id order, so two flushes that share routers cannot deadlock on them).
// The previous state comes from `o`, which reads the statement's snapshot (not the upsert's result).
// A fault the sweeper opens concurrently may be missed by `o`; the writer therefore also completes
// faults for every router whose silence was long enough to have one (see HeartbeatAftermath).
const APPLY_SQL = `${INPUT_CTE}, a as (
  select v.id, v.seen_ms, v.peer, v.uptime, v.token_hash, v.facts_digest, ${HEALTH_COLUMNS.split(", ")
    .map((c) => `v.${c}`)
    .join(", ")},
    r.team_id, ${FACTS_CHANGED} as changed
  from v join routers r on r.id = v.id and r.heartbeat_token_hash = v.token_hash
  order by r.id
  for no key update of r
), l as (
  insert into router_liveness as l (router_id, has_pulse, last_seen_at, last_seen_from, uptime_seconds,
    heartbeat_token_hash, facts_digest, room, health_reported_at, cpu_load, memory_used_percent,
    disk_used_percent, temperature, voltage, ping_loss_percent, ping_rtt_ms)
  select a.id, true, to_timestamp(a.seen_ms / 1000.0), a.peer, a.uptime, a.token_hash, a.facts_digest,
    repeat(' ', ${LIVENESS_ROOM_BYTES}), a.h_at, a.cpu, a.mem, a.disk, a.temp, a.volt, a.loss, a.rtt from a
  on conflict (router_id) do update set
    previous_has_pulse = l.has_pulse,
    previous_seen_at = l.last_seen_at,
    has_pulse = true,
    last_seen_at = greatest(l.last_seen_at, excluded.last_seen_at),
    last_seen_from = coalesce(excluded.last_seen_from, l.last_seen_from),
    uptime_seconds = coalesce(excluded.uptime_seconds, l.uptime_seconds),
    heartbeat_token_hash = excluded.heartbeat_token_hash,
    facts_digest = excluded.facts_digest,
    room = null,
    ${healthSet("excluded.health_reported_at", (_, column) => `excluded.${column}`)}
), u as (
  update routers r set
    identity = coalesce(v.identity, r.identity),
    serial_number = coalesce(v.serial_number, r.serial_number),
    software_version = coalesce(v.software_version, r.software_version),
    software_id = coalesce(v.software_id, r.software_id),
    model = coalesce(v.model, r.model),
    board_name = coalesce(v.board_name, r.board_name),
    hardwareboard = coalesce(v.hardwareboard, r.hardwareboard),
    reported_metadata = case
      when v.metadata is null then r.reported_metadata
      when pg_column_size(r.reported_metadata || v.metadata) > 16384 then v.metadata
      else r.reported_metadata || v.metadata end
  from v join a on a.id = v.id and a.changed
  where r.id = v.id and r.heartbeat_token_hash = v.token_hash
)
select v.id, v.token_hash, a.id is null as refused,
  a.id is null and not exists (select 1 from routers x where x.id = v.id) as gone,
  a.team_id, coalesce(o.has_pulse, false) as previous_has_pulse, ${ms("o.last_seen_at", "previous_seen_ms")}
from v left join a on a.id = v.id left join router_liveness o on o.router_id = v.id
where a.id is null or o.has_pulse is not true or o.last_seen_at is null
  or o.last_seen_at <= to_timestamp((v.seen_ms - $13) / 1000.0)`;

/** The flush's two statements, for tests that read their plans (heartbeats.repository.test.ts). */
export const FLUSH_STATEMENTS = { fast: FAST_SQL, fastHealth: FAST_HEALTH_SQL, apply: APPLY_SQL } as const;

const DOWNTIME_SQL = `
insert into router_downtime_hours (router_id, hour, seconds_down)
select v.router_id, to_timestamp(v.hour_ms / 1000.0), v.seconds
from unnest($1::uuid[], $2::float8[], $3::int[]) as v(router_id, hour_ms, seconds)
join routers r on r.id = v.router_id
on conflict (router_id, hour) do update
  set seconds_down = least(3600, router_downtime_hours.seconds_down + excluded.seconds_down)`;

const COMPLETE_SQL = `
with v as (select * from unnest($1::uuid[], $2::float8[], $3::text[]) as v(router_id, resolved_ms, cause)),
done as (
  update router_faults f set
    status = 'completed',
    resolved_at = to_timestamp(v.resolved_ms / 1000.0),
    duration_seconds = greatest(0, floor(v.resolved_ms / 1000.0 - extract(epoch from f.created_at)))::int,
    cause = v.cause
  from v
  where f.router_id = v.router_id and f.status = 'ongoing' and f.type = 'site'
  returning f.*
)
select f.id, f.router_id, f.type, f.severity, f.message, f.cause, f.status,
  ${ms("f.created_at", "created_ms")}, ${ms("f.resolved_at", "resolved_ms")}, f.duration_seconds,
  r.team_id, r.organization_id
from done f left join routers r on r.id = f.router_id`;

// Routers past their threshold. The restart rule (effectiveLastSeen in router-health.ts) is
// repeated here so that excused routers are neither locked nor counted against the limit. No index
// serves "last seen at least the threshold ago" (an index on last_seen_at would cost an entry per
// heartbeat): the sweep reads the narrow liveness table whole, and sweeps only when a router can be due.
const DUE_SQL = `
select l.router_id as id, r.team_id, r.name, r.identity, ${ms("l.last_seen_at", "last_seen_ms")}
from router_liveness l join routers r on r.id = l.router_id
where l.has_pulse and l.last_seen_at is not null
  and l.last_seen_at <= to_timestamp(($1::float8 - $2::float8 * $3::float8) / 1000.0)
  and (case
        when $5::float8 is not null
          and l.last_seen_at >= to_timestamp(($5::float8 - $3::float8 - $6::float8) / 1000.0)
          and l.last_seen_at < to_timestamp($4::float8 / 1000.0)
        then to_timestamp($4::float8 / 1000.0)
        else l.last_seen_at end) <= to_timestamp(($1::float8 - $2::float8 * $3::float8 - $7::float8) / 1000.0)
order by l.last_seen_at
limit $8::int
for update of l skip locked`;

/**
 * A CTE of each sweep's first statement that marks the sweeping daemon's own row written through
 * `now` (ms); never moved back (clocks of processes differ a little). Nothing when `id` is null (no
 * daemon, or its writes fail). It runs whether or not the sweep gets its lock.
 */
const markDaemon = (now: string, id: string) => `daemon_mark as (
  insert into heartbeat_daemons (id, written_through, stale_since)
  select ${id}::uuid, to_timestamp(${now}::float8 / 1000.0), null where ${id}::uuid is not null
  on conflict (id) do update set written_through = greatest(heartbeat_daemons.written_through, excluded.written_through), stale_since = null)`;
/** The row `markDaemon` marks: this daemon's while none of its writes fails (SweepParams.daemon). */
const markedDaemon = (params: SweepParams): string | null => (params.daemon?.caughtUp ? params.daemon.id : null);

// $1 now (ms), $2 slack, $3 drop after. The CTEs and the final select read the same snapshot, so
// the select leaves out by itself the rows the statement drops.
const HELD_AT_SQL = `
with noted as (
  update heartbeat_daemons set stale_since = to_timestamp($1::float8 / 1000.0)
  where stale_since is null and written_through < to_timestamp(($1::float8 - $2::float8) / 1000.0)
),
dropped as (
  delete from heartbeat_daemons where stale_since < to_timestamp(($1::float8 - $3::float8) / 1000.0)
)
select (extract(epoch from min(written_through)) * 1000 + $2::float8)::float8 as held_ms
from heartbeat_daemons where stale_since is null or stale_since >= to_timestamp(($1::float8 - $3::float8) / 1000.0)`;

const OPEN_SQL = `
with v as (select * from unnest($1::uuid[], $2::text[], $3::float8[]) as v(router_id, message, created_ms)),
flipped as (
  update router_liveness l set has_pulse = false from v where l.router_id = v.router_id returning l.router_id as id
),
opened as (
  insert into router_faults (id, router_id, type, severity, message, cause, status, created_at)
  select gen_random_uuid(), v.router_id, 'site', 'error', v.message, 'Unknown', 'ongoing', to_timestamp(v.created_ms / 1000.0)
  from v join flipped f on f.id = v.router_id
  on conflict (router_id) where status = 'ongoing' and type = 'site' do nothing
  returning *
)
select o.id, o.router_id, o.type, o.severity, o.message, o.cause, o.status, ${ms("o.created_at", "created_ms")},
  null::float8 as resolved_ms, o.duration_seconds, r.team_id, r.organization_id
from opened o left join routers r on r.id = o.router_id`;

const ownedFault = (row: Record<string, unknown>): OwnedFault => ({
  ...faultFromRow(row),
  teamId: row.team_id === null || row.team_id === undefined ? "" : String(row.team_id),
  organizationId: row.organization_id === null || row.organization_id === undefined ? "" : String(row.organization_id),
});

const chunks = <T>(items: readonly T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
};

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

const text = (value: string | null | undefined): string | null => (value === undefined ? null : value);

const uptime = (w: HeartbeatWrite): number | null =>
  w.uptimeSeconds === null || w.uptimeSeconds === undefined ? null : Math.floor(w.uptimeSeconds);

const metadataText = (w: HeartbeatWrite): string | null => (w.metadata ? JSON.stringify(w.metadata) : null);

/**
 * The digest of the reported facts a heartbeat carries (what APPLY_SQL writes to `routers`; a fact
 * not reported counts as null): the first 8 bytes of a SHA-256, which are the binary form of the
 * signed 64-bit integer the liveness row keeps (sent as is, see binaryArray). Equal digests mean the same facts, so a router that keeps reporting what its last full
 * write applied takes FAST_SQL; a different digest (a new fact, or one reported no more) takes
 * APPLY_SQL once, which compares the facts with `routers` itself. A collision could only keep one
 * router's own new facts out of `routers` until they change again. One-shot `hash`: no Hash object
 * per row (1.8 -> 1.3 µs).
 */
export const factsDigest = (w: HeartbeatWrite): Buffer =>
  hash(
    "sha256",
    JSON.stringify([
      text(w.identity),
      text(w.serialNumber),
      text(w.softwareVersion),
      text(w.softwareId),
      text(w.model),
      text(w.boardName),
      w.hardwareboard ?? null,
      metadataText(w),
    ]),
    "buffer",
  ).subarray(0, 8);

/**
 * The parameters of FAST_SQL: only what a liveness row takes, the token and the digest. In
 * PostgreSQL's binary array format: the database parses no text for them (binaryArray).
 */
const fastParams = (part: readonly HeartbeatWrite[], digests: readonly Buffer[], quietGapMs: number): unknown[] => [
  binaryArray(
    "uuid",
    part.map((w) => w.routerId),
  ),
  binaryArray(
    "float8",
    part.map((w) => w.seenAt.getTime()),
  ),
  binaryArray(
    "text",
    part.map((w) => w.peer),
  ),
  binaryArray("int8", part.map(uptime)),
  binaryArray(
    "text",
    part.map((w) => w.tokenHash),
  ),
  binaryArray("int8", digests),
  quietGapMs,
];

/** Whether any heartbeat of `part` carries health (then FAST_HEALTH_SQL). */
const carriesHealth = (part: readonly HeartbeatWrite[]): boolean => {
  for (const w of part) if (w.health) return true;
  return false;
};

/** A measure as written (a value that is not a finite number, which validation refuses, as unknown: never a failed liveness write). */
const finiteOrNull = (value: number | null | undefined): number | null =>
  value === null || value === undefined || !Number.isFinite(value) ? null : value;

/** The latest health of each heartbeat, in binary (healthSet's inputs, in HEALTH_COLUMNS order). */
const healthParams = (part: readonly HeartbeatWrite[]): Buffer[] => [
  binaryArray(
    "timestamptz",
    part.map((w) => w.health?.atMs),
  ),
  ...HEALTH_MEASURES.map((measure) =>
    binaryArray(
      "float4",
      part.map((w) => finiteOrNull(w.health?.values[measure])),
    ),
  ),
];

/** The parameters of APPLY_SQL. */
const applyParams = (part: readonly HeartbeatWrite[], digests: readonly Buffer[], quietGapMs: number): unknown[] => [
  plainArray(part.map((w) => w.routerId)),
  plainArray(part.map((w) => w.seenAt.getTime())),
  textArray(part.map((w) => w.peer)),
  textArray(part.map((w) => text(w.identity))),
  textArray(part.map((w) => text(w.serialNumber))),
  textArray(part.map((w) => text(w.softwareVersion))),
  textArray(part.map((w) => text(w.softwareId))),
  textArray(part.map((w) => text(w.model))),
  textArray(part.map((w) => text(w.boardName))),
  plainArray(part.map((w) => w.hardwareboard ?? null)),
  plainArray(part.map(uptime)),
  textArray(part.map(metadataText)),
  quietGapMs,
  textArray(part.map((w) => w.tokenHash)),
  binaryArray("int8", digests),
  ...healthParams(part),
];

const notableFromRow = (
  routerId: string,
  teamId: string,
  row: { previous_has_pulse: boolean | null; previous_seen_ms: unknown },
): AppliedHeartbeat => ({
  routerId,
  teamId,
  previousHasPulse: row.previous_has_pulse === true,
  previousSeenAt:
    row.previous_seen_ms === null || row.previous_seen_ms === undefined
      ? null
      : new Date(toNumber(row.previous_seen_ms)),
});

/**
 * The heartbeat daemon's persistence: token lookups, the batched heartbeat upsert, downtime and
 * fault writes, the sweep, and the coverage record. Raw driver SQL: this is the hot path.
 */
export class HeartbeatsRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  get driver(): Database["driver"] {
    return this.#db.driver;
  }

  /** Rows per statement for this driver. */
  get chunkSize(): number {
    return this.#db.driver === "pglite" ? PGLITE_CHUNK : POSTGRES_CHUNK;
  }

  /** Owners of the given token hashes; unknown hashes are absent from the map. */
  async lookupTokens(hashes: readonly string[]): Promise<Map<string, TokenOwner>> {
    const rows = await this.#db.query<{
      hash: string;
      id: string;
      team_id: string;
      tunnel_ip: string | null;
      wireguard_key: string | null;
      adoption_open: boolean;
    }>(
      `select r.heartbeat_token_hash as hash, r.id, r.team_id, r.tunnel_ip, w.public_key as wireguard_key,
         exists (select 1 from router_adoptions a where a.router_id = r.id and a.spent_at is null) as adoption_open
       from routers r left join router_wireguard_peers w on w.router_id = r.id
       where r.heartbeat_token_hash = any($1::text[])`,
      [hashes],
      { prepare: "heartbeat_tokens" },
    );
    return new Map(
      rows.map((r) => [
        r.hash,
        {
          routerId: r.id,
          teamId: r.team_id,
          tunnelIp: r.tunnel_ip === null ? null : String(r.tunnel_ip),
          wireguardKey: r.wireguard_key ?? null,
          tokenHash: r.hash,
          adoptionOpen: r.adoption_open === true,
        },
      ]),
    );
  }

  /**
   * The first heartbeat made with the router's current token spends its adoption URLs
   * (docs/routeros.md "Adoption"); a token that is no longer the router's spends nothing.
   */
  async spendAdoption(routerId: string, tokenHash: string, at: Date): Promise<void> {
    await this.#db.query(
      `update router_adoptions set spent_at = to_timestamp($3::float8 / 1000.0)
       where router_id = $1::uuid and spent_at is null
         and exists (select 1 from routers r where r.id = $1::uuid and r.heartbeat_token_hash = $2)`,
      [routerId, tokenHash, at.getTime()],
    );
  }

  /**
   * One statement per chunk at the steady cadence, two when some rows need more than a liveness
   * update (a first heartbeat, a new fact, a replaced token, a gone router). Reports only the
   * routers the daemon has work for (see `HeartbeatsApplied`): a router that had a pulse and was
   * last seen less than `quietGapMs` before this heartbeat is written and not reported.
   */
  async applyHeartbeats(writes: readonly HeartbeatWrite[], quietGapMs: number): Promise<HeartbeatsApplied> {
    const result: HeartbeatsApplied = { notable: [], gone: [], replaced: [] };
    const parts = chunks(writes, this.chunkSize);
    for (const [index, part] of parts.entries()) {
      if (index > 0 && this.#db.driver === "pglite") await yieldToEventLoop();
      const digests = part.map(factsDigest);
      const health = carriesHealth(part);
      const fast = await this.#db.query<{
        id: string;
        missed: boolean;
        team_id: string | null;
        previous_has_pulse: boolean | null;
        previous_seen_ms: unknown;
      }>(
        health ? FAST_HEALTH_SQL : FAST_SQL,
        health
          ? [...fastParams(part, digests, quietGapMs), ...healthParams(part)]
          : fastParams(part, digests, quietGapMs),
        { prepare: health ? "heartbeats_fast_health" : "heartbeats_fast" },
      );
      const missed = new Set<string>();
      for (const row of fast) {
        if (row.missed) missed.add(row.id);
        else if (row.team_id !== null) result.notable.push(notableFromRow(row.id, row.team_id, row));
      }
      if (missed.size === 0) continue;
      const rest: HeartbeatWrite[] = [];
      const restDigests: Buffer[] = [];
      for (const [i, w] of part.entries()) {
        if (!missed.has(w.routerId)) continue;
        rest.push(w);
        restDigests.push(digests[i] as Buffer);
      }
      const rows = await this.#db.query<{
        id: string;
        token_hash: string;
        refused: boolean;
        gone: boolean;
        team_id: string | null;
        previous_has_pulse: boolean | null;
        previous_seen_ms: unknown;
      }>(APPLY_SQL, applyParams(rest, restDigests, quietGapMs), { prepare: "heartbeats_apply" });
      for (const row of rows) {
        if (row.gone) {
          result.gone.push(row.id);
          continue;
        }
        if (row.refused || row.team_id === null) {
          result.replaced.push({ routerId: row.id, tokenHash: row.token_hash });
          continue;
        }
        result.notable.push(notableFromRow(row.id, row.team_id, row));
      }
    }
    return result;
  }

  /** Adds seconds down per router and hour (rows for the same router and hour are summed first). */
  async recordDowntime(writes: readonly DowntimeWrite[]): Promise<void> {
    if (writes.length === 0) return;
    const merged = new Map<string, DowntimeWrite>();
    for (const w of writes) {
      const key = `${w.routerId}|${w.hour.getTime()}`;
      const current = merged.get(key);
      merged.set(key, current ? { ...current, seconds: current.seconds + w.seconds } : { ...w });
    }
    const rows = [...merged.values()].filter((w) => w.seconds > 0);
    if (rows.length === 0) return;
    for (const part of chunks(rows, this.chunkSize)) {
      await this.#db.query(DOWNTIME_SQL, [
        part.map((w) => w.routerId),
        part.map((w) => w.hour.getTime()),
        part.map((w) => Math.min(3_600, Math.round(w.seconds))),
      ]);
    }
  }

  /**
   * Completes the ongoing faults of these routers in the caller's transaction (`query`: the
   * resumption writes their audit entries in it); returns what was completed.
   */
  async completeFaults(query: Query, completions: readonly FaultCompletion[]): Promise<OwnedFault[]> {
    if (completions.length === 0) return [];
    const done: OwnedFault[] = [];
    for (const part of chunks(completions, this.chunkSize)) {
      const rows = await query<Record<string, unknown>>(COMPLETE_SQL, [
        part.map((c) => c.routerId),
        part.map((c) => c.resolvedAt.getTime()),
        part.map((c) => c.cause),
      ]);
      for (const row of rows) done.push(ownedFault(row));
    }
    return done;
  }

  /**
   * Called when a daemon starts, in its transaction: records an outage of every daemon when none
   * was alive within `gapLimitMs` (the restart rule), and the interval the daemons run at.
   */
  async startCoverage(query: Query, now: Date, gapLimitMs: number, intervalMs: number): Promise<CoverageRecord> {
    await query(
      `insert into heartbeat_coverage (id, covered_since, alive_at, outage_started_at, interval_ms)
       values (1, to_timestamp($1::float8 / 1000.0), to_timestamp($1::float8 / 1000.0), null, $2::int) on conflict (id) do nothing`,
      [now.getTime(), intervalMs],
    );
    const rows = await query<Record<string, unknown>>(
      `select ${COVERAGE_COLUMNS} from heartbeat_coverage where id = 1 for update`,
    );
    const row = rows[0];
    const current: HeartbeatCoverageState | null = row ? coverageFromRow(row) : null;
    const next = coverageOnStart(current, now, gapLimitMs);
    await query(
      `update heartbeat_coverage set covered_since = to_timestamp($1::float8 / 1000.0), alive_at = to_timestamp($2::float8 / 1000.0),
         outage_started_at = to_timestamp($3::float8 / 1000.0), interval_ms = $4::int where id = 1`,
      [next.coveredSince.getTime(), next.aliveAt.getTime(), next.outageStartedAt?.getTime() ?? null, intervalMs],
    );
    return { ...next, intervalMs };
  }

  /**
   * A scanning sweep, in the caller's transaction: only one daemon process sweeps at a time
   * (advisory lock), it marks the daemons alive, and `work` decides which due routers get a fault.
   * Null when another process holds the sweep (this daemon's row is marked all the same).
   */
  async sweepIn<T>(query: Query, params: SweepParams, work: (tx: SweepTransaction) => Promise<T>): Promise<T | null> {
    const daemon = params.daemon;
    // The sweep's own transaction commits asynchronously (ASYNC_COMMIT) unless it opens faults.
    const locked = await query<{ ok: boolean }>(
      `with ${markDaemon("$2", "$3")} select pg_try_advisory_xact_lock($1) as ok, ${COMMIT_ASYNC} as commit`,
      [SWEEP_LOCK_KEY, params.now.getTime(), markedDaemon(params)],
    );
    if (locked[0]?.ok !== true) return null;
    // The oldest pulse comes with the coverage (one round trip; a scan of the narrow liveness
    // table): the daemon sweeps less often while no router can be due.
    const coverageRows = await query<Record<string, unknown>>(
      `${MARK_ALIVE} where id = 1 returning ${COVERAGE_COLUMNS},
         (select ${ms("min(l.last_seen_at)", "m")} from router_liveness l where l.has_pulse) as oldest_seen_ms`,
      [params.now.getTime(), params.intervalMs],
    );
    const coverageRow = coverageRows[0];
    if (!coverageRow) return null;
    const coverage = coverageFromRow(coverageRow);
    const oldestSeenAt =
      coverageRow.oldest_seen_ms === null || coverageRow.oldest_seen_ms === undefined
        ? null
        : new Date(toNumber(coverageRow.oldest_seen_ms));
    const heldAt = daemon ? await this.#heldAt(query, params.now, daemon) : null;
    const judgedAt = heldAt && heldAt.getTime() < params.now.getTime() ? heldAt : null;
    const due = await this.#due(query, judgedAt ? { ...params, now: judgedAt } : params, coverage);
    return work({
      coverage,
      due,
      oldestSeenAt,
      scanned: true,
      heldAt: judgedAt,
      open: (faults) => this.#open(query, faults),
      query,
    });
  }

  /**
   * A sweep that reads nothing (`scan: false`, the steady state: no router can be due yet) only
   * marks the daemons alive: one prepared statement that marks this daemon's row, takes the sweep's
   * lock for its own implicit transaction and commits asynchronously (ASYNC_COMMIT), instead of a
   * transaction of four round trips. It finds no router, so `work` opens no fault. Null when another
   * process holds the sweep (this daemon's row is marked all the same).
   */
  async markAliveSweep<T>(params: SweepParams, work: (tx: SweepTransaction) => Promise<T>): Promise<T | null> {
    const rows = await this.#db.query<Record<string, unknown>>(
      `with lock as materialized (select pg_try_advisory_xact_lock($3) as ok, ${COMMIT_ASYNC} as commit),
       ${markDaemon("$1", "$4")}
       ${MARK_ALIVE} where id = 1 and (select ok from lock) returning ${COVERAGE_COLUMNS}`,
      [params.now.getTime(), params.intervalMs, SWEEP_LOCK_KEY, markedDaemon(params)],
      { prepare: "heartbeat_alive" },
    );
    const row = rows[0];
    if (!row) return null; // another process holds the sweep (or there is no coverage record)
    const query = queryOf(this.#db);
    return work({
      coverage: coverageFromRow(row),
      due: [],
      oldestSeenAt: null,
      scanned: false,
      heldAt: null,
      open: async (faults) => {
        if (faults.length > 0) throw new Error("a sweep that read no router cannot open faults");
        return [];
      },
      query,
    });
  }

  /**
   * The oldest daemon row plus the slack (null: no row). Rows stale past the slack are noted, and
   * those noted for `dropAfterMs` dropped (a daemon killed without closing) and no longer counted.
   */
  async #heldAt(query: Query, now: Date, daemon: NonNullable<SweepParams["daemon"]>): Promise<Date | null> {
    const rows = await query<{ held_ms: unknown }>(HELD_AT_SQL, [now.getTime(), daemon.slackMs, daemon.dropAfterMs]);
    const held = rows[0]?.held_ms;
    return held === null || held === undefined ? null : new Date(toNumber(held));
  }

  /** A daemon that closes takes its row with it: the sweepers stop waiting for its writes. */
  async removeDaemon(id: string): Promise<void> {
    await this.#db.query("delete from heartbeat_daemons where id = $1", [id]);
  }

  async #due(query: Query, p: SweepParams, coverage: CoverageRecord): Promise<DueRouter[]> {
    const rows = await query<{ id: string; team_id: string; name: string; identity: string; last_seen_ms: unknown }>(
      DUE_SQL,
      [
        p.now.getTime(),
        p.missedHeartbeats,
        p.intervalMs,
        coverage.coveredSince.getTime(),
        coverage.outageStartedAt?.getTime() ?? null,
        p.toleranceMs,
        p.graceMs,
        p.limit,
      ],
    );
    return rows.map((r) => ({
      routerId: r.id,
      teamId: r.team_id,
      name: r.name,
      identity: r.identity,
      lastSeenAt: new Date(toNumber(r.last_seen_ms)),
    }));
  }

  async #open(query: Query, faults: readonly NewFault[]): Promise<OwnedFault[]> {
    if (faults.length === 0) return [];
    // Faults and their audit entries are durable at commit, as every other write (see ASYNC_COMMIT).
    await query("select set_config('synchronous_commit', 'on', true)");
    const rows = await query<Record<string, unknown>>(OPEN_SQL, [
      faults.map((f) => f.routerId),
      faults.map((f) => f.message),
      faults.map((f) => f.createdAt.getTime()),
    ]);
    return rows.map(ownedFault);
  }

  /** The coverage record, for the daemon's own reads. */
  async coverage(): Promise<CoverageRecord | null> {
    const rows = await this.#db.query<Record<string, unknown>>(
      `select ${COVERAGE_COLUMNS} from heartbeat_coverage where id = 1`,
    );
    return rows[0] ? coverageFromRow(rows[0]) : null;
  }

  /** Faults still ongoing across all routers: the open-faults gauge (docs/operations.md "Metrics and probes"). */
  /** Routers with and without a pulse (the fleet's offline share, docs/operations.md "Metrics"). */
  async countRoutersByPulse(): Promise<{ online: number; offline: number }> {
    const rows = await this.#db.query<{ has_pulse: boolean; n: number }>(
      `select coalesce(l.has_pulse, false) as has_pulse, count(*)::int as n
       from routers r left join router_liveness l on l.router_id = r.id group by 1`,
    );
    return {
      online: rows.find((row) => row.has_pulse)?.n ?? 0,
      offline: rows.find((row) => !row.has_pulse)?.n ?? 0,
    };
  }

  async countOpenFaults(): Promise<number> {
    const [row] = await this.#db.query<{ n: number }>(
      "select count(*)::int as n from router_faults where status = 'ongoing'",
    );
    return row?.n ?? 0;
  }
}
