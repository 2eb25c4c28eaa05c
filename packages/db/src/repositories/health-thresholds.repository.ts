import type { Query } from "../database.ts";

/** A stored set of thresholds: only the measures named, each `{above, for_seconds}` or null. */
export type StoredThresholds = Record<string, { above: number; for_seconds: number } | null>;

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
    const row = await this.#query.kysely
      .selectFrom("organization_health_thresholds")
      .select("thresholds")
      .where("organization_id", "=", organizationId)
      .executeTakeFirst();
    return row ? (row.thresholds as StoredThresholds) : {};
  }

  async router(routerId: string): Promise<StoredThresholds> {
    const row = await this.#query.kysely
      .selectFrom("router_health_thresholds")
      .select("thresholds")
      .where("router_id", "=", routerId)
      .executeTakeFirst();
    return row ? (row.thresholds as StoredThresholds) : {};
  }

  /** Merges `changes` into the organization's thresholds; answers what is stored now. */
  async mergeOrganization(organizationId: string, changes: StoredThresholds, at: Date): Promise<StoredThresholds> {
    const row = await this.#query.kysely
      .insertInto("organization_health_thresholds")
      .values({ organization_id: organizationId, thresholds: changes, updated_at: at })
      .onConflict((oc) =>
        oc.column("organization_id").doUpdateSet((eb) => ({
          thresholds: eb("organization_health_thresholds.thresholds", "||", eb.ref("excluded.thresholds")),
          updated_at: eb.ref("excluded.updated_at"),
        })),
      )
      .returning("thresholds")
      .executeTakeFirst();
    return row ? (row.thresholds as StoredThresholds) : changes;
  }

  /** Merges `changes` into the router's overrides (none once it is removed); answers what is stored now. */
  async mergeRouter(routerId: string, changes: StoredThresholds, at: Date): Promise<StoredThresholds> {
    const row = await this.#query.kysely
      .insertInto("router_health_thresholds")
      .columns(["router_id", "thresholds", "updated_at"])
      .expression((eb) =>
        eb
          .selectFrom("routers as r")
          .select([
            "r.id",
            eb.cast<StoredThresholds>(eb.val(JSON.stringify(changes)), "jsonb").as("thresholds"),
            eb.cast<Date>(eb.val(at), "timestamptz").as("updated_at"),
          ])
          .where("r.id", "=", routerId),
      )
      .onConflict((oc) =>
        oc.column("router_id").doUpdateSet((eb) => ({
          thresholds: eb("router_health_thresholds.thresholds", "||", eb.ref("excluded.thresholds")),
          updated_at: eb.ref("excluded.updated_at"),
        })),
      )
      .returning("thresholds")
      .executeTakeFirst();
    return row ? (row.thresholds as StoredThresholds) : changes;
  }
}
