import {
  AlertEngineRepository,
  type AlertPendingRecord,
  type AlertRouterFacts,
  type AlertRuleRecord,
  AlertRulesRepository,
  type ChannelRecord,
  type Database,
  type DeliveryEnqueuer,
  type MaintenanceWindowRecord,
  MaintenanceWindowsRepository,
  type NewAlertPending,
  type NewNotificationDelivery,
  NotificationsRepository,
  type Query,
  queryOf,
} from "@fleet/db";
import { type Clock, coalescingRunner, formatIsoUtc, quietHoursEnd } from "@fleet/shared";
import type { Logger } from "pino";
import { type AlertMessage, eventSummary, formatWhen } from "./alert-message.ts";
import { queueNotificationDeliveries } from "./notification-channels.service.ts";
import { maintenanceEnd, selects } from "./router-selection.ts";
import { resourceLabel } from "../health/resource-labels.ts";

/** More than this many routers of one organization within {@link STORM_WINDOW_MS}: one grouped message. */
export const STORM_THRESHOLD = 10;
export const STORM_WINDOW_MS = 60_000;
/** Names a grouped message lists (docs/api.md "Alerts and maintenance windows"). */
export const STORM_NAMES = 20;

export interface AlertEngineDeps {
  db: Pick<Database, "query" | "transaction">;
  jobs: DeliveryEnqueuer;
  /** Starts this process's delivery worker once any channel exists. */
  runtime: { started: boolean; ensure(): Promise<unknown> };
  clock: Clock;
  logger: Logger;
  /** `API_PUBLIC_URL`: messages link to `<it>/console/routers/<id>`. */
  publicUrl: () => string;
  pollMs?: number;
  batch?: number;
}

type Row = Omit<NewNotificationDelivery, "id">;

interface EngineContext {
  rules: Map<string, AlertRuleRecord>;
  routers: Map<string, AlertRouterFacts>;
  windows: Map<string, MaintenanceWindowRecord[]>;
  channels: Map<string, ChannelRecord>;
  organizationNames: Map<string, string>;
}

const hasSelector = (rule: AlertRuleRecord) =>
  rule.routers.team_id !== undefined ||
  (rule.routers.tags?.length ?? 0) > 0 ||
  (rule.routers.router_ids?.length ?? 0) > 0;
const subscribes = (rule: AlertRuleRecord, action: string) => rule.events.includes("*") || rule.events.includes(action);
const routerName = (r: AlertRouterFacts | undefined) => (r ? r.name || r.identity || r.id : "");
const offlineKey = (routerId: string) => `fleet-${routerId}-offline`;

/**
 * `router.resource` (docs/api.md "Health thresholds"): what crossed which threshold; PagerDuty
 * triggers one incident per router and measure and resolves it when the fault completes.
 */
const resourceMessage = (
  base: Pick<AlertMessage, "organization" | "at" | "link">,
  p: AlertPendingRecord,
  name: string,
  when: string,
): AlertMessage => {
  const d = (p.details.details ?? {}) as Record<string, unknown>;
  const measure = String(d.measure ?? "");
  const { name: label, unit } = resourceLabel(measure);
  const above = d.state === "above";
  const value = typeof d.value === "number" ? `${d.value}${unit}` : "no value";
  const text = above
    ? `${label} on ${name} in ${base.organization} is ${value}, above ${String(d.threshold)}${unit}, at ${when}.`
    : `${label} on ${name} in ${base.organization} is back to normal (${value}) at ${when}.`;
  return {
    ...base,
    kind: "event",
    title: above ? `${label} high: ${name}` : `${label} back to normal: ${name}`,
    lines: [{ text, ...(base.link ? { link: base.link } : {}) }],
    pagerduty: {
      action: above ? "trigger" : "resolve",
      dedupKey: `fleet-${p.routerId ?? p.organizationId}-resource-${measure}`,
      severity: above ? "warning" : "info",
    },
  };
};

