import { isUuid } from "@fleet/shared";
import type { FaultFields, HeartbeatCoverageState } from "@fleet/shared";
import { type Database, type Query, queryOf } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** A router as the API reads it (docs/api.md "Router", "Router Metadata"). */
export interface RouterRecord {
  id: string;
  organizationId: string;
  teamId: string;
  name: string;
  identity: string;
  serialNumber: string;
  softwareVersion: string;
  softwareId: string;
  model: string;
  boardName: string;
  hardwareboard: boolean;
  uptimeSeconds: number | null;
  hasPulse: boolean;
  lastSeenAt: Date | null;
  lastSeenFrom: string | null;
  tunnelIp: string | null;
  /** A WireGuard key is bound (docs/routeros.md "The management tunnel"); false: `tunnel_status` pending. */
  tunnelBound?: boolean;
  /** The hub's latest handshake with the router. */
  tunnelHandshakeAt?: Date | null;
  /** The router's latest answer at its tunnel address through the tunnel (the hub's probe). */
  tunnelAnsweredAt?: Date | null;
  reportedMetadata: Record<string, unknown>;
  userMetadata: Record<string, unknown>;
  tags: string[];
  createdAt: Date;
  /** The latest health values (docs/api.md "Health"); null: never reported. Absent where not read. */
  cpuLoad?: number | null;
  memoryUsedPercent?: number | null;
  temperature?: number | null;
}

/** A fault (docs/api.md "Fault"): the fields the shared mapper renders. */
export type FaultRecord = FaultFields;

/** A router just deleted: what its removal's audit entry names. */
export interface DeletedRouter {
  id: string;
  organizationId: string;
  name: string;
}

export interface NewRouter {
  organizationId: string;
  teamId: string;
  name: string;
  /** SHA-256 hex of the heartbeat token; the token itself is never stored. */
  tokenHash: string;
  createdAt: Date;
  /** The assigned tunnel address (unique: another router holding it makes the insert throw {@link TunnelIpTakenError}). */
  tunnelIp: string;
}

/** The tunnel address is already another router's (the unique index on routers.tunnel_ip). */
export class TunnelIpTakenError extends Error {
  readonly tunnelIp: string;
  constructor(tunnelIp: string) {
    super(`tunnel address ${tunnelIp} is held by another router`);
    this.name = "TunnelIpTakenError";
    this.tunnelIp = tunnelIp;
  }
}

/** The daemons' coverage record plus the interval they run at. */
export interface CoverageRecord extends HeartbeatCoverageState {
  intervalMs: number;
}

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;

/**
 * Joins a router `r` to its liveness `l` (router_liveness: pulse, last seen, uptime; no row: never
 * seen) and its WireGuard peer `w` (no row: no key bound). Every read of ROUTER_COLUMNS has it after
 * `routers r`: joins, not a subquery per row, so a list of thousands is one pass.
 */
export const LIVENESS_JOIN =
  "left join router_liveness l on l.router_id = r.id left join router_wireguard_peers w on w.router_id = r.id left join router_health_latest hl on hl.router_id = r.id";

/** A router's columns; the query joins its liveness (`from routers r ${LIVENESS_JOIN}`). */
export const ROUTER_COLUMNS = `r.id, r.organization_id, r.team_id, r.name, r.identity, r.serial_number, r.software_version,
  r.software_id, r.model, r.board_name, r.hardwareboard, l.uptime_seconds::float8 as uptime_seconds,
  coalesce(l.has_pulse, false) as has_pulse, ${ms("l.last_seen_at", "last_seen_ms")}, l.last_seen_from, r.tunnel_ip, r.reported_metadata, r.user_metadata,
  r.tags, ${ms("r.created_at", "created_ms")},
  w.router_id is not null as tunnel_bound, ${ms("w.handshake_at", "tunnel_handshake_ms")},
  ${ms("w.answered_at", "tunnel_answered_ms")}, hl.cpu_load::float8 as cpu_load,
  hl.memory_used_percent::float8 as memory_used_percent, hl.temperature::float8 as temperature`;

const FAULT_COLUMNS = `f.id, f.router_id, f.type, f.severity, f.message, f.cause, f.status,
  ${ms("f.created_at", "created_ms")}, ${ms("f.resolved_at", "resolved_ms")}, f.duration_seconds`;

type Row = Record<string, unknown>;

const json = (value: unknown): Record<string, unknown> => {
  const parsed = typeof value === "string" ? JSON.parse(value) : value;
  return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
};

const stringList = (value: unknown): string[] => {
  const parsed = typeof value === "string" ? JSON.parse(value) : value;
  return Array.isArray(parsed) ? parsed.map(String) : [];
};

const dateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toNumber(value));

export const routerFromRow = (row: Row): RouterRecord => ({
  id: String(row.id),
  organizationId: String(row.organization_id),
  teamId: String(row.team_id),
  name: String(row.name),
  identity: String(row.identity),
  serialNumber: String(row.serial_number),
  softwareVersion: String(row.software_version),
  softwareId: String(row.software_id),
  model: String(row.model),
  boardName: String(row.board_name),
  hardwareboard: row.hardwareboard === true,
  uptimeSeconds: row.uptime_seconds === null || row.uptime_seconds === undefined ? null : toNumber(row.uptime_seconds),
  hasPulse: row.has_pulse === true,
  lastSeenAt: dateOrNull(row.last_seen_ms),
  lastSeenFrom: row.last_seen_from === null || row.last_seen_from === undefined ? null : String(row.last_seen_from),
  tunnelIp: row.tunnel_ip === null || row.tunnel_ip === undefined ? null : String(row.tunnel_ip),
  tunnelBound: row.tunnel_bound === true,
  tunnelHandshakeAt: dateOrNull(row.tunnel_handshake_ms),
  tunnelAnsweredAt: dateOrNull(row.tunnel_answered_ms),
  reportedMetadata: json(row.reported_metadata),
  userMetadata: json(row.user_metadata),
  tags: stringList(row.tags),
  createdAt: new Date(toNumber(row.created_ms)),
  cpuLoad: numberOrNull(row.cpu_load),
  memoryUsedPercent: numberOrNull(row.memory_used_percent),
  temperature: numberOrNull(row.temperature),
});

const numberOrNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : toNumber(value);

export const faultFromRow = (row: Row): FaultRecord => ({
  id: String(row.id),
  routerId: String(row.router_id),
  type: String(row.type),
  severity: String(row.severity),
  message: String(row.message),
  cause: String(row.cause),
  status: row.status === "completed" ? "completed" : "ongoing",
  createdAt: new Date(toNumber(row.created_ms)),
  resolvedAt: dateOrNull(row.resolved_ms),
  durationSeconds:
    row.duration_seconds === null || row.duration_seconds === undefined ? null : toNumber(row.duration_seconds),
});

export const coverageFromRow = (row: Row): CoverageRecord => ({
  coveredSince: new Date(toNumber(row.covered_since_ms)),
  aliveAt: new Date(toNumber(row.alive_ms)),
  outageStartedAt: dateOrNull(row.outage_ms),
  intervalMs: toNumber(row.interval_ms),
});

export const COVERAGE_COLUMNS = `${ms("covered_since", "covered_since_ms")}, ${ms("alive_at", "alive_ms")},
  ${ms("outage_started_at", "outage_ms")}, interval_ms`;

/** A tunnel address is free of quarantine when no removed router holds it past `$now` (docs/api.md "Routers and heartbeats"). */
const QUARANTINED = (address: string, now: string) => `exists (select 1 from tunnel_addresses q
  where q.tunnel_ip = ${address} and q.removed_at is not null and q.offboarded_at is null and q.quarantined_until > ${now})`;

/** Where a page of a router list ends (and the next begins): the sort key and the id. */
export type RouterListPosition =
  | { sort: "name"; name: string; id: string }
  /** `lastSeenMicros`: epoch microseconds as decimal text; null: never seen. */
  | { sort: "last_seen"; lastSeenMicros: string | null; id: string }
  /** A health measure (docs/api.md "Health"), as float8 text; null: never reported. */
  | { sort: HealthSort; value: string | null; id: string };

/** Health sorts: worst (highest) first, never reported last. */
export type HealthSort = "cpu" | "memory" | "temperature";
const HEALTH_SORT_COLUMN: Record<HealthSort, string> = {
  cpu: "hl.cpu_load",
  memory: "hl.memory_used_percent",
  temperature: "hl.temperature",
};
/** Below every value a measure can take (temperature goes down to -100): never reported sorts last. */
const NEVER_REPORTED = "-1e9";

/** docs/api.md "Listing a fleet". */
export interface RouterListFilter {
  teamId: string;
  /** Case-insensitive substring of identity, name, serial number, model or last-seen address. */
  q?: string | undefined;
  status?: "online" | "offline" | undefined;
  /** Only routers carrying this tag. */
  tag?: string | undefined;
  sort: "name" | "last_seen" | HealthSort;
  /** Rows strictly after this position (same `sort`). */
  after?: RouterListPosition | undefined;
  limit?: number | undefined;
}

