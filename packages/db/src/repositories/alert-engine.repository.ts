import { sql } from "kysely";
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

const PENDING_COLUMNS = [
  "id",
  "organization_id",
  "rule_id",
  "router_id",
  "kind",
  "event",
  "occurred_at",
  "due_at",
  "state",
  "storm_id",
  "details",
] as const;

const STORM_COLUMNS = ["organization_id", "kind", "id", "opened_at", "closes_at"] as const;

const selectPending = (query: Query) => query.kysely.selectFrom("alert_pending").select(PENDING_COLUMNS);
const selectStorms = (query: Query) => query.kysely.selectFrom("alert_storms").select(STORM_COLUMNS);

type PendingRow = Awaited<ReturnType<ReturnType<typeof selectPending>["executeTakeFirstOrThrow"]>>;
type StormRow = Awaited<ReturnType<ReturnType<typeof selectStorms>["executeTakeFirstOrThrow"]>>;

const pendingFromRow = (row: PendingRow): AlertPendingRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  ruleId: row.rule_id,
  routerId: row.router_id,
  kind: row.kind as TAlertPendingKind,
  event: row.event,
  occurredAt: row.occurred_at,
  dueAt: row.due_at,
  state: row.state as TAlertPendingState,
  stormId: row.storm_id,
  details: row.details,
});

const stormFromRow = (row: StormRow): AlertStormRecord => ({
  organizationId: row.organization_id,
  kind: row.kind === "recovered" ? "recovered" : "offline",
  id: row.id,
  openedAt: row.opened_at,
  closesAt: row.closes_at,
});

