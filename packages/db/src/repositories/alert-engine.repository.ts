import type { Query } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** An audit entry copied into the alert outbox by the `audit_to_alerts` trigger (migration 101). */
export interface AlertEventRecord {
  auditId: string;
  organizationId: string;
  routerId: string | null;
  action: string;
  occurredAt: Date;
  details: Record<string, unknown>;
}

/** What a rule selects on and a message names. */
export interface AlertRouterFacts {
  id: string;
  organizationId: string;
  organizationName: string;
  teamId: string;
  name: string;
  identity: string;
  tags: string[];
  hasPulse: boolean;
}

export type TAlertPendingKind = "offline" | "recovered" | "event";
/** due: waits for `dueAt`; quiet/maintenance/storm: held until then for a summary, the window's end, the storm's close. */
export type TAlertPendingState = "due" | "quiet" | "maintenance" | "storm" | "done";

export interface AlertPendingRecord {
  id: string;
  organizationId: string;
  ruleId: string;
  routerId: string | null;
  kind: TAlertPendingKind;
  event: string;
  occurredAt: Date;
  dueAt: Date;
  state: TAlertPendingState;
  stormId: string | null;
  details: Record<string, unknown>;
}

export type NewAlertPending = Omit<AlertPendingRecord, "id" | "state" | "stormId"> & { state?: TAlertPendingState };

export interface AlertStormRecord {
  organizationId: string;
  kind: "offline" | "recovered";
  id: string;
  openedAt: Date;
  closesAt: Date;
}

type Row = Record<string, unknown>;

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const json = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;
const textOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

const PENDING_COLUMNS = `p.id, p.organization_id, p.rule_id, p.router_id, p.kind, p.event, ${ms("p.occurred_at", "occurred_ms")},
  ${ms("p.due_at", "due_ms")}, p.state, p.storm_id, p.details`;

const pendingFromRow = (row: Row): AlertPendingRecord => ({
  id: String(row.id),
  organizationId: String(row.organization_id),
  ruleId: String(row.rule_id),
  routerId: textOrNull(row.router_id),
  kind: String(row.kind) as TAlertPendingKind,
  event: String(row.event),
  occurredAt: new Date(toNumber(row.occurred_ms)),
  dueAt: new Date(toNumber(row.due_ms)),
  state: String(row.state) as TAlertPendingState,
  stormId: textOrNull(row.storm_id),
  details: json<Record<string, unknown>>(row.details) ?? {},
});

/**
 * The alert engine's state (docs/api.md "Alerts and maintenance windows"): its outbox
 * `alert_events`, the notifications waiting for their time `alert_pending`, what each rule
 * notified per router `alert_router_state`, and each organization's open storm `alert_storms`.
 * Reads and writes only; the engine decides.
 */
