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

type Row = Record<string, unknown>;

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const json = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;
const dateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toNumber(value));

const COLUMNS = `w.id, w.organization_id, w.team_id, w.name, w.routers, ${ms("w.starts_at", "starts_ms")}, ${ms("w.ends_at", "ends_ms")},
  w.weekly, ${ms("w.created_at", "created_ms")}`;

const fromRow = (row: Row): MaintenanceWindowRecord => ({
  id: String(row.id),
  organizationId: String(row.organization_id),
  teamId: row.team_id === null || row.team_id === undefined ? null : String(row.team_id),
  name: String(row.name),
  routers: json<RouterSelectorRecord>(row.routers) ?? {},
  startsAt: dateOrNull(row.starts_ms),
  endsAt: dateOrNull(row.ends_ms),
  weekly: row.weekly === null || row.weekly === undefined ? null : json<WeeklyRecord>(row.weekly),
  createdAt: new Date(toNumber(row.created_ms)),
});

/** `maintenance_windows`: reads and writes only. */
export class MaintenanceWindowsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async count(organizationId: string): Promise<number> {
    const [row] = await this.#query<Row>(
      "select count(*)::int as n from maintenance_windows where organization_id = $1",
      [organizationId],
    );
    return toNumber(row?.n ?? 0);
  }

  async insert(input: Omit<MaintenanceWindowRecord, "id">): Promise<MaintenanceWindowRecord> {
    const rows = await this.#query<Row>(
      `insert into maintenance_windows as w (id, organization_id, name, routers, starts_at, ends_at, weekly, created_at, team_id)
       values (gen_random_uuid(), $1, $2, $3::jsonb, to_timestamp($4::float8 / 1000.0), to_timestamp($5::float8 / 1000.0),
         $6::jsonb, to_timestamp($7::float8 / 1000.0), $8::uuid)
       returning ${COLUMNS}`,
      [
        input.organizationId,
        input.name,
        JSON.stringify(input.routers),
        input.startsAt?.getTime() ?? null,
        input.endsAt?.getTime() ?? null,
        input.weekly === null ? null : JSON.stringify(input.weekly),
        input.createdAt.getTime(),
        input.teamId,
      ],
    );
    const row = rows[0];
    if (!row) throw new Error("maintenance window insert returned no row");
    return fromRow(row);
  }

  /** With `teamId` (a team-bound credential) here, in `get` and `delete`: only that team's windows. */
  async list(organizationId: string, teamId?: string): Promise<MaintenanceWindowRecord[]> {
    const rows = await this.#query<Row>(
      `select ${COLUMNS} from maintenance_windows w where w.organization_id = $1
       and ($2::uuid is null or w.team_id = $2::uuid) order by w.created_at, w.id`,
      [organizationId, teamId ?? null],
    );
    return rows.map(fromRow);
  }

  /** The windows of these organizations (the alert engine's and the availability report's look). */
  async listFor(organizationIds: readonly string[]): Promise<MaintenanceWindowRecord[]> {
    if (organizationIds.length === 0) return [];
    const rows = await this.#query<Row>(
      `select ${COLUMNS} from maintenance_windows w where w.organization_id = any($1::uuid[])`,
      [[...new Set(organizationIds)]],
    );
    return rows.map(fromRow);
  }

  async get(organizationId: string, id: string, teamId?: string): Promise<MaintenanceWindowRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      `select ${COLUMNS} from maintenance_windows w where w.id = $1 and w.organization_id = $2
       and ($3::uuid is null or w.team_id = $3::uuid)`,
      [id, organizationId, teamId ?? null],
    );
    return rows[0] ? fromRow(rows[0]) : null;
  }

  async delete(organizationId: string, id: string, teamId?: string): Promise<MaintenanceWindowRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      `delete from maintenance_windows w where w.id = $1 and w.organization_id = $2
       and ($3::uuid is null or w.team_id = $3::uuid) returning ${COLUMNS}`,
      [id, organizationId, teamId ?? null],
    );
    return rows[0] ? fromRow(rows[0]) : null;
  }
}