const WAITING_STATES: TAlertPendingState[] = ["due", "quiet", "maintenance"];

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
    const row = await this.#query.kysely
      .selectNoFrom((eb) =>
        eb
          .or([
            eb.exists(eb.selectFrom("alert_events").select(eb.lit(1).as("one"))),
            eb.exists(
              eb
                .selectFrom("alert_pending")
                .select(eb.lit(1).as("one"))
                .where("state", "in", WAITING_STATES)
                .where("due_at", "<=", now),
            ),
            eb.exists(eb.selectFrom("alert_storms").select(eb.lit(1).as("one")).where("closes_at", "<=", now)),
          ])
          .as("work"),
      )
      .executeTakeFirstOrThrow();
    return row.work === true;
  }

  /** Up to `limit` outbox entries, oldest first, locked (SKIP LOCKED: processes share the work). */
  async takeEvents(limit: number): Promise<AlertEventRecord[]> {
    const rows = await this.#query.kysely
      .selectFrom("alert_events")
      .select(["audit_id", "organization_id", "router_id", "action", "occurred_at", "details"])
      .orderBy("occurred_at")
      .orderBy("audit_id")
      .limit(limit)
      .forUpdate()
      .skipLocked()
      .execute();
    return rows.map((row) => ({
      auditId: row.audit_id,
      organizationId: row.organization_id,
      routerId: row.router_id,
      action: row.action,
      occurredAt: row.occurred_at,
      details: row.details,
    }));
  }

  async deleteEvents(auditIds: readonly string[]): Promise<void> {
    if (auditIds.length === 0) return;
    await this.#query.kysely
      .deleteFrom("alert_events")
      .where("audit_id", "=", (eb) => eb.fn.any(eb.val([...auditIds])))
      .execute();
  }

  /** Routers with what selectors and messages need; removed routers are left out. */
  async routers(ids: readonly string[]): Promise<AlertRouterFacts[]> {
    if (ids.length === 0) return [];
    const rows = await this.#query.kysely
      .selectFrom("routers as r")
      .innerJoin("organizations as o", "o.id", "r.organization_id")
      .leftJoin("router_liveness as l", "l.router_id", "r.id")
      .select((eb) => [
        "r.id",
        "r.organization_id",
        "o.name as organization_name",
        "r.team_id",
        "r.name",
        "r.identity",
        "r.tags",
        eb.fn.coalesce("l.has_pulse", eb.lit(false)).as("has_pulse"),
      ])
      .where("r.id", "=", (eb) => eb.fn.any(eb.val([...new Set(ids)])))
      .execute();
    return rows.map((row) => ({
      id: row.id,
      organizationId: row.organization_id,
      organizationName: row.organization_name,
      teamId: row.team_id,
      name: row.name,
      identity: row.identity,
      tags: row.tags,
      hasPulse: row.has_pulse === true,
    }));
  }

  async organizationName(organizationId: string): Promise<string> {
    const row = await this.#query.kysely
      .selectFrom("organizations")
      .select("name")
      .where("id", "=", organizationId)
      .executeTakeFirst();
    return row?.name ?? "";
  }

  async insertPending(rows: readonly NewAlertPending[]): Promise<void> {
    if (rows.length === 0) return;
    // Raw: one statement text for any batch, its columns as arrays through unnest.
    await sql`
      insert into alert_pending (id, organization_id, rule_id, router_id, kind, event, occurred_at, due_at, state, details)
      select gen_random_uuid(), v.organization_id, v.rule_id, v.router_id, v.kind, v.event,
        to_timestamp(v.occurred_ms / 1000.0), to_timestamp(v.due_ms / 1000.0), v.state, v.details
      from unnest(${rows.map((r) => r.organizationId)}::uuid[], ${rows.map((r) => r.ruleId)}::uuid[],
        ${rows.map((r) => r.routerId)}::uuid[], ${rows.map((r) => r.kind)}::text[], ${rows.map((r) => r.event)}::text[],
        ${rows.map((r) => r.occurredAt.getTime())}::float8[], ${rows.map((r) => r.dueAt.getTime())}::float8[],
        ${rows.map((r) => r.state ?? "due")}::text[], ${rows.map((r) => JSON.stringify(r.details))}::jsonb[])
        as v(organization_id, rule_id, router_id, kind, event, occurred_ms, due_ms, state, details)`.execute(
      this.#query.kysely,
    );
  }

  /**
   * Cancels a rule's not yet notified offline of a router (it came back first): true when one
   * was waiting. A storm's member is cancelled too: the grouped message lists only those still out.
   */
  /** A router's offline held by its rule's quiet hours (due, told in their summary); null: none. */
  async quietOffline(ruleId: string, routerId: string): Promise<AlertPendingRecord | null> {
    const row = await selectPending(this.#query)
      .where("rule_id", "=", ruleId)
      .where("router_id", "=", routerId)
      .where("kind", "=", "offline")
      .where("state", "=", "quiet")
      .executeTakeFirst();
    return row ? pendingFromRow(row) : null;
  }

  async cancelOffline(ruleId: string, routerId: string): Promise<boolean> {
    const rows = await this.#query.kysely
      .deleteFrom("alert_pending")
      .where("rule_id", "=", ruleId)
      .where("router_id", "=", routerId)
      .where("kind", "=", "offline")
      .where("state", "<>", "done")
      .returning("id")
      .execute();
    return rows.length > 0;
  }

  /** Due notifications (`dueAt` passed, not held by a storm), locked, oldest first. */
  async takeDue(now: Date, limit: number): Promise<AlertPendingRecord[]> {
    const rows = await selectPending(this.#query)
      .where("state", "in", WAITING_STATES)
      .where("due_at", "<=", now)
      .orderBy("due_at")
      .orderBy("id")
      .limit(limit)
      .forUpdate()
      .skipLocked()
      .execute();
    return rows.map(pendingFromRow);
  }

  async hold(
    ids: readonly string[],
    state: TAlertPendingState,
    dueAt: Date,
    stormId: string | null = null,
  ): Promise<void> {
    if (ids.length === 0) return;
    await this.#query.kysely
      .updateTable("alert_pending")
      .set({ state, due_at: dueAt, storm_id: stormId })
      .where("id", "=", (eb) => eb.fn.any(eb.val([...ids])))
      .execute();
  }

  async markDone(ids: readonly string[], now: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.#query.kysely
      .updateTable("alert_pending")
      .set({ state: "done", processed_at: now })
      .where("id", "=", (eb) => eb.fn.any(eb.val([...ids])))
      .execute();
  }

  /** Routers of the organization whose `kind` notification came due since `since` (storm detection). */
  async recentRouters(organizationId: string, kind: "offline" | "recovered", since: Date): Promise<number> {
    const row = await this.#query.kysely
      .selectFrom("alert_pending")
      .select((eb) => eb.fn.count("router_id").distinct().as("n"))
      .where("organization_id", "=", organizationId)
      .where("kind", "=", kind)
      .where("due_at", ">", since)
      .where("state", "in", ["done", "storm"])
      .executeTakeFirstOrThrow();
    return toNumber(row.n);
  }

  async openStorm(organizationId: string, kind: "offline" | "recovered"): Promise<AlertStormRecord | null> {
    const row = await selectStorms(this.#query)
      .where("organization_id", "=", organizationId)
      .where("kind", "=", kind)
      .forUpdate()
      .executeTakeFirst();
    return row ? stormFromRow(row) : null;
  }

  async insertStorm(storm: AlertStormRecord): Promise<void> {
    await this.#query.kysely
      .insertInto("alert_storms")
      .values({
        organization_id: storm.organizationId,
        kind: storm.kind,
        id: storm.id,
        opened_at: storm.openedAt,
        closes_at: storm.closesAt,
      })
      .execute();
  }

  /** Storms whose grouping window closed, locked. */
  async takeClosedStorms(now: Date): Promise<AlertStormRecord[]> {
    const rows = await selectStorms(this.#query).where("closes_at", "<=", now).forUpdate().skipLocked().execute();
    return rows.map(stormFromRow);
  }

  async deleteStorm(organizationId: string, kind: string): Promise<void> {
    await this.#query.kysely
      .deleteFrom("alert_storms")
      .where("organization_id", "=", organizationId)
      .where("kind", "=", kind)
      .execute();
  }

  async stormMembers(stormId: string): Promise<AlertPendingRecord[]> {
    const rows = await selectPending(this.#query)
      .where("storm_id", "=", stormId)
      .where("state", "=", "storm")
      .orderBy("occurred_at")
      .orderBy("id")
      .execute();
    return rows.map(pendingFromRow);
  }

  /** A rule notified this router offline under `dedupKey`: its recovery is notified once. */
  async rememberOffline(ruleId: string, routerId: string, offlineAt: Date, dedupKey: string): Promise<void> {
    await this.#query.kysely
      .insertInto("alert_router_state")
      .values({ rule_id: ruleId, router_id: routerId, offline_at: offlineAt, dedup_key: dedupKey })
      .onConflict((oc) =>
        oc.columns(["rule_id", "router_id"]).doUpdateSet((eb) => ({
          offline_at: eb.ref("excluded.offline_at"),
          dedup_key: eb.ref("excluded.dedup_key"),
        })),
      )
      .execute();
  }

  /** {@link rememberOffline} for many at once (a storm's members): one statement, the last of a pair wins. */
  async rememberOfflineMany(
    rows: ReadonlyArray<{ ruleId: string; routerId: string; offlineAt: Date; dedupKey: string }>,
  ): Promise<void> {
    const unique = [...new Map(rows.map((r) => [`${r.ruleId}:${r.routerId}`, r])).values()];
    if (unique.length === 0) return;
    // Raw: one statement text for any batch, its columns as arrays through unnest.
    await sql`
      insert into alert_router_state (rule_id, router_id, offline_at, dedup_key)
      select v.rule_id, v.router_id, to_timestamp(v.offline_ms / 1000.0), v.dedup_key
      from unnest(${unique.map((r) => r.ruleId)}::uuid[], ${unique.map((r) => r.routerId)}::uuid[],
        ${unique.map((r) => r.offlineAt.getTime())}::float8[], ${unique.map((r) => r.dedupKey)}::text[])
        as v(rule_id, router_id, offline_ms, dedup_key)
      on conflict (rule_id, router_id) do update set offline_at = excluded.offline_at, dedup_key = excluded.dedup_key`.execute(
      this.#query.kysely,
    );
  }

  /** Forgets (and answers) what a rule notified about a router going offline: null when nothing was. */
  async takeOffline(ruleId: string, routerId: string): Promise<{ offlineAt: Date; dedupKey: string } | null> {
    const row = await this.#query.kysely
      .deleteFrom("alert_router_state")
      .where("rule_id", "=", ruleId)
      .where("router_id", "=", routerId)
      .returning(["offline_at", "dedup_key"])
      .executeTakeFirst();
    return row ? { offlineAt: row.offline_at, dedupKey: row.dedup_key } : null;
  }

  /** Processed notifications older than `before` go (storms count only the last minute). */
  async prune(before: Date): Promise<void> {
    await this.#query.kysely
      .deleteFrom("alert_pending")
      .where("state", "=", "done")
      .where("processed_at", "<", before)
      .execute();
  }
}
