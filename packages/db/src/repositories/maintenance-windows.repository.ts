import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import type { RouterSelectorRecord } from "./alert-rules.repository.ts";
import { toNumber } from "./sql-values.ts";

export interface WeeklyRecord {
  timezone: string;
  days: Array<"sun" | "mon" | "tue" | "wed" | "thu" | "fri" | "sat">;
  from: string;
  duration_minutes: number;
}

export interface MaintenanceWindowRecord {
  id: string;
  organizationId: string;
  /** Set when a team-bound credential made it: only that team sees it, and it covers only its routers. */
  teamId: string | null;
  name: string;
  routers: RouterSelectorRecord;
  startsAt: Date | null;
  endsAt: Date | null;
  weekly: WeeklyRecord | null;
  createdAt: Date;
}

const COLUMNS = [
  "id",
  "organization_id",
  "team_id",
  "name",
  "routers",
  "starts_at",
  "ends_at",
  "weekly",
  "created_at",
] as const;

const selectWindows = (query: Query) => query.kysely.selectFrom("maintenance_windows").select(COLUMNS);

type WindowRow = Awaited<ReturnType<ReturnType<typeof selectWindows>["executeTakeFirstOrThrow"]>>;

const fromRow = (row: WindowRow): MaintenanceWindowRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  teamId: row.team_id,
  name: row.name,
  routers: row.routers as RouterSelectorRecord,
  startsAt: row.starts_at,
  endsAt: row.ends_at,
  weekly: row.weekly as WeeklyRecord | null,
  createdAt: row.created_at,
});

/** `maintenance_windows`: reads and writes only. */
export class MaintenanceWindowsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async count(organizationId: string): Promise<number> {
    const row = await this.#query.kysely
      .selectFrom("maintenance_windows")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("organization_id", "=", organizationId)
      .executeTakeFirstOrThrow();
    return toNumber(row.n);
  }

  async insert(input: Omit<MaintenanceWindowRecord, "id">): Promise<MaintenanceWindowRecord> {
    const row = await this.#query.kysely
      .insertInto("maintenance_windows")
      .values({
        id: crypto.randomUUID(),
        organization_id: input.organizationId,
        name: input.name,
        routers: { ...input.routers },
        starts_at: input.startsAt,
        ends_at: input.endsAt,
        weekly: input.weekly === null ? null : { ...input.weekly },
        created_at: input.createdAt,
        team_id: input.teamId,
      })
      .returning(COLUMNS)
      .executeTakeFirstOrThrow();
    return fromRow(row);
  }

  /** With `teamId` (a team-bound credential) here, in `get` and `delete`: only that team's windows. */
  async list(organizationId: string, teamId?: string): Promise<MaintenanceWindowRecord[]> {
    const rows = await selectWindows(this.#query)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map(fromRow);
  }

  /** The windows of these organizations (the alert engine's and the availability report's look). */
  async listFor(organizationIds: readonly string[]): Promise<MaintenanceWindowRecord[]> {
    if (organizationIds.length === 0) return [];
    const rows = await selectWindows(this.#query)
      .where("organization_id", "=", (eb) => eb.fn.any(eb.val([...new Set(organizationIds)])))
      .execute();
    return rows.map(fromRow);
  }

  async get(organizationId: string, id: string, teamId?: string): Promise<MaintenanceWindowRecord | null> {
    if (!isUuid(id)) return null;
    const row = await selectWindows(this.#query)
      .where("id", "=", id)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .executeTakeFirst();
    return row ? fromRow(row) : null;
  }

  async delete(organizationId: string, id: string, teamId?: string): Promise<MaintenanceWindowRecord | null> {
    if (!isUuid(id)) return null;
    const row = await this.#query.kysely
      .deleteFrom("maintenance_windows")
      .where("id", "=", id)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .returning(COLUMNS)
      .executeTakeFirst();
    return row ? fromRow(row) : null;
  }
}