export class AlertEngineRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /** A cheap look before a transaction: whether there is anything to do at `now`. */
  async hasWork(now: Date): Promise<boolean> {
    const rows = await this.#query(
      `select 1 where exists (select 1 from alert_events)
         or exists (select 1 from alert_pending where state in ('due', 'quiet', 'maintenance') and due_at <= to_timestamp($1::float8 / 1000.0))
         or exists (select 1 from alert_storms where closes_at <= to_timestamp($1::float8 / 1000.0))`,
      [now.getTime()],
    );
    return rows.length > 0;
  }

  /** Up to `limit` outbox entries, oldest first, locked (SKIP LOCKED: processes share the work). */
  async takeEvents(limit: number): Promise<AlertEventRecord[]> {
    const rows = await this.#query<Row>(
      `select e.audit_id, e.organization_id, e.router_id, e.action, ${ms("e.occurred_at", "occurred_ms")}, e.details
       from alert_events e order by e.occurred_at, e.audit_id limit $1::int for update skip locked`,
      [limit],
    );
    return rows.map((row) => ({
      auditId: String(row.audit_id),
      organizationId: String(row.organization_id),
      routerId: textOrNull(row.router_id),
      action: String(row.action),
      occurredAt: new Date(toNumber(row.occurred_ms)),
      details: json<Record<string, unknown>>(row.details) ?? {},
    }));
  }

  async deleteEvents(auditIds: readonly string[]): Promise<void> {
    if (auditIds.length === 0) return;
    await this.#query("delete from alert_events where audit_id = any($1::uuid[])", [auditIds]);
  }

  /** Routers with what selectors and messages need; removed routers are left out. */
  async routers(ids: readonly string[]): Promise<AlertRouterFacts[]> {
    if (ids.length === 0) return [];
    const rows = await this.#query<Row>(
      `select r.id, r.organization_id, o.name as organization_name, r.team_id, r.name, r.identity, r.tags,
         coalesce(l.has_pulse, false) as has_pulse
       from routers r join organizations o on o.id = r.organization_id
       left join router_liveness l on l.router_id = r.id
       where r.id = any($1::uuid[])`,
      [[...new Set(ids)]],
    );
    return rows.map((row) => ({
      id: String(row.id),
      organizationId: String(row.organization_id),
      organizationName: String(row.organization_name),
      teamId: String(row.team_id),
      name: String(row.name),
      identity: String(row.identity),
      tags: (json<unknown[]>(row.tags) ?? []).map(String),
      hasPulse: row.has_pulse === true,
    }));
  }

  async organizationName(organizationId: string): Promise<string> {
    const [row] = await this.#query<Row>("select name from organizations where id = $1", [organizationId]);
    return row ? String(row.name) : "";
  }

  async insertPending(rows: readonly NewAlertPending[]): Promise<void> {
    if (rows.length === 0) return;
    await this.#query(
      `insert into alert_pending (id, organization_id, rule_id, router_id, kind, event, occurred_at, due_at, state, details)
       select gen_random_uuid(), v.organization_id, v.rule_id, v.router_id, v.kind, v.event,
         to_timestamp(v.occurred_ms / 1000.0), to_timestamp(v.due_ms / 1000.0), v.state, v.details
       from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::float8[], $7::float8[], $8::text[], $9::jsonb[])
         as v(organization_id, rule_id, router_id, kind, event, occurred_ms, due_ms, state, details)`,
      [
        rows.map((r) => r.organizationId),
        rows.map((r) => r.ruleId),
        rows.map((r) => r.routerId),
        rows.map((r) => r.kind),
        rows.map((r) => r.event),
        rows.map((r) => r.occurredAt.getTime()),
        rows.map((r) => r.dueAt.getTime()),
        rows.map((r) => r.state ?? "due"),
        rows.map((r) => JSON.stringify(r.details)),
      ],
    );
  }

  /**
   * Cancels a rule's not yet notified offline of a router (it came back first): true when one
   * was waiting. A storm's member is cancelled too: the grouped message lists only those still out.
   */
  async cancelOffline(ruleId: string, routerId: string): Promise<boolean> {
    const rows = await this.#query(
      `delete from alert_pending where rule_id = $1 and router_id = $2 and kind = 'offline' and state <> 'done' returning id`,
      [ruleId, routerId],
    );
    return rows.length > 0;
  }

  /** Due notifications (`dueAt` passed, not held by a storm), locked, oldest first. */
  async takeDue(now: Date, limit: number): Promise<AlertPendingRecord[]> {
    const rows = await this.#query<Row>(
      `select ${PENDING_COLUMNS} from alert_pending p
       where p.state in ('due', 'quiet', 'maintenance') and p.due_at <= to_timestamp($1::float8 / 1000.0)
       order by p.due_at, p.id limit $2::int for update skip locked`,
      [now.getTime(), limit],
    );
    return rows.map(pendingFromRow);
  }

  async hold(
    ids: readonly string[],
    state: TAlertPendingState,
    dueAt: Date,
    stormId: string | null = null,
  ): Promise<void> {
    if (ids.length === 0) return;
    await this.#query(
      "update alert_pending set state = $2, due_at = to_timestamp($3::float8 / 1000.0), storm_id = $4 where id = any($1::uuid[])",
      [ids, state, dueAt.getTime(), stormId],
    );
  }

  async markDone(ids: readonly string[], now: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.#query(
      "update alert_pending set state = 'done', processed_at = to_timestamp($2::float8 / 1000.0) where id = any($1::uuid[])",
      [ids, now.getTime()],
    );
  }

  /** Routers of the organization whose `kind` notification came due since `since` (storm detection). */
  async recentRouters(organizationId: string, kind: "offline" | "recovered", since: Date): Promise<number> {
    const [row] = await this.#query<Row>(
      `select count(distinct router_id)::int as n from alert_pending
       where organization_id = $1 and kind = $2 and due_at > to_timestamp($3::float8 / 1000.0)
         and state in ('done', 'storm')`,
      [organizationId, kind, since.getTime()],
    );
    return toNumber(row?.n ?? 0);
  }

  async openStorm(organizationId: string, kind: "offline" | "recovered"): Promise<AlertStormRecord | null> {
    const [row] = await this.#query<Row>(
      `select organization_id, kind, id, ${ms("opened_at", "opened_ms")}, ${ms("closes_at", "closes_ms")}
       from alert_storms where organization_id = $1 and kind = $2 for update`,
      [organizationId, kind],
    );
    return row ? stormFromRow(row) : null;
  }

  async insertStorm(storm: AlertStormRecord): Promise<void> {
    await this.#query(
      `insert into alert_storms (organization_id, kind, id, opened_at, closes_at)
       values ($1, $2, $3, to_timestamp($4::float8 / 1000.0), to_timestamp($5::float8 / 1000.0))`,
      [storm.organizationId, storm.kind, storm.id, storm.openedAt.getTime(), storm.closesAt.getTime()],
    );
  }

  /** Storms whose grouping window closed, locked. */
  async takeClosedStorms(now: Date): Promise<AlertStormRecord[]> {
    const rows = await this.#query<Row>(
      `select organization_id, kind, id, ${ms("opened_at", "opened_ms")}, ${ms("closes_at", "closes_ms")}
       from alert_storms where closes_at <= to_timestamp($1::float8 / 1000.0) for update skip locked`,
      [now.getTime()],
    );
    return rows.map(stormFromRow);
  }

  async deleteStorm(organizationId: string, kind: string): Promise<void> {
    await this.#query("delete from alert_storms where organization_id = $1 and kind = $2", [organizationId, kind]);
  }

  async stormMembers(stormId: string): Promise<AlertPendingRecord[]> {
    const rows = await this.#query<Row>(
      `select ${PENDING_COLUMNS} from alert_pending p where p.storm_id = $1 and p.state = 'storm' order by p.occurred_at, p.id`,
      [stormId],
    );
    return rows.map(pendingFromRow);
  }

  /** A rule notified this router offline under `dedupKey`: its recovery is notified once. */
  async rememberOffline(ruleId: string, routerId: string, offlineAt: Date, dedupKey: string): Promise<void> {
    await this.#query(
      `insert into alert_router_state (rule_id, router_id, offline_at, dedup_key)
       values ($1, $2, to_timestamp($3::float8 / 1000.0), $4)
       on conflict (rule_id, router_id) do update set offline_at = excluded.offline_at, dedup_key = excluded.dedup_key`,
      [ruleId, routerId, offlineAt.getTime(), dedupKey],
    );
  }

  /** {@link rememberOffline} for many at once (a storm's members): one statement, the last of a pair wins. */
  async rememberOfflineMany(
    rows: ReadonlyArray<{ ruleId: string; routerId: string; offlineAt: Date; dedupKey: string }>,
  ): Promise<void> {
    const unique = [...new Map(rows.map((r) => [`${r.ruleId}:${r.routerId}`, r])).values()];
    if (unique.length === 0) return;
    await this.#query(
      `insert into alert_router_state (rule_id, router_id, offline_at, dedup_key)
       select v.rule_id, v.router_id, to_timestamp(v.offline_ms / 1000.0), v.dedup_key
       from unnest($1::uuid[], $2::uuid[], $3::float8[], $4::text[]) as v(rule_id, router_id, offline_ms, dedup_key)
       on conflict (rule_id, router_id) do update set offline_at = excluded.offline_at, dedup_key = excluded.dedup_key`,
      [
        unique.map((r) => r.ruleId),
        unique.map((r) => r.routerId),
        unique.map((r) => r.offlineAt.getTime()),
        unique.map((r) => r.dedupKey),
      ],
    );
  }

  /** Forgets (and answers) what a rule notified about a router going offline: null when nothing was. */
  async takeOffline(ruleId: string, routerId: string): Promise<{ offlineAt: Date; dedupKey: string } | null> {
    const [row] = await this.#query<Row>(
      `delete from alert_router_state where rule_id = $1 and router_id = $2
       returning ${ms("offline_at", "offline_ms")}, dedup_key`,
      [ruleId, routerId],
    );
    return row ? { offlineAt: new Date(toNumber(row.offline_ms)), dedupKey: String(row.dedup_key) } : null;
  }

  /** Processed notifications older than `before` go (storms count only the last minute). */
  async prune(before: Date): Promise<void> {
    await this.#query(
      "delete from alert_pending where state = 'done' and processed_at < to_timestamp($1::float8 / 1000.0)",
      [before.getTime()],
    );
  }
}

const stormFromRow = (row: Row): AlertStormRecord => ({
  organizationId: String(row.organization_id),
  kind: String(row.kind) === "recovered" ? "recovered" : "offline",
  id: String(row.id),
  openedAt: new Date(toNumber(row.opened_ms)),
  closesAt: new Date(toNumber(row.closes_ms)),
});