/**
 * Turns audit entries into notifications (docs/api.md "Alerts and maintenance windows"), off the
 * heartbeat path: the heartbeat daemon only writes `router.offline`/`router.online` as it always
 * did, and the `audit_to_alerts` trigger copies those of organizations with rules into
 * `alert_events`. Every API process runs an engine (SKIP LOCKED shares the work); a pass:
 * 1. takes outbox entries and makes each matching rule's notification wait for its time
 *    (`min_offline_seconds` for an offline; a router back before it cancels its offline);
 * 2. takes what came due: suppressed during maintenance (an offline waits for the window's end),
 *    held during quiet hours (summed up when they end), grouped in a storm, or delivered;
 * 3. closes storms whose minute is over: one grouped message per channel.
 * Deliveries are stored and queued in the pass's transaction, keyed so that a pass repeated after
 * a crash stores each once.
 */
export class AlertEngine {
  readonly #d: Required<AlertEngineDeps>;
  readonly #timer: NodeJS.Timeout;
  readonly #runner = coalescingRunner(() => this.#pass());
  #stopped = false;

  constructor(deps: AlertEngineDeps) {
    this.#d = { pollMs: 1_000, batch: 500, ...deps };
    this.#timer = setInterval(() => this.wake(), this.#d.pollMs);
    this.#timer.unref();
  }

