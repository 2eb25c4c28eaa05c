import { isUuid } from "@fleet/shared";
import type { FaultFields, HeartbeatCoverageState } from "@fleet/shared";
import type { ExpressionBuilder } from "kysely";
import { type Database, type Query, queryOf, type Schema } from "../database.ts";
import { routerSearchText } from "../migrations/20261201-180-router-search.migration.ts";
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

/**
 * The fleet list's joins as SQL text, after `routers r` (listByTeam's raw statement): a list of
 * thousands is one pass, not a subquery per row.
 */
export const LIST_JOIN = "left join router_liveness l on l.router_id = r.id";

/**
 * What a fleet list shows of a router (docs/api.md "Router"), its team and organization: no
 * metadata and no tunnel state, which only one router's reads answer.
 */
export type RouterListItem = Omit<
  RouterRecord,
  "reportedMetadata" | "userMetadata" | "tunnelIp" | "tunnelBound" | "tunnelHandshakeAt" | "tunnelAnsweredAt"
>;

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const epochMs = (column: string) => `(extract(epoch from ${column}) * 1000)::float8`;

/**
 * A {@link RouterListItem} as one JSON array per row (`from routers r ${LIST_JOIN}`): the drivers
 * parse one value instead of twenty (on PGlite, in-process, a third of a page's CPU).
 */
export const LIST_ITEM = `json_build_array(r.id, r.organization_id, r.team_id, r.name, r.identity, r.serial_number,
  r.software_version, r.software_id, r.model, r.board_name, r.hardwareboard, l.uptime_seconds::float8,
  coalesce(l.has_pulse, false), ${epochMs("l.last_seen_at")}, l.last_seen_from, r.tags, ${epochMs("r.created_at")},
  l.cpu_load, l.memory_used_percent, l.temperature) as item`;

/** {@link LIST_ITEM}'s values, in its order, as JSON gives them back. */
type ListItemValues = [
  id: string,
  organizationId: string,
  teamId: string,
  name: string,
  identity: string,
  serialNumber: string,
  softwareVersion: string,
  softwareId: string,
  model: string,
  boardName: string,
  hardwareboard: boolean,
  uptimeSeconds: number | null,
  hasPulse: boolean,
  lastSeenMs: number | null,
  lastSeenFrom: string | null,
  tags: string[],
  createdMs: number,
  cpuLoad: number | null,
  memoryUsedPercent: number | null,
  temperature: number | null,
];

type Row = Record<string, unknown>;

const dateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toNumber(value));

const listItemFromJson = (item: unknown): RouterListItem => {
  const v = (typeof item === "string" ? JSON.parse(item) : item) as ListItemValues;
  return {
    id: v[0],
    organizationId: v[1],
    teamId: v[2],
    name: v[3],
    identity: v[4],
    serialNumber: v[5],
    softwareVersion: v[6],
    softwareId: v[7],
    model: v[8],
    boardName: v[9],
    hardwareboard: v[10],
    uptimeSeconds: numberOrNull(v[11]),
    hasPulse: v[12],
    lastSeenAt: dateOrNull(v[13]),
    lastSeenFrom: v[14],
    tags: v[15],
    createdAt: new Date(toNumber(v[16])),
    cpuLoad: numberOrNull(v[17]),
    memoryUsedPercent: numberOrNull(v[18]),
    temperature: numberOrNull(v[19]),
  };
};

const numberOrNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : toNumber(value);

/** A raw fault row (the heartbeat flush's statements) to its record. */
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

/**
 * A router with its liveness `l` (router_liveness: pulse, last seen, uptime; no row: never seen),
 * its WireGuard peer `w` (no row: no key bound) and its latest health (in `l`): joins, not a
 * subquery per row.
 */
const selectRouters = (query: Query) =>
  query.kysely
    .selectFrom("routers as r")
    .leftJoin("router_liveness as l", "l.router_id", "r.id")
    .leftJoin("router_wireguard_peers as w", "w.router_id", "r.id")
    .select((eb) => [
      "r.id",
      "r.organization_id",
      "r.team_id",
      "r.name",
      "r.identity",
      "r.serial_number",
      "r.software_version",
      "r.software_id",
      "r.model",
      "r.board_name",
      "r.hardwareboard",
      "r.tunnel_ip",
      "r.reported_metadata",
      "r.user_metadata",
      "r.tags",
      "r.created_at",
      "l.uptime_seconds",
      "l.has_pulse",
      "l.last_seen_at",
      "l.last_seen_from",
      eb("w.router_id", "is not", null).as("tunnel_bound"),
      "w.handshake_at",
      "w.answered_at",
      "l.cpu_load",
      "l.memory_used_percent",
      "l.temperature",
    ]);

