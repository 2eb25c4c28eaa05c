import { OrganizationsRepository, queryOf, type TeamRecord, TeamsRepository } from "@fleet/db";
import {
  AppError,
  type Clock,
  formatIsoUtc,
  type TCreateTeamInput,
  TENANCY_LIMITS,
  type TTeam,
  type TTeamList,
  type TUpdateTeamInput,
} from "@fleet/shared";
import type { AuthClaims } from "../auth/token-verifier.ts";
import type { MembershipsService } from "../members/memberships.service.ts";
import { chainInSubtree, type TenancyDb } from "../organizations/organization-scope.ts";

export interface TeamsServiceDeps {
  db: TenancyDb;
  clock: Clock;
  memberships: MembershipsService;
}

/** A slot frees only when someone deletes a team. */
const TEAM_LIMIT_RETRY_AFTER_SECONDS = 60;

const toTeam = (t: TeamRecord): TTeam => ({
  id: t.id,
  name: t.name,
  is_default: t.isDefault,
  routers: t.routers,
  created_at: formatIsoUtc(t.createdAt),
});

const teamNotFound = () => new AppError("not_found", "Team not found.");

/** Teams of an organization (docs/api.md "Teams"): every organization has its default one. */
export class TeamsService {
  readonly #d: TeamsServiceDeps;
  constructor(deps: TeamsServiceDeps) {
    this.#d = deps;
  }

  async list(auth: AuthClaims, organizationId: string): Promise<TTeamList> {
    const query = queryOf(this.#d.db);
    await chainInSubtree(query, auth.organizationId, organizationId);
    return { data: (await new TeamsRepository(query).list(organizationId)).map(toTeam) };
  }

  async create(auth: AuthClaims, input: TCreateTeamInput): Promise<TTeam> {
    await this.#manage(auth, input.id);
    const now = this.#d.clock.now();
    const id = crypto.randomUUID();
    await this.#d.db.transaction(async (query) => {
      await new OrganizationsRepository(query).lock(input.id);
      const teams = new TeamsRepository(query);
      if ((await teams.count(input.id)) >= TENANCY_LIMITS.teamsPerOrganization) {
        throw new AppError(
          "rate_limited",
          `An organization has at most ${TENANCY_LIMITS.teamsPerOrganization} teams: delete one first.`,
          { extra: { limit: TENANCY_LIMITS.teamsPerOrganization }, retryAfterSeconds: TEAM_LIMIT_RETRY_AFTER_SECONDS },
        );
      }
      await teams.insert({ id, organizationId: input.id, name: input.name, isDefault: false, createdAt: now });
    });
    return { id, name: input.name, is_default: false, routers: 0, created_at: formatIsoUtc(now) };
  }

  async update(auth: AuthClaims, input: TUpdateTeamInput): Promise<TTeam> {
    await this.#manage(auth, input.id);
    const teams = new TeamsRepository(queryOf(this.#d.db));
    const team = await teams.find(input.id, input.team_id);
    if (!team) throw teamNotFound();
    await teams.rename(team.id, input.name);
    return toTeam({ ...team, name: input.name });
  }

  /** Only an empty team that is not the default one (else 409 naming what is left). */
  async delete(auth: AuthClaims, organizationId: string, teamId: string): Promise<void> {
    await this.#manage(auth, organizationId);
    const now = this.#d.clock.now();
    await this.#d.db.transaction(async (query) => {
      await new OrganizationsRepository(query).lock(organizationId);
      const teams = new TeamsRepository(query);
      const team = await teams.find(organizationId, teamId);
      if (!team) throw teamNotFound();
      if (team.isDefault) throw new AppError("conflict", "The default team of an organization cannot be deleted.");
      const c = await teams.contents(team.id, now);
      const left = [
        c.routers > 0 ? `${c.routers} router(s)` : null,
        c.members > 0 ? `${c.members} member(s) bound to it` : null,
        c.invitations > 0 ? `${c.invitations} pending invitation(s) bound to it` : null,
      ].filter(Boolean);
      if (left.length > 0)
        throw new AppError("conflict", `The team still has ${left.join(", ")}: move or remove them first.`);
      await teams.delete(team.id);
    });
  }

  /**
   * Moves a router to another team of its organization (docs/api.md "Teams"), for a credential
   * that is not bound to a team (one that is reaches only its own team).
   */
  async moveRouter(
    auth: AuthClaims,
    input: { router_id: string; team_id: string },
  ): Promise<{ id: string; team_id: string }> {
    if (auth.teamId !== undefined) {
      throw new AppError("forbidden", "A credential bound to a team cannot move routers between teams.");
    }
    return this.#d.db.transaction(async (query) => {
      const teams = new TeamsRepository(query);
      const team = await teams.find(auth.organizationId, input.team_id);
      if (!team) {
        throw new AppError("validation_failed", "No such team in this organization.", {
          fields: { team_id: ["must be a team of this organization"] },
        });
      }
      const moved = await teams.moveRouter(auth.organizationId, input.router_id, team.id);
      if (!moved) throw new AppError("not_found", "Router not found.");
      return { id: input.router_id, team_id: team.id };
    });
  }

  async #manage(auth: AuthClaims, organizationId: string): Promise<void> {
    await chainInSubtree(queryOf(this.#d.db), auth.organizationId, organizationId);
    await this.#d.memberships.requireManager(auth, organizationId);
  }
}
