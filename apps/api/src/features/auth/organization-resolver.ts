import type { IdentityWorkflow } from "@fleet/db";
import { AppError } from "@fleet/shared";

/** Token organization ids are at most this long (longer ones are not ids, they are attacks). */
const MAX_CLAIM_LENGTH = 255;

/**
 * Maps a verified token's organization claim to our organization id, provisioning it on first
 * sight. Answers are cached: an organization's id never changes once it exists.
 */
export class OrganizationResolver {
  readonly #identity: IdentityWorkflow;
  readonly #cache = new Map<string, string>();

  constructor(identity: IdentityWorkflow) {
    this.#identity = identity;
  }

  async resolve(claimedId: string): Promise<string> {
    const cached = this.#cache.get(claimedId);
    if (cached) return cached;
    if (claimedId.length > MAX_CLAIM_LENGTH) {
      throw new AppError("unauthenticated", "The access token's organization claim is too long.");
    }
    const id = await this.#identity.resolveOrganization(claimedId);
    if (this.#cache.size > 50_000) this.#cache.clear();
    this.#cache.set(claimedId, id);
    return id;
  }
}
