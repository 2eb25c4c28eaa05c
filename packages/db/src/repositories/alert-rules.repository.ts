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

type Row = Record<string, unknown>;

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const json = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;

const RULE_COLUMNS = `r.id, r.organization_id, r.team_id, r.name, r.events, r.routers, r.min_offline_seconds, r.quiet_hours,
  ${ms("r.created_at", "created_ms")},
  coalesce((select json_agg(c.channel_id::text order by c.channel_id) from alert_rule_channels c where c.rule_id = r.id), '[]') as channel_ids`;

const ruleFromRow = (row: Row): AlertRuleRecord => ({
  id: String(row.id),
  organizationId: String(row.organization_id),
  teamId: row.team_id === null || row.team_id === undefined ? null : String(row.team_id),
  name: String(row.name),
  events: json<string[]>(row.events) ?? [],
  routers: json<RouterSelectorRecord>(row.routers) ?? {},
  channelIds: (json<unknown[]>(row.channel_ids) ?? []).map(String),
  minOfflineSeconds: toNumber(row.min_offline_seconds),
  quietHours:
    row.quiet_hours === null || row.quiet_hours === undefined ? null : json<QuietHoursRecord>(row.quiet_hours),
  createdAt: new Date(toNumber(row.created_ms)),
});

/** `alert_rules` and the channels each notifies (`alert_rule_channels`): reads and writes only. */
export class AlertRulesRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async count(organizationId: string): Promise<number> {
    const [row] = await this.#query<Row>("select count(*)::int as n from alert_rules where organization_id = $1", [
      organizationId,
    ]);
    return toNumber(row?.n ?? 0);
  }

  async insert(input: NewAlertRule): Promise<AlertRuleRecord> {
    const [row] = await this.#query<Row>(
      `insert into alert_rules (id, organization_id, name, events, routers, min_offline_seconds, quiet_hours, created_at, team_id)
       values (gen_random_uuid(), $1, $2, $3::jsonb, $4::jsonb, $5, $6::jsonb, to_timestamp($7::float8 / 1000.0), $8::uuid)
       returning id`,
      [
        input.organizationId,
        input.name,
        JSON.stringify(input.events),
        JSON.stringify(input.routers),
        input.minOfflineSeconds,
        input.quietHours === null ? null : JSON.stringify(input.quietHours),
        input.createdAt.getTime(),
        input.teamId,
      ],
    );
    const id = String(row?.id);
    await this.#setChannels(id, input.channelIds);
    const created = await this.get(input.organizationId, id);
    if (!created) throw new Error("alert rule insert returned no row");
    return created;
  }

  /** With `teamId` (a team-bound credential) here, in `get` and `delete`: only that team's rules. */
  async list(organizationId: string, teamId?: string): Promise<AlertRuleRecord[]> {
    const rows = await this.#query<Row>(
      `select ${RULE_COLUMNS} from alert_rules r where r.organization_id = $1
       and ($2::uuid is null or r.team_id = $2::uuid) order by r.created_at, r.id`,
      [organizationId, teamId ?? null],
    );
    return rows.map(ruleFromRow);
  }

  /** The rules of these organizations (the engine's fan-out). */
  async rulesOf(organizationIds: readonly string[]): Promise<AlertRuleRecord[]> {
    if (organizationIds.length === 0) return [];
    const rows = await this.#query<Row>(
      `select ${RULE_COLUMNS} from alert_rules r where r.organization_id = any($1::uuid[])`,
      [organizationIds],
    );
    return rows.map(ruleFromRow);
  }

  async get(organizationId: string, id: string, teamId?: string): Promise<AlertRuleRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      `select ${RULE_COLUMNS} from alert_rules r where r.id = $1 and r.organization_id = $2
       and ($3::uuid is null or r.team_id = $3::uuid)`,
      [id, organizationId, teamId ?? null],
    );
    return rows[0] ? ruleFromRow(rows[0]) : null;
  }

  async update(rule: AlertRuleRecord): Promise<AlertRuleRecord | null> {
    const rows = await this.#query<Row>(
      `update alert_rules set name = $3, events = $4::jsonb, routers = $5::jsonb, min_offline_seconds = $6,
         quiet_hours = $7::jsonb where id = $1 and organization_id = $2 returning id`,
      [
        rule.id,
        rule.organizationId,
        rule.name,
        JSON.stringify(rule.events),
        JSON.stringify(rule.routers),
        rule.minOfflineSeconds,
        rule.quietHours === null ? null : JSON.stringify(rule.quietHours),
      ],
    );
    if (rows.length === 0) return null;
    await this.#query("delete from alert_rule_channels where rule_id = $1", [rule.id]);
    await this.#setChannels(rule.id, rule.channelIds);
    return this.get(rule.organizationId, rule.id);
  }

  async delete(organizationId: string, id: string, teamId?: string): Promise<boolean> {
    if (!isUuid(id)) return false;
    const rows = await this.#query(
      "delete from alert_rules where id = $1 and organization_id = $2 and ($3::uuid is null or team_id = $3::uuid) returning id",
      [id, organizationId, teamId ?? null],
    );
    return rows.length > 0;
  }

  /**
   * Whether a selector names only the organization's own team and routers (another organization's
   * id answers 404 like an unknown one); with `teamId`, only that team and its routers.
   */
  async selectorIsOwn(organizationId: string, selector: RouterSelectorRecord, teamId?: string): Promise<boolean> {
    if (selector.team_id !== undefined) {
      if (!isUuid(selector.team_id)) return false;
      if (teamId !== undefined && selector.team_id !== teamId) return false;
      const teams = await this.#query("select 1 from teams where id = $1 and organization_id = $2", [
        selector.team_id,
        organizationId,
      ]);
      if (teams.length === 0) return false;
    }
    const ids = [...new Set(selector.router_ids ?? [])];
    if (ids.length === 0) return true;
    if (!ids.every(isUuid)) return false;
    const [row] = await this.#query<Row>(
      `select count(*)::int as n from routers where organization_id = $1 and id = any($2::uuid[])
       and ($3::uuid is null or team_id = $3::uuid)`,
      [organizationId, ids, teamId ?? null],
    );
    return toNumber(row?.n ?? 0) === ids.length;
  }

  async #setChannels(ruleId: string, channelIds: readonly string[]): Promise<void> {
    if (channelIds.length === 0) return;
    await this.#query(
      `insert into alert_rule_channels (rule_id, channel_id) select $1, c from unnest($2::uuid[]) as c
       on conflict do nothing`,
      [ruleId, [...new Set(channelIds)]],
    );
  }
}
