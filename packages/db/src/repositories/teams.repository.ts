import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import { toNumber } from "./sql-values.ts";

export interface TeamRecord {
  id: string;
  organizationId: string;
  name: string;
  isDefault: boolean;
  routers: number;
  createdAt: Date;
}

/** What keeps a team from being deleted (docs/api.md "Teams"). */
export interface TeamContents {
  routers: number;
  members: number;
  invitations: number;
}

const COLUMNS = `t.id, t.organization_id, t.name, t.is_default, (extract(epoch from t.created_at) * 1000)::float8 as created_ms,
  (select count(*) from routers r where r.team_id = t.id) as routers`;

const fromRow = (row: Record<string, unknown>): TeamRecord => ({
  id: String(row.id),
  organizationId: String(row.organization_id),
  name: String(row.name),
  isDefault: row.is_default === true,
  routers: toNumber(row.routers),
  createdAt: new Date(toNumber(row.created_ms)),
});

/** `teams` of an organization: reads and writes only, on the `query` it is given. */
export class TeamsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async list(organizationId: string): Promise<TeamRecord[]> {
    const rows = await this.#query<Record<string, unknown>>(
      `select ${COLUMNS} from teams t where t.organization_id = $1 order by t.is_default desc, t.created_at, t.id`,
      [organizationId],
    );
    return rows.map(fromRow);
  }

  async find(organizationId: string, teamId: string): Promise<TeamRecord | null> {
    if (!isUuid(teamId)) return null;
    const rows = await this.#query<Record<string, unknown>>(
      `select ${COLUMNS} from teams t where t.organization_id = $1 and t.id = $2`,
      [organizationId, teamId],
    );
    return rows[0] ? fromRow(rows[0]) : null;
  }

  async count(organizationId: string): Promise<number> {
    const rows = await this.#query<{ n: unknown }>(`select count(*) as n from teams where organization_id = $1`, [
      organizationId,
    ]);
    return toNumber(rows[0]?.n ?? 0);
  }

  async insert(input: { id: string; organizationId: string; name: string; isDefault: boolean; createdAt: Date }) {
    await this.#query(
      `insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, $3, $4, $5)`,
      [input.id, input.organizationId, input.name, input.isDefault, input.createdAt],
    );
  }

  async rename(teamId: string, name: string): Promise<void> {
    await this.#query(`update teams set name = $2 where id = $1`, [teamId, name]);
  }

  async contents(teamId: string, now: Date): Promise<TeamContents> {
    const rows = await this.#query<Record<string, unknown>>(
      `select (select count(*) from routers where team_id = $1) as routers,
         (select count(*) from organization_members where team_id = $1) as members,
         (select count(*) from invitations where team_id = $1 and accepted_at is null and revoked_at is null
            and expires_at > $2) as invitations`,
      [teamId, now],
    );
    const row = rows[0] ?? {};
    return {
      routers: toNumber(row.routers ?? 0),
      members: toNumber(row.members ?? 0),
      invitations: toNumber(row.invitations ?? 0),
    };
  }

  async delete(teamId: string): Promise<void> {
    await this.#query(`delete from teams where id = $1`, [teamId]);
  }

  /** Moves a router of the organization to the team; null when no such router. */
  async moveRouter(organizationId: string, routerId: string, teamId: string): Promise<{ fromTeamId: string } | null> {
    if (!isUuid(routerId)) return null;
    const rows = await this.#query<{ team_id: string }>(
      `update routers r set team_id = $3 from routers old
       where r.id = old.id and r.id = $2 and r.organization_id = $1 returning old.team_id`,
      [organizationId, routerId, teamId],
    );
    return rows[0] ? { fromTeamId: String(rows[0].team_id) } : null;
  }
}