  wake(): void {
    if (!this.#stopped) void this.#runner.run();
  }

  /** One full pass now (tests). */
  run(): Promise<void> {
    return this.#runner.run();
  }

  async close(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#runner.current();
  }

  async #pass(): Promise<void> {
    try {
      const look = queryOf(this.#d.db);
      if (!this.#d.runtime.started && (await new NotificationsRepository(look).anyChannel())) {
        await this.#d.runtime.ensure();
      }
      const now = this.#d.clock.now();
      if (!(await new AlertEngineRepository(look).hasWork(now))) return;
      await this.#d.jobs.ready?.();
      while ((await this.#d.db.transaction((q) => this.#takeEvents(q))) >= this.#d.batch && !this.#stopped);
      while ((await this.#d.db.transaction((q) => this.#takeDue(q, now))) >= this.#d.batch && !this.#stopped);
      await this.#d.db.transaction((q) => this.#closeStorms(q, now));
      await new AlertEngineRepository(look).prune(new Date(now.getTime() - 3_600_000));
    } catch (error) {
      this.#d.logger.warn({ err: error }, "alert pass failed; retrying at the next poll");
    }
  }

  async #takeEvents(query: Query): Promise<number> {
    const engine = new AlertEngineRepository(query);
    const events = await engine.takeEvents(this.#d.batch);
    if (events.length === 0) return 0;
    const rules = await new AlertRulesRepository(query).rulesOf([...new Set(events.map((e) => e.organizationId))]);
    const routers = new Map(
      (await engine.routers(events.flatMap((e) => (e.routerId ? [e.routerId] : [])))).map((r) => [r.id, r]),
    );
    const pending: NewAlertPending[] = [];
    for (const event of events) {
      const router = event.routerId ? routers.get(event.routerId) : undefined;
      // A removed router's history notifies nobody.
      if (event.routerId && !router) continue;
      for (const rule of rules) {
        if (rule.organizationId !== event.organizationId) continue;
        if (router ? !selects(rule.routers, router) : hasSelector(rule)) continue;
        const base = { organizationId: rule.organizationId, ruleId: rule.id, routerId: router?.id ?? null };
        const watchesOffline = subscribes(rule, "router.offline");
        if (router && event.action === "router.offline" && watchesOffline) {
          pending.push({
            ...base,
            kind: "offline",
            event: event.action,
            occurredAt: event.occurredAt,
            dueAt: new Date(event.occurredAt.getTime() + rule.minOfflineSeconds * 1000),
            details: { audit_id: event.auditId },
          });
        } else if (router && event.action === "router.online" && watchesOffline) {
          // Back before its offline was notified: nothing at all (min_offline_seconds, maintenance).
          const waiting = pending.findIndex(
            (p) => p.ruleId === rule.id && p.routerId === router.id && p.kind === "offline",
          );
          if (waiting >= 0) {
            pending.splice(waiting, 1);
            continue;
          }
          // The offline this return answers: one held for quiet hours' summary (which then tells
          // its return too, CONTRACT 19), or one told already; a still waiting one is cancelled.
          const quiet = await engine.quietOffline(rule.id, router.id);
          let told = quiet && { dedupKey: offlineKey(router.id), offlineAt: quiet.occurredAt };
          if (!told && !(await engine.cancelOffline(rule.id, router.id)))
            told = await engine.takeOffline(rule.id, router.id);
          if (!told) continue;
          pending.push({
            ...base,
            kind: "recovered",
            event: event.action,
            occurredAt: event.occurredAt,
            dueAt: event.occurredAt,
            details: {
              audit_id: event.auditId,
              dedup_key: told.dedupKey,
              offline_at: formatIsoUtc(told.offlineAt),
            },
          });
        } else if (subscribes(rule, event.action)) {
          pending.push({
            ...base,
            kind: "event",
            event: event.action,
            occurredAt: event.occurredAt,
            dueAt: event.occurredAt,
            details: { audit_id: event.auditId, details: event.details },
          });
        }
      }
    }
    await engine.insertPending(pending);
    await engine.deleteEvents(events.map((e) => e.auditId));
    return events.length;
  }

  async #takeDue(query: Query, now: Date): Promise<number> {
    const engine = new AlertEngineRepository(query);
    const due = await engine.takeDue(now, this.#d.batch);
    if (due.length === 0) return 0;
    const ctx = await this.#context(query, due);
    const rows: Row[] = [];
    const done: string[] = [];
    const quiet = new Map<string, AlertPendingRecord[]>();
    const stormCandidates = new Map<string, AlertPendingRecord[]>();
    for (const p of due) {
      const rule = ctx.rules.get(p.ruleId);
      const router = p.routerId ? ctx.routers.get(p.routerId) : undefined;
      if (!rule || (p.routerId && !router)) {
        done.push(p.id);
        continue;
      }
      if (p.state === "quiet") {
        quiet.set(rule.id, [...(quiet.get(rule.id) ?? []), p]);
        continue;
      }
      if (router) {
        const windowEnd = maintenanceEnd(ctx.windows.get(p.organizationId) ?? [], router, now);
        if (windowEnd) {
          if (p.state !== "maintenance") {
            const message = this.#message(ctx, rule, p);
            // A recovery still resolves a PagerDuty incident opened before the window: closed, not told.
            const resolves = (row: Row) =>
              p.kind === "recovered" && ctx.channels.get(row.channelId)?.type === "pagerduty";
            rows.push(
              ...this.#rows(ctx, rule, p, message, "suppressed").filter((row) => !resolves(row)),
              ...this.#rows(ctx, rule, p, message, "pending").filter(resolves),
            );
          }
          if (p.kind === "offline") await engine.hold([p.id], "maintenance", windowEnd);
          else done.push(p.id);
          continue;
        }
        // The window ended with the router back: its online cancelled this; a pulse says the same.
        if (p.state === "maintenance" && p.kind === "offline" && router.hasPulse) {
          done.push(p.id);
          continue;
        }
      }
      const quietEnd = rule.quietHours ? quietHoursEnd(now, rule.quietHours) : null;
      if (quietEnd) {
        await engine.hold([p.id], "quiet", quietEnd);
        continue;
      }
      if (p.kind === "offline" || p.kind === "recovered") {
        const key = `${p.organizationId}:${p.kind}`;
        stormCandidates.set(key, [...(stormCandidates.get(key) ?? []), p]);
        continue;
      }
      rows.push(...this.#rows(ctx, rule, p, this.#message(ctx, rule, p), "pending"));
      done.push(p.id);
    }
    for (const [key, members] of stormCandidates) {
      const [organizationId = "", kind] = key.split(":") as [string, "offline" | "recovered"];
      let storm = await engine.openStorm(organizationId, kind);
      if (!storm) {
        const recent = await engine.recentRouters(organizationId, kind, new Date(now.getTime() - STORM_WINDOW_MS));
        if (recent + new Set(members.map((m) => m.routerId)).size > STORM_THRESHOLD) {
          storm = {
            organizationId,
            kind,
            id: crypto.randomUUID(),
            openedAt: now,
            closesAt: new Date(now.getTime() + STORM_WINDOW_MS),
          };
          await engine.insertStorm(storm);
        }
      }
      if (storm) {
        await engine.hold(
          members.map((m) => m.id),
          "storm",
          storm.closesAt,
          storm.id,
        );
        continue;
      }
      for (const p of members) {
        const rule = ctx.rules.get(p.ruleId);
        if (!rule) continue;
        rows.push(...this.#rows(ctx, rule, p, this.#message(ctx, rule, p), "pending"));
        if (p.kind === "offline" && p.routerId)
          await engine.rememberOffline(rule.id, p.routerId, p.occurredAt, offlineKey(p.routerId));
        done.push(p.id);
      }
    }
    for (const [ruleId, held] of quiet) {
      const rule = ctx.rules.get(ruleId);
      if (!rule) continue;
      // In the order it happened (all come due together, when the quiet hours end).
      const items = held.toSorted((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime());
      // An offline whose return the summary tells too is over: nothing to pair a later recovery with.
      const back = new Set(items.flatMap((p) => (p.kind === "recovered" && p.routerId ? [p.routerId] : [])));
      rows.push(...this.#summaryRows(ctx, rule, items, back));
      for (const p of items) {
        if (p.kind === "offline" && p.routerId && !back.has(p.routerId))
          await engine.rememberOffline(rule.id, p.routerId, p.occurredAt, offlineKey(p.routerId));
        done.push(p.id);
      }
    }
    await queueNotificationDeliveries(query, this.#d.jobs, rows, now);
    await engine.markDone(done, now);
    return due.length;
  }

  async #closeStorms(query: Query, now: Date): Promise<void> {
    const engine = new AlertEngineRepository(query);
    const storms = await engine.takeClosedStorms(now);
    for (const storm of storms) {
      const members = await engine.stormMembers(storm.id);
      await engine.deleteStorm(storm.organizationId, storm.kind);
      if (members.length === 0) continue;
      const ctx = await this.#context(query, members);
      const routerIds = [...new Set(members.flatMap((m) => (m.routerId ? [m.routerId] : [])))];
      const organization = ctx.routers.get(routerIds[0] ?? "")?.organizationName ?? "";
      // One message per channel, whichever of the organization's rules brought it in.
      const channelRouters = new Map<string, Set<string>>();
      const pdKeys = new Map<string, Set<string>>();
      const remembered: Parameters<AlertEngineRepository["rememberOfflineMany"]>[0][number][] = [];
      for (const m of members) {
        const rule = ctx.rules.get(m.ruleId);
        if (!rule || !m.routerId) continue;
        for (const channelId of rule.channelIds) {
          channelRouters.set(channelId, (channelRouters.get(channelId) ?? new Set()).add(m.routerId));
          const dedup =
            storm.kind === "offline"
              ? `fleet-storm-${storm.id}`
              : String(m.details.dedup_key ?? offlineKey(m.routerId));
          pdKeys.set(channelId, (pdKeys.get(channelId) ?? new Set()).add(dedup));
        }
        if (storm.kind === "offline")
          remembered.push({
            ruleId: rule.id,
            routerId: m.routerId,
            offlineAt: m.occurredAt,
            dedupKey: `fleet-storm-${storm.id}`,
          });
      }
      // One statement for the whole storm, not one per router.
      await engine.rememberOfflineMany(remembered);
      const rows: Row[] = [];
      for (const [channelId, ids] of channelRouters) {
        const channel = ctx.channels.get(channelId);
        if (!channel) continue;
        const listed = [...ids].map((id) => ctx.routers.get(id)).filter((r): r is AlertRouterFacts => r !== undefined);
        const lines: AlertMessage["lines"] = listed
          .slice(0, STORM_NAMES)
          .map((r) => ({ text: routerName(r), link: this.#link(r.id) }));
        if (listed.length > STORM_NAMES) lines.push({ text: `and ${listed.length - STORM_NAMES} more` });
        const title =
          storm.kind === "offline"
            ? `${listed.length} routers offline in ${organization}`
            : `${listed.length} routers back online in ${organization}`;
        const keys = channel.type === "pagerduty" ? [...(pdKeys.get(channelId) ?? [])] : [`fleet-storm-${storm.id}`];
        for (const dedupKey of keys) {
          const message: AlertMessage = {
            kind: "storm",
            title,
            organization,
            lines: [{ text: `Since ${formatWhen(storm.openedAt)}` }, ...lines],
            pagerduty: { action: storm.kind === "offline" ? "trigger" : "resolve", dedupKey, severity: "critical" },
            at: formatIsoUtc(storm.openedAt),
          };
          rows.push({
            channelId,
            organizationId: storm.organizationId,
            event: storm.kind === "offline" ? "router.offline" : "router.online",
            routerId: null,
            status: "pending",
            message,
            idempotencyKey: `storm:${storm.id}:${dedupKey}`,
          });
        }
      }
      await queueNotificationDeliveries(query, this.#d.jobs, rows, now);
      await engine.markDone(
        members.map((m) => m.id),
        now,
      );
    }
  }

  /** Rules, routers, windows and channels of the organizations of `items`. */
  async #context(query: Query, items: readonly AlertPendingRecord[]): Promise<EngineContext> {
    const organizationIds = [...new Set(items.map((p) => p.organizationId))];
    const engine = new AlertEngineRepository(query);
    const rules = await new AlertRulesRepository(query).rulesOf(organizationIds);
    const routers = await engine.routers(items.flatMap((p) => (p.routerId ? [p.routerId] : [])));
    const windows = await new MaintenanceWindowsRepository(query).listFor(organizationIds);
    const notifications = new NotificationsRepository(query);
    const channels: ChannelRecord[] = [];
    for (const organizationId of organizationIds) {
      const ids = [...new Set(rules.filter((r) => r.organizationId === organizationId).flatMap((r) => r.channelIds))];
      channels.push(...(await notifications.channelsIn(organizationId, ids)));
    }
    const names = new Map<string, string>();
    for (const organizationId of organizationIds) {
      names.set(
        organizationId,
        routers.find((r) => r.organizationId === organizationId)?.organizationName ??
          (await engine.organizationName(organizationId)),
      );
    }
    const byOrganization = new Map<string, MaintenanceWindowRecord[]>();
    for (const w of windows) byOrganization.set(w.organizationId, [...(byOrganization.get(w.organizationId) ?? []), w]);
    return {
      rules: new Map(rules.map((r) => [r.id, r])),
      routers: new Map(routers.map((r) => [r.id, r])),
      windows: byOrganization,
      channels: new Map(channels.map((c) => [c.id, c])),
      organizationNames: names,
    };
  }

  #link(routerId: string): string {
    return `${this.#d.publicUrl().replace(/\/+$/, "")}/console/routers/${routerId}`;
  }

  /** The message of one notification, in the rule's quiet-hours time zone (else UTC). */
  #message(ctx: EngineContext, rule: AlertRuleRecord, p: AlertPendingRecord): AlertMessage {
    const router = p.routerId ? ctx.routers.get(p.routerId) : undefined;
    const organization = ctx.organizationNames.get(p.organizationId) ?? "";
    const when = formatWhen(p.occurredAt, rule.quietHours?.timezone);
    const name = routerName(router);
    const link = router ? this.#link(router.id) : undefined;
    const base = { organization, at: formatIsoUtc(p.occurredAt), ...(link ? { link } : {}) };
    if (p.kind === "offline") {
      return {
        ...base,
        kind: "offline",
        title: `Router offline: ${name}`,
        lines: [{ text: `${name} in ${organization} went offline at ${when}.`, ...(link ? { link } : {}) }],
        pagerduty: { action: "trigger", dedupKey: offlineKey(p.routerId ?? ""), severity: "critical" },
      };
    }
    if (p.kind === "recovered") {
      return {
        ...base,
        kind: "recovered",
        title: `Router recovered: ${name}`,
        lines: [{ text: `${name} in ${organization} is back online since ${when}.`, ...(link ? { link } : {}) }],
        pagerduty: {
          action: "resolve",
          dedupKey: String(p.details.dedup_key ?? offlineKey(p.routerId ?? "")),
          severity: "info",
        },
      };
    }
    if (p.event === "router.resource") return resourceMessage(base, p, name, when);
    const subject = name ? ` on ${name}` : "";
    const details = p.details.details;
    const summary = eventSummary(
      p.event,
      details && typeof details === "object" ? (details as Record<string, unknown>) : {},
      subject,
    );
    return {
      ...base,
      kind: "event",
      title: summary,
      lines: [{ text: `${summary} in ${organization} at ${when}.`, ...(link ? { link } : {}) }],
      pagerduty: {
        action: "trigger",
        dedupKey: `fleet-${p.routerId ?? p.organizationId}-${p.event}`,
        severity: "warning",
      },
    };
  }

  /** One delivery of `message` per channel of the rule, keyed by what it tells. */
  #rows(
    ctx: EngineContext,
    rule: AlertRuleRecord,
    p: AlertPendingRecord,
    message: AlertMessage,
    status: "pending" | "suppressed",
  ): Row[] {
    const what =
      p.kind === "event" ? `event:${String(p.details.audit_id)}` : `${p.kind}:${p.routerId}:${p.occurredAt.getTime()}`;
    return rule.channelIds
      .filter((id) => ctx.channels.has(id))
      .map((channelId) => ({
        channelId,
        organizationId: p.organizationId,
        event: p.event,
        routerId: p.routerId,
        status,
        message,
        idempotencyKey: `${status === "suppressed" ? "suppressed:" : ""}${what}`,
      }));
  }

  /**
   * What happened during a rule's quiet hours, in one message per channel when they end;
   * PagerDuty gets each trigger and resolve itself (its incidents are keyed per router).
   */
  #summaryRows(
    ctx: EngineContext,
    rule: AlertRuleRecord,
    items: readonly AlertPendingRecord[],
    /** Routers whose return is among `items`: their offline is over. */
    back: ReadonlySet<string>,
  ): Row[] {
    const organization = ctx.organizationNames.get(rule.organizationId) ?? "";
    const messages = items.map((p) => ({ p, m: this.#message(ctx, rule, p) }));
    const lines = messages
      .slice(0, STORM_NAMES)
      .map(({ m }) => ({ text: m.lines[0]?.text ?? m.title, ...(m.link ? { link: m.link } : {}) }));
    if (messages.length > STORM_NAMES) lines.push({ text: `and ${messages.length - STORM_NAMES} more` });
    const first = items[0];
    const summary: AlertMessage = {
      kind: "summary",
      title: `While quiet: ${items.length} alert${items.length === 1 ? "" : "s"} in ${organization}`,
      organization,
      lines,
      at: formatIsoUtc(first?.occurredAt ?? new Date(0)),
    };
    const rows: Row[] = [];
    for (const channelId of rule.channelIds) {
      const channel = ctx.channels.get(channelId);
      if (!channel) continue;
      if (channel.type === "pagerduty") {
        // An incident opened and closed while quiet pages nobody: its trigger and resolve, sent at
        // once as two deliveries, could also reach PagerDuty in either order.
        for (const { p, m } of messages) {
          if (p.routerId && (p.kind === "offline" || p.kind === "recovered") && back.has(p.routerId)) continue;
          rows.push(...this.#rows(ctx, { ...rule, channelIds: [channelId] }, p, m, "pending"));
        }
        continue;
      }
      rows.push({
        channelId,
        organizationId: rule.organizationId,
        event: "alert.summary",
        routerId: null,
        status: "pending",
        message: summary,
        idempotencyKey: `quiet:${rule.id}:${items.map((p) => p.id).sort()[0]}`,
      });
    }
    return rows;
  }
}