type RouterRow = Awaited<ReturnType<ReturnType<typeof selectRouters>["executeTakeFirstOrThrow"]>>;

const routerFromTypedRow = (row: RouterRow): RouterRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  teamId: row.team_id,
  name: row.name,
  identity: row.identity,
  serialNumber: row.serial_number,
  softwareVersion: row.software_version,
  softwareId: row.software_id,
  model: row.model,
  boardName: row.board_name,
  hardwareboard: row.hardwareboard,
  uptimeSeconds: numberOrNull(row.uptime_seconds),
  hasPulse: row.has_pulse === true,
  lastSeenAt: row.last_seen_at,
  lastSeenFrom: row.last_seen_from,
  tunnelIp: row.tunnel_ip,
  tunnelBound: Boolean(row.tunnel_bound),
  tunnelHandshakeAt: row.handshake_at,
  tunnelAnsweredAt: row.answered_at,
  reportedMetadata: row.reported_metadata,
  userMetadata: row.user_metadata,
  tags: row.tags,
  createdAt: row.created_at,
  cpuLoad: numberOrNull(row.cpu_load),
  memoryUsedPercent: numberOrNull(row.memory_used_percent),
  temperature: numberOrNull(row.temperature),
});

/** A tunnel address is in quarantine while a removed router holds it past `now` (docs/api.md "Routers and heartbeats"). */
const quarantined = (eb: ExpressionBuilder<Schema, never>, tunnelIp: string, now: Date) =>
  eb.exists(
    eb
      .selectFrom("tunnel_addresses as q")
      .select("q.tunnel_ip")
      .where("q.tunnel_ip", "=", tunnelIp)
      .where("q.removed_at", "is not", null)
      .where("q.offboarded_at", "is", null)
      .where("q.quarantined_until", ">", now),
  );

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
  cpu: "l.cpu_load",
  memory: "l.memory_used_percent",
  temperature: "l.temperature",
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
  router: RouterListItem;
  position: RouterListPosition;
}

/**
 * A `q` that a last-seen address can hold: `last_seen_from` is a socket's peer address (IPv4 or
 * IPv6 text: hex digits, dots and colons), so any other `q` is searched on the router's row alone.
 */
