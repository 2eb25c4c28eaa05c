import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** Which routers a rule or a maintenance window covers; every condition given must hold. */
export interface RouterSelectorRecord {
  team_id?: string;
  tags?: string[];
  router_ids?: string[];
}

export interface QuietHoursRecord {
  timezone: string;
  from: string;
  to: string;
}

export interface AlertRuleRecord {
  id: string;
  organizationId: string;
  /** Set when a team-bound credential made it: only that team sees it, and it selects only its routers. */
  teamId: string | null;
  name: string;
  events: string[];
  routers: RouterSelectorRecord;
  channelIds: string[];
  minOfflineSeconds: number;
  quietHours: QuietHoursRecord | null;
  createdAt: Date;
}

export type NewAlertRule = Omit<AlertRuleRecord, "id">;

const selectRules = (query: Query) =>
  query.kysely.selectFrom("alert_rules as r").select((eb) => [
    "r.id",
    "r.organization_id",
    "r.team_id",
    "r.name",
    "r.events",
    "r.routers",
    "r.min_offline_seconds",
    "r.quiet_hours",
    "r.created_at",
    eb
      .selectFrom("alert_rule_channels as c")
      .whereRef("c.rule_id", "=", "r.id")
      .select((sub) => sub.fn.agg<string[]>("json_agg", ["c.channel_id"]).orderBy("c.channel_id").as("ids"))
      .as("channel_ids"),
  ]);

type RuleRow = Awaited<ReturnType<ReturnType<typeof selectRules>["executeTakeFirstOrThrow"]>>;

const ruleFromRow = (row: RuleRow): AlertRuleRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  teamId: row.team_id,
  name: row.name,
  events: row.events,
  routers: row.routers as RouterSelectorRecord,
  channelIds: row.channel_ids ?? [],
  minOfflineSeconds: row.min_offline_seconds,
  quietHours: row.quiet_hours as QuietHoursRecord | null,
  createdAt: row.created_at,
});

/** `alert_rules` and the channels each notifies (`alert_rule_channels`): reads and writes only. */
export class AlertRulesRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async count(organizationId: string): Promise<number> {
    const row = await this.#query.kysely
      .selectFrom("alert_rules")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("organization_id", "=", organizationId)
      .executeTakeFirstOrThrow();
    return toNumber(row.n);
  }

  async insert(input: NewAlertRule): Promise<AlertRuleRecord> {
    const id = crypto.randomUUID();
    await this.#query.kysely
      .insertInto("alert_rules")
      .values({
        id,
        organization_id: input.organizationId,
        name: input.name,
        events: [...input.events],
        routers: { ...input.routers },
        min_offline_seconds: input.minOfflineSeconds,
        quiet_hours: input.quietHours === null ? null : { ...input.quietHours },
        created_at: input.createdAt,
        team_id: input.teamId,
      })
      .execute();
    await this.#setChannels(id, input.channelIds);
    const created = await this.get(input.organizationId, id);
    if (!created) throw new Error("alert rule insert returned no row");
    return created;
  }

  /** With `teamId` (a team-bound credential) here, in `get` and `delete`: only that team's rules. */
  async list(organizationId: string, teamId?: string): Promise<AlertRuleRecord[]> {
    const rows = await selectRules(this.#query)
      .where("r.organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("r.team_id", "=", teamId ?? null))
      .orderBy("r.created_at")
      .orderBy("r.id")
      .execute();
    return rows.map(ruleFromRow);
  }

  /** The rules of these organizations (the engine's fan-out). */
  async rulesOf(organizationIds: readonly string[]): Promise<AlertRuleRecord[]> {
    if (organizationIds.length === 0) return [];
    const rows = await selectRules(this.#query)
      .where("r.organization_id", "=", (eb) => eb.fn.any(eb.val([...organizationIds])))
      .execute();
    return rows.map(ruleFromRow);
  }

  async get(organizationId: string, id: string, teamId?: string): Promise<AlertRuleRecord | null> {
    if (!isUuid(id)) return null;
    const row = await selectRules(this.#query)
      .where("r.id", "=", id)
      .where("r.organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("r.team_id", "=", teamId ?? null))
      .executeTakeFirst();
    return row ? ruleFromRow(row) : null;
  }

  async update(rule: AlertRuleRecord): Promise<AlertRuleRecord | null> {
    const updated = await this.#query.kysely
      .updateTable("alert_rules")
      .set({
        name: rule.name,
        events: [...rule.events],
        routers: { ...rule.routers },
        min_offline_seconds: rule.minOfflineSeconds,
        quiet_hours: rule.quietHours === null ? null : { ...rule.quietHours },
      })
      .where("id", "=", rule.id)
      .where("organization_id", "=", rule.organizationId)
      .returning("id")
      .executeTakeFirst();
    if (!updated) return null;
    await this.#query.kysely.deleteFrom("alert_rule_channels").where("rule_id", "=", rule.id).execute();
    await this.#setChannels(rule.id, rule.channelIds);
    return this.get(rule.organizationId, rule.id);
  }

  async delete(organizationId: string, id: string, teamId?: string): Promise<boolean> {
    if (!isUuid(id)) return false;
    const row = await this.#query.kysely
      .deleteFrom("alert_rules")
      .where("id", "=", id)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .returning("id")
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Whether a selector names only the organization's own team and routers (another organization's
   * id answers 404 like an unknown one); with `teamId`, only that team and its routers.
   */
  async selectorIsOwn(organizationId: string, selector: RouterSelectorRecord, teamId?: string): Promise<boolean> {
    if (selector.team_id !== undefined) {
      if (!isUuid(selector.team_id)) return false;
      if (teamId !== undefined && selector.team_id !== teamId) return false;
      const team = await this.#query.kysely
        .selectFrom("teams")
        .select("id")
        .where("id", "=", selector.team_id)
        .where("organization_id", "=", organizationId)
        .executeTakeFirst();
      if (!team) return false;
    }
    const ids = [...new Set(selector.router_ids ?? [])];
    if (ids.length === 0) return true;
    if (!ids.every(isUuid)) return false;
    const row = await this.#query.kysely
      .selectFrom("routers")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("organization_id", "=", organizationId)
      .where("id", "=", (eb) => eb.fn.any(eb.val(ids)))
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .executeTakeFirstOrThrow();
    return toNumber(row.n) === ids.length;
  }

  async #setChannels(ruleId: string, channelIds: readonly string[]): Promise<void> {
    if (channelIds.length === 0) return;
    await this.#query.kysely
      .insertInto("alert_rule_channels")
      .values([...new Set(channelIds)].map((channelId) => ({ rule_id: ruleId, channel_id: channelId })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}
