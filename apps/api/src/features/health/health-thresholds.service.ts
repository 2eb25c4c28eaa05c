import {
  type Database,
  HealthThresholdsRepository,
  queryOf,
  type RouterRecord,
  type StoredThresholds,
} from "@fleet/db";
import {
  AppError,
  type Clock,
  DEFAULT_HEALTH_THRESHOLDS,
  HEALTH_MEASURES,
  type THealthMeasure,
  type THealthThresholds,
  type THealthThresholdsBody,
  type TRouterHealthThresholds,
} from "@fleet/shared";

export interface HealthThresholdsDeps {
  db: Pick<Database, "query" | "transaction">;
  routers: { findInTeam(teamId: string, routerId: string): Promise<RouterRecord | null> };
  clock: Clock;
}

/** The measures a body names, in stored form (absent: unchanged; null: not watched). */
const changesOf = (input: THealthThresholdsBody): StoredThresholds => {
  const changes: StoredThresholds = {};
  for (const measure of HEALTH_MEASURES) {
    const value = input[measure];
    if (value !== undefined)
      changes[measure] = value === null ? null : { above: value.above, for_seconds: value.for_seconds };
  }
  return changes;
};

/** Every measure as it applies: each level's named measures over the one below. */
export const effectiveThresholds = (...levels: StoredThresholds[]): THealthThresholds => {
  const out = { ...DEFAULT_HEALTH_THRESHOLDS };
  for (const level of levels) {
    for (const measure of HEALTH_MEASURES) {
      const value = level[measure];
      if (value !== undefined) out[measure] = value;
    }
  }
  return out;
};

const notFound = () => new AppError("not_found", "Router not found.");

/**
 * Health thresholds (docs/api.md "Health thresholds"): per organization over the defaults, and per
 * router over its organization's. A PUT replaces only the measures it names; a measure set to null
 * is not watched (its open fault completes at the next evaluation). Router overrides are reached
 * through the credential's team, like every router endpoint: another team's or organization's
 * router is 404.
 */
export class HealthThresholdsService {
  readonly #d: HealthThresholdsDeps;
  constructor(deps: HealthThresholdsDeps) {
    this.#d = deps;
  }

  async get(organizationId: string): Promise<THealthThresholds> {
    return effectiveThresholds(await new HealthThresholdsRepository(queryOf(this.#d.db)).organization(organizationId));
  }

  /** A team-bound credential cannot change what the whole organization watches (403). */
  async update(organizationId: string, input: THealthThresholdsBody, teamId?: string): Promise<THealthThresholds> {
    if (teamId !== undefined) {
      throw new AppError(
        "forbidden",
        "A credential bound to a team cannot change the organization's health thresholds.",
      );
    }
    const stored = await new HealthThresholdsRepository(queryOf(this.#d.db)).mergeOrganization(
      organizationId,
      changesOf(input),
      this.#d.clock.now(),
    );
    return effectiveThresholds(stored);
  }

  async getRouter(teamId: string, routerId: string): Promise<TRouterHealthThresholds> {
    const router = await this.#router(teamId, routerId);
    const repository = new HealthThresholdsRepository(queryOf(this.#d.db));
    return this.#routerAnswer(await repository.organization(router.organizationId), await repository.router(router.id));
  }

  async updateRouter(teamId: string, routerId: string, input: THealthThresholdsBody): Promise<TRouterHealthThresholds> {
    const router = await this.#router(teamId, routerId);
    const now = this.#d.clock.now();
    return this.#d.db.transaction(async (query) => {
      const repository = new HealthThresholdsRepository(query);
      const own = await repository.mergeRouter(router.id, changesOf(input), now);
      return this.#routerAnswer(await repository.organization(router.organizationId), own);
    });
  }

  #routerAnswer(organization: StoredThresholds, own: StoredThresholds): TRouterHealthThresholds {
    const overridden = HEALTH_MEASURES.filter((m): m is THealthMeasure => own[m] !== undefined);
    return { ...effectiveThresholds(organization, own), overridden };
  }

  async #router(teamId: string, routerId: string): Promise<RouterRecord> {
    const router = await this.#d.routers.findInTeam(teamId, routerId);
    if (!router) throw notFound();
    return router;
  }
}
