import type { Query } from "../database.ts";

/** A stored set of thresholds: only the measures named, each `{above, for_seconds}` or null. */
export type StoredThresholds = Record<string, { above: number; for_seconds: number } | null>;

type Row = Record<string, unknown>;
const json = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;

/**
 * `organization_health_thresholds` and `router_health_thresholds` (docs/api.md "Health
 * thresholds"): reads and merging writes only. A write merges the measures it names into what is
 * stored (jsonb `||`), so a measure never named keeps following the level above.
 */
export class HealthThresholdsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async organization(organizationId: string): Promise<StoredThresholds> {
    const [row] = await this.#query<Row>(
      "select thresholds from organization_health_thresholds where organization_id = $1::uuid",
      [organizationId],
    );
    return row ? json<StoredThresholds>(row.thresholds) : {};
  }

  async router(routerId: string): Promise<StoredThresholds> {
    const [row] = await this.#query<Row>("select thresholds from router_health_thresholds where router_id = $1::uuid", [
      routerId,
    ]);
    return row ? json<StoredThresholds>(row.thresholds) : {};
  }

  /** Merges `changes` into the organization's thresholds; answers what is stored now. */
  async mergeOrganization(organizationId: string, changes: StoredThresholds, at: Date): Promise<StoredThresholds> {
    const [row] = await this.#query<Row>(
      `insert into organization_health_thresholds as t (organization_id, thresholds, updated_at)
       values ($1::uuid, $2::jsonb, to_timestamp($3::float8 / 1000.0))
       on conflict (organization_id) do update set thresholds = t.thresholds || excluded.thresholds, updated_at = excluded.updated_at
       returning thresholds`,
      [organizationId, JSON.stringify(changes), at.getTime()],
    );
    return row ? json<StoredThresholds>(row.thresholds) : changes;
  }

  /** Merges `changes` into the router's overrides (none once it is removed); answers what is stored now. */
  async mergeRouter(routerId: string, changes: StoredThresholds, at: Date): Promise<StoredThresholds> {
    const [row] = await this.#query<Row>(
      `insert into router_health_thresholds as t (router_id, thresholds, updated_at)
       select r.id, $2::jsonb, to_timestamp($3::float8 / 1000.0) from routers r where r.id = $1::uuid
       on conflict (router_id) do update set thresholds = t.thresholds || excluded.thresholds, updated_at = excluded.updated_at
       returning thresholds`,
      [routerId, JSON.stringify(changes), at.getTime()],
    );
    return row ? json<StoredThresholds>(row.thresholds) : changes;
  }
}
