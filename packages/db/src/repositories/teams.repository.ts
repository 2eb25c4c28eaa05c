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

const selectTeams = (query: Query) =>
  query.kysely
    .selectFrom("teams as t")
    .select((eb) => [
      "t.id",
      "t.organization_id",
      "t.name",
      "t.is_default",
      "t.created_at",
      eb.selectFrom("routers as r").whereRef("r.team_id", "=", "t.id").select(eb.fn.countAll().as("n")).as("routers"),
    ]);

type TeamRow = Awaited<ReturnType<ReturnType<typeof selectTeams>["executeTakeFirstOrThrow"]>>;

const fromRow = (row: TeamRow): TeamRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  name: row.name,
  isDefault: row.is_default,
  routers: toNumber(row.routers ?? 0),
  createdAt: row.created_at,
});

/** `teams` of an organization: reads and writes only, on the `query` it is given. */
export class TeamsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async list(organizationId: string): Promise<TeamRecord[]> {
    const rows = await selectTeams(this.#query)
      .where("t.organization_id", "=", organizationId)
      .orderBy("t.is_default", "desc")
      .orderBy("t.created_at")
      .orderBy("t.id")
      .execute();
    return rows.map(fromRow);
  }

  async find(organizationId: string, teamId: string): Promise<TeamRecord | null> {
    if (!isUuid(teamId)) return null;
    const row = await selectTeams(this.#query)
      .where("t.organization_id", "=", organizationId)
      .where("t.id", "=", teamId)
      .executeTakeFirst();
    return row ? fromRow(row) : null;
  }

  async count(organizationId: string): Promise<number> {
    const row = await this.#query.kysely
      .selectFrom("teams")
      .where("organization_id", "=", organizationId)
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirstOrThrow();
    return toNumber(row.n);
  }

  async insert(input: { id: string; organizationId: string; name: string; isDefault: boolean; createdAt: Date }) {
    await this.#query.kysely
      .insertInto("teams")
      .values({
        id: input.id,
        organization_id: input.organizationId,
        name: input.name,
        is_default: input.isDefault,
        created_at: input.createdAt,
      })
      .execute();
  }

  async rename(teamId: string, name: string): Promise<void> {
    await this.#query.kysely.updateTable("teams").set({ name }).where("id", "=", teamId).execute();
  }

  async contents(teamId: string, now: Date): Promise<TeamContents> {
    const row = await this.#query.kysely
      .selectNoFrom((eb) => [
        eb.selectFrom("routers").where("team_id", "=", teamId).select(eb.fn.countAll().as("n")).as("routers"),
        eb
          .selectFrom("organization_members")
          .where("team_id", "=", teamId)
          .select(eb.fn.countAll().as("n"))
          .as("members"),
        eb
          .selectFrom("invitations")
          .where("team_id", "=", teamId)
          .where("accepted_at", "is", null)
          .where("revoked_at", "is", null)
          .where("expires_at", ">", now)
          .select(eb.fn.countAll().as("n"))
          .as("invitations"),
      ])
      .executeTakeFirstOrThrow();
    return {
      routers: toNumber(row.routers ?? 0),
      members: toNumber(row.members ?? 0),
      invitations: toNumber(row.invitations ?? 0),
    };
  }

  async delete(teamId: string): Promise<void> {
    await this.#query.kysely.deleteFrom("teams").where("id", "=", teamId).execute();
  }

  /** Moves a router of the organization to the team; null when no such router. */
  async moveRouter(organizationId: string, routerId: string, teamId: string): Promise<{ fromTeamId: string } | null> {
    if (!isUuid(routerId)) return null;
    // The self-join hands back the team the router leaves, in the one statement that moves it.
    const row = await this.#query.kysely
      .updateTable("routers as r")
      .from("routers as old")
      .set({ team_id: teamId })
      .whereRef("r.id", "=", "old.id")
      .where("r.id", "=", routerId)
      .where("r.organization_id", "=", organizationId)
      .returning("old.team_id")
      .executeTakeFirst();
    return row ? { fromTeamId: row.team_id } : null;
  }
}