export interface RouterListRow {
  router: RouterRecord;
  position: RouterListPosition;
}

/** The router inventory as the API sees it: always scoped to a team. */
export class RoutersRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /**
   * A team's routers, filtered and in `sort` order, after `after` and at most `limit` of them
   * (docs/api.md "Listing a fleet"). Keyset paging on (sort key, id): the name order walks the
   * index `routers_team_name_id_index` from the position on, so a deep page costs what the first
   * does. The last-seen and health orders sort the team's rows (`router_liveness` and
   * `router_health_latest` have no index on what every heartbeat changes, docs/architecture.md
   * "Liveness: what a heartbeat writes"), so they sort narrow rows (id and key) and read the full
   * columns of the page's rows only.
   */
  async listByTeam(filter: RouterListFilter): Promise<RouterListRow[]> {
    const params: unknown[] = [filter.teamId];
    const where = ["r.team_id = $1"];
    if (filter.q !== undefined && filter.q !== "") {
      params.push(`%${filter.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      const p = `$${params.length}`;
      where.push(
        `(r.identity ilike ${p} or r.name ilike ${p} or r.serial_number ilike ${p} or r.model ilike ${p} or l.last_seen_from ilike ${p})`,
      );
    }
    if (filter.status !== undefined)
      where.push(filter.status === "online" ? "l.has_pulse" : "not coalesce(l.has_pulse, false)");
    if (filter.tag !== undefined) {
      params.push(JSON.stringify([filter.tag]));
      where.push(`r.tags @> $${params.length}::jsonb`);
    }
    // Exact microseconds (numeric, then int8), so a cursor resumes exactly where the page ended.
    const lastSeen = "coalesce((extract(epoch from l.last_seen_at) * 1000000)::int8, -1)";
    const byName = `lower(r.name) collate "C"`;
    const after = filter.after;
    const sort = filter.sort;
    const healthKey =
      sort === "name" || sort === "last_seen"
        ? undefined
        : `coalesce(${HEALTH_SORT_COLUMN[sort]}::float8, ${NEVER_REPORTED})`;
    if (after?.sort === "name") {
      params.push(after.name, after.id);
      where.push(`(${byName}, r.id) > (lower($${params.length - 1}::text) collate "C", $${params.length}::uuid)`);
    } else if (after?.sort === "last_seen") {
      params.push(after.lastSeenMicros ?? "-1", after.id);
      where.push(`(${lastSeen}, r.id) < ($${params.length - 1}::int8, $${params.length}::uuid)`);
    } else if (after && healthKey) {
      params.push(after.value ?? NEVER_REPORTED, after.id);
      where.push(`(${healthKey}, r.id) < ($${params.length - 1}::float8, $${params.length}::uuid)`);
    }
    let limit = "";
    if (filter.limit !== undefined) {
      params.push(filter.limit);
      limit = ` limit $${params.length}::int`;
    }
    const sql =
      sort === "name"
        ? `select ${ROUTER_COLUMNS} from routers r ${LIVENESS_JOIN} where ${where.join(" and ")} order by ${byName}, r.id${limit}`
        : // Planner-sensitive: the page is chosen from narrow rows, then only its rows are read in full,
          // by primary key (`any(array(...))`: a join alone may hash the whole table instead).
          `with page as (
             select r.id, ${healthKey ?? lastSeen} as sort_key
             from routers r left join router_liveness l on l.router_id = r.id
               ${healthKey ? "left join router_health_latest hl on hl.router_id = r.id" : ""}
             where ${where.join(" and ")} order by sort_key desc, r.id desc${limit}
           )
           select ${ROUTER_COLUMNS}, page.sort_key::text as sort_key
           from page join routers r on r.id = page.id ${LIVENESS_JOIN}
           where r.id = any(array(select id from page)) order by page.sort_key desc, r.id desc`;
    const rows = await this.#db.query<Row>(sql, params);
    return rows.map((row): RouterListRow => {
      const router = routerFromRow(row);
      if (sort === "name") return { router, position: { sort, name: router.name, id: router.id } };
      const key = String(row.sort_key);
      if (sort === "last_seen")
        return { router, position: { sort, lastSeenMicros: key === "-1" ? null : key, id: router.id } };
      return { router, position: { sort, value: Number(key) === Number(NEVER_REPORTED) ? null : key, id: router.id } };
    });
  }

  /**
   * On PGlite, which has no autovacuum: the planner statistics of the router list's tables, as
   * autovacuum keeps them on PostgreSQL (there: nothing to do, false). Without them the planner
   * takes a team of thousands for a handful of rows and sorts it whole instead of walking
   * `routers_team_name_id_index` (docs/api.md "Listing a fleet").
   */
  async refreshPlannerStatistics(): Promise<boolean> {
    if (this.#db.driver !== "pglite") return false;
    await this.#db.query("analyze routers, router_liveness, router_health_latest");
    return true;
  }

  /** How many routers the team has, and how many of them are online. */
  async countByTeam(teamId: string): Promise<{ total: number; online: number }> {
    const [row] = await this.#db.query<{ total: unknown; online: unknown }>(
      `select count(*)::int as total, count(*) filter (where l.has_pulse)::int as online
       from routers r left join router_liveness l on l.router_id = r.id where r.team_id = $1`,
      [teamId],
    );
    return { total: toNumber(row?.total ?? 0), online: toNumber(row?.online ?? 0) };
  }

  /** The router if it exists in `teamId`; null for unknown ids, malformed ids and other teams. */
  async findInTeam(teamId: string, routerId: string): Promise<RouterRecord | null> {
    if (!isUuid(routerId)) return null;
    const rows = await this.#db.query<Row>(
      `select ${ROUTER_COLUMNS} from routers r ${LIVENESS_JOIN} where r.id = $1 and r.team_id = $2`,
      [routerId, teamId],
    );
    return rows[0] ? routerFromRow(rows[0]) : null;
  }

  /**
   * Inserts the router with its tunnel address, on `query` when given (the enrollment's transaction,
   * which writes its audit entry); throws {@link TunnelIpTakenError} when another router holds it.
   */
  async insert(input: NewRouter, query: Query = queryOf(this.#db)): Promise<RouterRecord> {
    const rows = await query<Row>(
      `with inserted as (
         insert into routers as r (id, organization_id, team_id, name, heartbeat_token_hash, created_at, tunnel_ip)
         select $1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, to_timestamp($6::float8 / 1000.0), $7::text
         where not ${QUARANTINED("$7::text", "to_timestamp($6::float8 / 1000.0)")}
         on conflict (tunnel_ip) do nothing
         returning r.*
       )
       select ${ROUTER_COLUMNS} from inserted r ${LIVENESS_JOIN}`,
      [
        crypto.randomUUID(),
        input.organizationId,
        input.teamId,
        input.name,
        input.tokenHash,
        input.createdAt.getTime(),
        input.tunnelIp,
      ],
    );
    const row = rows[0];
    if (!row) throw new TunnelIpTakenError(input.tunnelIp);
    return routerFromRow(row);
  }

  /** True when some router (of any organization) holds the tunnel address, or it is quarantined at `now`. */
  async tunnelIpHeld(tunnelIp: string, now: Date): Promise<boolean> {
    const rows = await this.#db.query(
      `select 1 where exists (select 1 from routers where tunnel_ip = $1)
         or ${QUARANTINED("$1", "to_timestamp($2::float8 / 1000.0)")}`,
      [tunnelIp, now.getTime()],
    );
    return rows.length > 0;
  }

  /** Every tunnel address in use or quarantined at `now` (the allocator's fallback when random picks keep colliding). */
  async tunnelIpsInUse(now: Date): Promise<Set<string>> {
    const rows = await this.#db.query<{ tunnel_ip: string }>(
      `select tunnel_ip from routers where tunnel_ip is not null
       union select tunnel_ip from tunnel_addresses
       where removed_at is not null and offboarded_at is null and quarantined_until > to_timestamp($1::float8 / 1000.0)`,
      [now.getTime()],
    );
    return new Set(rows.map((row) => row.tunnel_ip));
  }

  /**
   * Deletes the router (its faults and downtime go with it); null when it is not in the team. On
   * the caller's transaction (`query`): the removal's quarantine, audit entry and offboarding job
   * commit with it (docs/routeros.md "Offboarding").
   */
  async deleteInTeam(query: Query, teamId: string, routerId: string): Promise<DeletedRouter | null> {
    if (!isUuid(routerId)) return null;
    const rows = await query<{ id: string; organization_id: string; name: string }>(
      "delete from routers where id = $1 and team_id = $2 returning id, organization_id, name",
      [routerId, teamId],
    );
    const row = rows[0];
    return row ? { id: String(row.id), organizationId: String(row.organization_id), name: String(row.name) } : null;
  }

  /**
   * Quarantines the router's tunnel address until `quarantineUntil`, with the host key last pinned
   * for it, before the router row goes (docs/routeros.md "Offboarding"); in the caller's transaction.
   */
  async quarantineTunnelAddress(
    query: Query,
    teamId: string,
    routerId: string,
    at: Date,
    quarantineUntil: Date,
  ): Promise<void> {
    if (!isUuid(routerId)) return;
    await query(
      `insert into tunnel_addresses as t (tunnel_ip, router_id, organization_id, host_key_fingerprint, pinned_at,
         removed_at, quarantined_until, offboarded_at)
       select r.tunnel_ip, r.id, r.organization_id, k.fingerprint, k.created_at,
         to_timestamp($3::float8 / 1000.0), to_timestamp($4::float8 / 1000.0), null
       from routers r left join ssh_host_keys k on k.router_id = r.id
       where r.id = $1 and r.team_id = $2 and r.tunnel_ip is not null
       on conflict (tunnel_ip) do update set router_id = excluded.router_id,
         organization_id = excluded.organization_id,
         host_key_fingerprint = coalesce(excluded.host_key_fingerprint, case
           when t.router_id = excluded.router_id or t.organization_id = excluded.organization_id
           then t.host_key_fingerprint end),
         pinned_at = coalesce(excluded.pinned_at, t.pinned_at),
         removed_at = excluded.removed_at, quarantined_until = excluded.quarantined_until, offboarded_at = null`,
      [routerId, teamId, at.getTime(), quarantineUntil.getTime()],
    );
  }

  /** The team's router, its row locked until `query`'s transaction ends; null when not the team's. */
  async lockInTeam(query: Query, teamId: string, routerId: string): Promise<RouterRecord | null> {
    if (!isUuid(routerId)) return null;
    const rows = await query<Row>(
      `select ${ROUTER_COLUMNS} from routers r ${LIVENESS_JOIN} where r.id = $1 and r.team_id = $2 for update of r`,
      [routerId, teamId],
    );
    return rows[0] ? routerFromRow(rows[0]) : null;
  }

  /** Writes the user metadata and name of a router (locked first with `lockInTeam`). */
  async setUserMetadata(
    query: Query,
    routerId: string,
    userMetadata: Record<string, unknown>,
    name: string,
  ): Promise<RouterRecord | null> {
    const updated = await query<Row>(
      `update routers as r set user_metadata = $2::jsonb, name = $3
       from routers x left join router_liveness l on l.router_id = x.id
         left join router_wireguard_peers w on w.router_id = x.id
         left join router_health_latest hl on hl.router_id = x.id
       where r.id = $1 and x.id = r.id returning ${ROUTER_COLUMNS}`,
      [routerId, JSON.stringify(userMetadata), name],
    );
    return updated[0] ? routerFromRow(updated[0]) : null;
  }

  /** Replaces a router's tags; null when the router is not the team's. */
  async updateTags(teamId: string, routerId: string, tags: readonly string[]): Promise<RouterRecord | null> {
    if (!isUuid(routerId)) return null;
    const rows = await this.#db.query<Row>(
      `with updated as (update routers set tags = $3::jsonb where id = $1 and team_id = $2 returning *)
       select ${ROUTER_COLUMNS} from updated r ${LIVENESS_JOIN}`,
      [routerId, teamId, JSON.stringify(tags)],
    );
    return rows[0] ? routerFromRow(rows[0]) : null;
  }

  /** The router's most recent faults, newest first. */
  async faults(routerId: string, limit: number): Promise<FaultRecord[]> {
    const rows = await this.#db.query<Row>(
      `select ${FAULT_COLUMNS} from router_faults f where f.router_id = $1 order by f.created_at desc, f.id desc limit $2::int`,
      [routerId, limit],
    );
    return rows.map(faultFromRow);
  }

  /** Stored seconds down per UTC hour in [from, to), keyed by the hour's epoch milliseconds. */
  async downtimeHours(routerId: string, from: Date, to: Date): Promise<Map<number, number>> {
    const rows = await this.#db.query<{ hour_ms: unknown; seconds_down: unknown }>(
      `select ${ms("hour", "hour_ms")}, seconds_down from router_downtime_hours
       where router_id = $1 and hour >= to_timestamp($2::float8 / 1000.0) and hour < to_timestamp($3::float8 / 1000.0)`,
      [routerId, from.getTime(), to.getTime()],
    );
    return new Map(rows.map((r) => [toNumber(r.hour_ms), toNumber(r.seconds_down)]));
  }

  /** The heartbeat daemons' coverage record; null before any daemon ran. */
  async coverage(): Promise<CoverageRecord | null> {
    const rows = await this.#db.query<Row>(`select ${COVERAGE_COLUMNS} from heartbeat_coverage where id = 1`);
    return rows[0] ? coverageFromRow(rows[0]) : null;
  }
}
