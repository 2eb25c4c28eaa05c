import type { IdentityWorkflow } from "@fleet/db";
import { AppError } from "@fleet/shared";
import type { AuthClaims } from "../auth/token-verifier.ts";

/**
 * The team router endpoints act on (docs/api.md "Authentication"): the token's `team` claim, or the
 * organization's default team. A team of another organization is refused with 403; an unknown
 * team id is treated the same way, so team ids cannot be probed.
 */
export class TeamResolver {
  readonly #identity: IdentityWorkflow;
  readonly #cache = new Map<string, string>();

  constructor(identity: IdentityWorkflow) {
    this.#identity = identity;
  }

  /**
   * The team a credential is bound to (a token's `team` claim, an API key made with one), checked as
   * `resolve` checks it; undefined for an organization-wide credential. Organization-wide things
   * (the audit log, webhooks) are narrowed to this team (docs/api.md "Audit log and webhooks").
   */
  async bound(auth: AuthClaims): Promise<string | undefined> {
    return auth.teamId === undefined ? undefined : this.resolve(auth);
  }

  async resolve(auth: AuthClaims): Promise<string> {
    const key = `${auth.organizationId}:${auth.teamId ?? ""}`;
    const cached = this.#cache.get(key);
    if (cached) return cached;
    let teamId: string;
    if (auth.teamId) {
      const team = await this.#identity.findTeam(auth.teamId);
      if (!team || team.organizationId !== auth.organizationId) {
        throw new AppError("forbidden", "The team in the access token does not belong to its organization.");
      }
      teamId = team.id;
    } else {
      if (!(await this.#identity.organizationExists(auth.organizationId))) {
        throw new AppError("unauthenticated", "The organization named by the access token does not exist.");
      }
      teamId = await this.#identity.defaultTeamId(auth.organizationId);
    }
    // Team membership of an organization never changes hands, so the answer can be cached.
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(key, teamId);
    return teamId;
  }
}