const ADDRESS_TEXT = /^[0-9a-f.:]+$/i;
/** Most recent first; never seen last. */
const LAST_SEEN_KEY = "coalesce(l.last_seen_at, '-infinity')";

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
   * does; `q` reads the routers its trigrams find (`routers_search_trgm_index`). The last-seen and
   * health orders sort the team's rows (`router_liveness` has no index on what every heartbeat
   * changes, docs/architecture.md "Liveness: what a heartbeat writes"), so
   * they sort narrow rows (id and key) and read the full columns of the page's rows only.
   */
  async listByTeam(filter: RouterListFilter): Promise<RouterListRow[]> {
    const params: unknown[] = [filter.teamId];
    const where = ["r.team_id = $1"];
    if (filter.q !== undefined && filter.q !== "") {
      params.push(`%${filter.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      const p = `$${params.length}`;
      const own = `${routerSearchText("r.")} ilike ${p}`;
      where.push(
        ADDRESS_TEXT.test(filter.q)
          ? `r.id in (select r.id from routers r where r.team_id = $1 and ${own}
               union select l.router_id from router_liveness l where l.last_seen_from ilike ${p})`
          : own,
      );
    }
    if (filter.status !== undefined)
      where.push(filter.status === "online" ? "l.has_pulse" : "not coalesce(l.has_pulse, false)");
    if (filter.tag !== undefined) {
      params.push(JSON.stringify([filter.tag]));
      where.push(`r.tags @> $${params.length}::jsonb`);
    }
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
      // The cursor's microseconds back to the exact timestamp (whole seconds and the rest: no float rounding).
      params.push(after.lastSeenMicros, after.id);
      const m = `$${params.length - 1}::int8`;
      where.push(
        `(${LAST_SEEN_KEY}, r.id) < (coalesce(timestamptz 'epoch' + (${m} / 1000000) * interval '1 second' + (${m} % 1000000) * interval '1 microsecond', '-infinity'), $${params.length}::uuid)`,
      );
    } else if (after && healthKey) {
      params.push(after.value ?? NEVER_REPORTED, after.id);
      where.push(`(${healthKey}, r.id) < ($${params.length - 1}::float8, $${params.length}::uuid)`);
    }
    let limit = "";
    if (filter.limit !== undefined) {
      params.push(filter.limit);
      limit = ` limit $${params.length}::int`;
    }
    // The cursor's key as text: exact microseconds (-1: never seen), or the health value.
    const cursorKey =
      sort === "last_seen"
        ? "coalesce((extract(epoch from nullif(page.sort_key, '-infinity')) * 1000000)::int8, -1)::text"
        : "page.sort_key::text";
    // Raw: planner-sensitive keyset paging, measured by `npm run bench` (issue 34, Deliver 3).
    const sql =
      sort === "name"
        ? `select ${LIST_ITEM} from routers r ${LIST_JOIN} where ${where.join(" and ")} order by ${byName}, r.id${limit}`
        : // Planner-sensitive: the page is chosen from narrow rows, then only its rows are read in full,
          // by primary key (`any(array(...))`: a join alone may hash the whole table instead).
          `with page as (
             select r.id, ${healthKey ?? LAST_SEEN_KEY} as sort_key
             from routers r left join router_liveness l on l.router_id = r.id
             where ${where.join(" and ")} order by sort_key desc, r.id desc${limit}
           )
           select ${LIST_ITEM}, ${cursorKey} as sort_key
           from page join routers r on r.id = page.id ${LIST_JOIN}
           where r.id = any(array(select id from page)) order by page.sort_key desc, r.id desc`;
    // Without `q` the text depends only on these, so PostgreSQL plans each shape once per
    // connection (a third of a page's database time); a `q`'s plan depends on its pattern.
    const prepare = filter.q
      ? undefined
      : `routers_list_${sort}_${filter.status ?? "any"}_${filter.tag === undefined ? "" : "tag_"}${after ? `after_${after.sort}_` : ""}${limit ? "limit" : "all"}`;
    const rows = await this.#db.query<{ item: unknown; sort_key?: string }>(sql, params, prepare ? { prepare } : {});
    return rows.map((row): RouterListRow => {
      const router = listItemFromJson(row.item);
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
    await this.#db.query("analyze routers, router_liveness");
    return true;
  }

  /** How many routers the team has, and how many of them are online. */
  async countByTeam(teamId: string): Promise<{ total: number; online: number }> {
    const row = await this.#db.query.kysely
      .selectFrom("routers as r")
      .leftJoin("router_liveness as l", "l.router_id", "r.id")
      .select((eb) => [
        eb.fn.countAll().as("total"),
        eb.fn.countAll().filterWhere("l.has_pulse", "=", true).as("online"),
      ])
      .where("r.team_id", "=", teamId)
      .executeTakeFirst();
    return { total: toNumber(row?.total ?? 0), online: toNumber(row?.online ?? 0) };
  }

  /** The router if it exists in `teamId`; null for unknown ids, malformed ids and other teams. */
  async findInTeam(teamId: string, routerId: string): Promise<RouterRecord | null> {
    if (!isUuid(routerId)) return null;
    const row = await selectRouters(queryOf(this.#db))
      .where("r.id", "=", routerId)
      .where("r.team_id", "=", teamId)
      .executeTakeFirst();
    return row ? routerFromTypedRow(row) : null;
  }

  /**
   * Inserts the router with its tunnel address, on `query` when given (the enrollment's transaction,
   * which writes its audit entry); throws {@link TunnelIpTakenError} when another router holds it.
   */
  async insert(input: NewRouter, query: Query = queryOf(this.#db)): Promise<RouterRecord> {
    const row = await query.kysely
      .insertInto("routers")
      .columns(["id", "organization_id", "team_id", "name", "heartbeat_token_hash", "created_at", "tunnel_ip"])
      .expression(
        query.kysely
          .selectNoFrom((eb) => [
            eb.cast<string>(eb.val(crypto.randomUUID()), "uuid").as("id"),
            eb.cast<string>(eb.val(input.organizationId), "uuid").as("organization_id"),
            eb.cast<string>(eb.val(input.teamId), "uuid").as("team_id"),
            eb.cast<string>(eb.val(input.name), "text").as("name"),
            eb.cast<string>(eb.val(input.tokenHash), "text").as("heartbeat_token_hash"),
            eb.cast<Date>(eb.val(input.createdAt), "timestamptz").as("created_at"),
            eb.cast<string>(eb.val(input.tunnelIp), "text").as("tunnel_ip"),
          ])
          .where((eb) => eb.not(quarantined(eb, input.tunnelIp, input.createdAt))),
      )
      .onConflict((oc) => oc.column("tunnel_ip").doNothing())
      .returningAll()
      .executeTakeFirst();
    if (!row) throw new TunnelIpTakenError(input.tunnelIp);
    // A router just made has no liveness, key or health yet.
    return routerFromTypedRow({
      ...row,
      uptime_seconds: null,
      has_pulse: null,
      last_seen_at: null,
      last_seen_from: null,
      tunnel_bound: false,
      handshake_at: null,
      answered_at: null,
      cpu_load: null,
      memory_used_percent: null,
      temperature: null,
    });
  }

  /** True when some router (of any organization) holds the tunnel address, or it is quarantined at `now`. */
  async tunnelIpHeld(tunnelIp: string, now: Date): Promise<boolean> {
    const row = await this.#db.query.kysely
      .selectNoFrom((eb) =>
        eb
          .or([
            eb.exists(eb.selectFrom("routers").select("id").where("tunnel_ip", "=", tunnelIp)),
            quarantined(eb, tunnelIp, now),
          ])
          .as("held"),
      )
      .executeTakeFirstOrThrow();
    return Boolean(row.held);
  }

  /** Every tunnel address in use or quarantined at `now` (the allocator's fallback when random picks keep colliding). */
  async tunnelIpsInUse(now: Date): Promise<Set<string>> {
    const rows = await this.#db.query.kysely
      .selectFrom("routers")
      .select("tunnel_ip")
      .where("tunnel_ip", "is not", null)
      .$narrowType<{ tunnel_ip: string }>()
      .union((eb) =>
        eb
          .selectFrom("tunnel_addresses")
          .select("tunnel_ip")
          .where("removed_at", "is not", null)
          .where("offboarded_at", "is", null)
          .where("quarantined_until", ">", now),
      )
      .execute();
    return new Set(rows.map((row) => row.tunnel_ip));
  }

  /**
   * Deletes the router (its faults and downtime go with it); null when it is not in the team. On
   * the caller's transaction (`query`): the removal's quarantine, audit entry and offboarding job
   * commit with it (docs/routeros.md "Offboarding").
   */
  async deleteInTeam(query: Query, teamId: string, routerId: string): Promise<DeletedRouter | null> {
    if (!isUuid(routerId)) return null;
    const row = await query.kysely
      .deleteFrom("routers")
      .where("id", "=", routerId)
      .where("team_id", "=", teamId)
      .returning(["id", "organization_id", "name"])
      .executeTakeFirst();
    return row ? { id: row.id, organizationId: row.organization_id, name: row.name } : null;
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
    await query.kysely
      .insertInto("tunnel_addresses")
      .columns([
        "tunnel_ip",
        "router_id",
        "organization_id",
        "host_key_fingerprint",
        "pinned_at",
        "removed_at",
        "quarantined_until",
        "offboarded_at",
      ])
      .expression(
        query.kysely
          .selectFrom("routers as r")
          .leftJoin("ssh_host_keys as k", "k.router_id", "r.id")
          .select((eb) => [
            "r.tunnel_ip",
            "r.id",
            "r.organization_id",
            "k.fingerprint",
            "k.created_at",
            eb.cast<Date>(eb.val(at), "timestamptz").as("removed_at"),
            eb.cast<Date>(eb.val(quarantineUntil), "timestamptz").as("quarantined_until"),
            eb.cast<Date | null>(eb.lit(null), "timestamptz").as("offboarded_at"),
          ])
          .where("r.id", "=", routerId)
          .where("r.team_id", "=", teamId)
          .where("r.tunnel_ip", "is not", null),
      )
      .onConflict((oc) =>
        oc.column("tunnel_ip").doUpdateSet((eb) => ({
          router_id: eb.ref("excluded.router_id"),
          organization_id: eb.ref("excluded.organization_id"),
          // The pin of the address survives a router of the same organization or the same router.
          host_key_fingerprint: eb.fn.coalesce(
            "excluded.host_key_fingerprint",
            eb
              .case()
              .when(
                eb.or([
                  eb("tunnel_addresses.router_id", "=", eb.ref("excluded.router_id")),
                  eb("tunnel_addresses.organization_id", "=", eb.ref("excluded.organization_id")),
                ]),
              )
              .then(eb.ref("tunnel_addresses.host_key_fingerprint"))
              .end(),
          ),
          pinned_at: eb.fn.coalesce("excluded.pinned_at", "tunnel_addresses.pinned_at"),
          removed_at: eb.ref("excluded.removed_at"),
          quarantined_until: eb.ref("excluded.quarantined_until"),
          offboarded_at: null,
        })),
      )
      .execute();
  }

  /** The team's router, its row locked until `query`'s transaction ends; null when not the team's. */
  async lockInTeam(query: Query, teamId: string, routerId: string): Promise<RouterRecord | null> {
    if (!isUuid(routerId)) return null;
    const row = await selectRouters(query)
      .where("r.id", "=", routerId)
      .where("r.team_id", "=", teamId)
      .forUpdate("r")
      .executeTakeFirst();
    return row ? routerFromTypedRow(row) : null;
  }

  /** Writes the user metadata and name of a router (locked first with `lockInTeam`). */
  async setUserMetadata(
    query: Query,
    routerId: string,
    userMetadata: Record<string, unknown>,
    name: string,
  ): Promise<RouterRecord | null> {
    const updated = await query.kysely
      .updateTable("routers")
      .set({ user_metadata: userMetadata, name })
      .where("id", "=", routerId)
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n) return null;
    const row = await selectRouters(query).where("r.id", "=", routerId).executeTakeFirst();
    return row ? routerFromTypedRow(row) : null;
  }

  /** Replaces a router's tags; null when the router is not the team's. */
  async updateTags(teamId: string, routerId: string, tags: readonly string[]): Promise<RouterRecord | null> {
    if (!isUuid(routerId)) return null;
    const query = queryOf(this.#db);
    const updated = await query.kysely
      .updateTable("routers")
      .set({ tags: [...tags] })
      .where("id", "=", routerId)
      .where("team_id", "=", teamId)
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n) return null;
    const row = await selectRouters(query).where("r.id", "=", routerId).executeTakeFirst();
    return row ? routerFromTypedRow(row) : null;
  }

  /** The router's most recent faults, newest first. */
  async faults(routerId: string, limit: number): Promise<FaultRecord[]> {
    const rows = await this.#db.query.kysely
      .selectFrom("router_faults")
      .select([
        "id",
        "router_id",
        "type",
        "severity",
        "message",
        "cause",
        "status",
        "created_at",
        "resolved_at",
        "duration_seconds",
      ])
      .where("router_id", "=", routerId)
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      id: row.id,
      routerId: row.router_id,
      type: row.type,
      severity: row.severity,
      message: row.message,
      cause: row.cause,
      status: row.status,
      createdAt: row.created_at,
      resolvedAt: row.resolved_at,
      durationSeconds: row.duration_seconds,
    }));
  }

  /** Stored seconds down per UTC hour in [from, to), keyed by the hour's epoch milliseconds. */
  async downtimeHours(routerId: string, from: Date, to: Date): Promise<Map<number, number>> {
    const rows = await this.#db.query.kysely
      .selectFrom("router_downtime_hours")
      .select(["hour", "seconds_down"])
      .where("router_id", "=", routerId)
      .where("hour", ">=", from)
      .where("hour", "<", to)
      .execute();
    return new Map(rows.map((r) => [r.hour.getTime(), r.seconds_down]));
  }

  /** The heartbeat daemons' coverage record; null before any daemon ran. */
  async coverage(): Promise<CoverageRecord | null> {
    const row = await this.#db.query.kysely
      .selectFrom("heartbeat_coverage")
      .select(["covered_since", "alive_at", "outage_started_at", "interval_ms"])
      .where("id", "=", 1)
      .executeTakeFirst();
    return row
      ? {
          coveredSince: row.covered_since,
          aliveAt: row.alive_at,
          outageStartedAt: row.outage_started_at,
          intervalMs: row.interval_ms,
        }
      : null;
  }
}
