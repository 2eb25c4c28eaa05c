import {
  type AlertRuleRecord,
  AlertRulesRepository,
  type Database,
  NotificationsRepository,
  type Query,
  queryOf,
  type RouterSelectorRecord,
} from "@fleet/db";
import {
  ALERT_LIMITS,
  AppError,
  type Clock,
  type TAlertRule,
  type TCreateAlertRuleInput,
  type TRouterSelector,
  type TUpdateAlertRuleInput,
} from "@fleet/shared";
import { toAlertRuleResponse } from "./alerts.mapper.ts";

export interface AlertRulesDeps {
  db: Pick<Database, "query" | "transaction">;
  clock: Clock;
  /** A rule changed: the engine looks at its outbox without waiting for its poll. */
  onChange?: () => void;
}

const notFound = () => new AppError("not_found", "Alert rule not found.");
const CAP_RETRY_AFTER_SECONDS = 60;

/** A selector as stored: only the conditions given, tags and ids without duplicates. */
export const storedSelector = (selector: TRouterSelector | undefined): RouterSelectorRecord => ({
  ...(selector?.team_id !== undefined ? { team_id: selector.team_id } : {}),
  ...(selector?.tags !== undefined ? { tags: [...new Set(selector.tags)] } : {}),
  ...(selector?.router_ids !== undefined ? { router_ids: [...new Set(selector.router_ids)] } : {}),
});

/**
 * The selector of a rule or window owned by `teamId` (made by a team-bound credential): narrowed to
 * that team, after checking it names no other team and no router outside it (404 as another
 * organization's). Organization-wide (`teamId` undefined): only the organization is checked.
 */
export const ownSelector = async (
  query: Query,
  organizationId: string,
  routers: RouterSelectorRecord,
  teamId: string | undefined,
): Promise<RouterSelectorRecord> => {
  if (!(await new AlertRulesRepository(query).selectorIsOwn(organizationId, routers, teamId))) {
    throw new AppError("not_found", routers.team_id !== undefined ? "Team or router not found." : "Router not found.");
  }
  return teamId === undefined ? routers : { ...routers, team_id: teamId };
};

/**
 * Alert rules of an organization (docs/api.md "Alerts and maintenance windows"): which events of
 * which routers reach which channels. A channel, team or router of another organization answers
 * 404 like an unknown one; at most {@link ALERT_LIMITS.rulesPerOrganization} rules. With `teamId`
 * (a team-bound credential) every method sees only that team's rules (another's is 404), names only
 * its channels, and a rule it makes selects only its team's routers.
 */
export class AlertRulesService {
  readonly #d: AlertRulesDeps;
  constructor(deps: AlertRulesDeps) {
    this.#d = deps;
  }

  async create(organizationId: string, input: TCreateAlertRuleInput, teamId?: string): Promise<TAlertRule> {
    const selector = storedSelector(input.routers);
    const channelIds = [...new Set(input.channels)];
    const max = ALERT_LIMITS.rulesPerOrganization;
    const created = await this.#d.db.transaction(async (query) => {
      const rules = new AlertRulesRepository(query);
      await new NotificationsRepository(query).lockOrganization(organizationId);
      const routers = await this.#checkReferences(query, organizationId, selector, channelIds, teamId, teamId);
      if ((await rules.count(organizationId)) >= max) return null;
      return rules.insert({
        organizationId,
        teamId: teamId ?? null,
        name: input.name,
        events: input.events.includes("*") ? ["*"] : [...new Set(input.events)],
        routers,
        channelIds,
        minOfflineSeconds: input.min_offline_seconds ?? 0,
        quietHours: input.quiet_hours ?? null,
        createdAt: this.#d.clock.now(),
      });
    });
    if (!created) {
      throw new AppError(
        "rate_limited",
        `This organization already has ${max} alert rules, the most allowed. Delete one to create another.`,
        {
          extra: { limit: max, retry_after_seconds: CAP_RETRY_AFTER_SECONDS },
          retryAfterSeconds: CAP_RETRY_AFTER_SECONDS,
        },
      );
    }
    this.#d.onChange?.();
    return toAlertRuleResponse(created);
  }

  async list(organizationId: string, teamId?: string): Promise<TAlertRule[]> {
    return (await new AlertRulesRepository(queryOf(this.#d.db)).list(organizationId, teamId)).map(toAlertRuleResponse);
  }

  async get(organizationId: string, id: string, teamId?: string): Promise<TAlertRule> {
    const rule = await new AlertRulesRepository(queryOf(this.#d.db)).get(organizationId, id, teamId);
    if (!rule) throw notFound();
    return toAlertRuleResponse(rule);
  }

  /** Replaces the fields given; the rest stay. */
  async update(organizationId: string, input: TUpdateAlertRuleInput, teamId?: string): Promise<TAlertRule> {
    const updated = await this.#d.db.transaction(async (query) => {
      const rules = new AlertRulesRepository(query);
      const current = await rules.get(organizationId, input.id, teamId);
      if (!current) throw notFound();
      const next: AlertRuleRecord = {
        ...current,
        name: input.name ?? current.name,
        events:
          input.events === undefined ? current.events : input.events.includes("*") ? ["*"] : [...new Set(input.events)],
        routers: input.routers === undefined ? current.routers : storedSelector(input.routers),
        channelIds: input.channels === undefined ? current.channelIds : [...new Set(input.channels)],
        minOfflineSeconds: input.min_offline_seconds ?? current.minOfflineSeconds,
        quietHours: input.quiet_hours === undefined ? current.quietHours : input.quiet_hours,
      };
      next.routers = await this.#checkReferences(
        query,
        organizationId,
        next.routers,
        next.channelIds,
        teamId,
        current.teamId ?? undefined,
      );
      return rules.update(next);
    });
    if (!updated) throw notFound();
    return toAlertRuleResponse(updated);
  }

  async delete(organizationId: string, id: string, teamId?: string): Promise<void> {
    if (!(await new AlertRulesRepository(queryOf(this.#d.db)).delete(organizationId, id, teamId))) throw notFound();
  }

  /**
   * Channels visible to the credential (`teamId`), routers of the rule's owner team (`ownerTeamId`):
   * answers the selector to store.
   */
  async #checkReferences(
    query: Query,
    organizationId: string,
    routers: RouterSelectorRecord,
    channelIds: readonly string[],
    teamId: string | undefined,
    ownerTeamId: string | undefined,
  ): Promise<RouterSelectorRecord> {
    const channels = await new NotificationsRepository(query).channelsIn(organizationId, channelIds, teamId);
    if (channels.length !== channelIds.length) throw new AppError("not_found", "Notification channel not found.");
    return ownSelector(query, organizationId, routers, ownerTeamId);
  }
}
