import { randomBytes } from "node:crypto";
import {
  API_KEYS_PER_ORGANIZATION,
  type ApiKeyRecord,
  ApiKeysRepository,
  type AuditOrigin,
  type Database,
  insertAuditEntry,
  type NewApiKey,
  queryOf,
} from "@fleet/db";
import {
  AppError,
  type Clock,
  formatIsoUtc,
  type TApiKey,
  type TCreateApiKeyInput,
  type TCreatedApiKey,
} from "@fleet/shared";
import type { AuthClaims } from "../auth/token-verifier.ts";
import { API_KEY_PREFIX, hashApiKey } from "./api-key-verifier.ts";
import { toApiKeyResponse } from "./api-keys.mapper.ts";

export interface ApiKeysServiceDeps {
  /** Creating and revoking each run in one transaction of their own; repositories get its `query`. */
  db: Pick<Database, "query" | "transaction">;
  clock: Clock;
  /** The team a token's `team` claim names (403 for another organization's), as router endpoints resolve it. */
  teams: { resolve(auth: AuthClaims): Promise<string> };
  /** Evicts a revoked key from this process's verification cache. */
  forget(keyHash: string): void;
}

const DAY_MS = 86_400_000;
/**
 * `Retry-After` of a full key list: a slot frees only when someone revokes a key (or one expires),
 * which no clock can promise; a minute is when trying again is reasonable.
 */
const KEY_LIMIT_RETRY_AFTER_SECONDS = 60;
// Characters of the key kept visible: the fixed prefix plus 8 random ones.
const VISIBLE = API_KEY_PREFIX.length + 8;

/** A new key, shown once, with what is stored of it: its visible prefix and its hash. */
export const mintApiKey = (): { key: string; prefix: string; keyHash: string } => {
  const key = `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
  return { key, prefix: key.slice(0, VISIBLE), keyHash: hashApiKey(key) };
};

/**
 * Stores a key with its `api_key.created` entry in one transaction, unless the organization already
 * holds `limit` live keys (then null, nothing written). The organization's row is locked first, so
 * parallel creates cannot all see room for one more. The one way a key is made: the API, the admin
 * CLI and the test harness.
 */
export const storeApiKey = (
  db: Pick<Database, "transaction">,
  input: NewApiKey,
  origin: AuditOrigin,
  limit = API_KEYS_PER_ORGANIZATION,
): Promise<ApiKeyRecord | null> =>
  db.transaction(async (query) => {
    const keys = new ApiKeysRepository(query);
    await keys.lockOrganization(input.organizationId);
    if ((await keys.countLive(input.organizationId, input.createdAt)) >= limit) return null;
    const key = await keys.insert(input);
    await insertAuditEntry(query, {
      organizationId: key.organizationId,
      occurredAt: input.createdAt,
      action: "api_key.created",
      actor: origin.actor,
      // A team-bound key's entries are its team's (docs/api.md "Audit log and webhooks").
      teamId: key.teamId,
      sourceIp: origin.sourceIp,
      target: { type: "api_key", id: key.id },
      details: {
        name: key.name,
        prefix: key.prefix,
        scopes: key.scopes,
        ...(key.teamId ? { team_id: key.teamId } : {}),
        expires_at: key.expiresAt ? formatIsoUtc(key.expiresAt) : null,
      },
    });
    return key;
  });

/** API keys of an organization (docs/api.md "Authentication"). */
export class ApiKeysService {
  readonly #deps: ApiKeysServiceDeps;
  constructor(deps: ApiKeysServiceDeps) {
    this.#deps = deps;
  }

  /** A key never carries a scope its creator's credential lacks. */
  async create(auth: AuthClaims, origin: AuditOrigin, input: TCreateApiKeyInput): Promise<TCreatedApiKey> {
    const beyond = input.scopes.filter((scope) => !auth.scopes.has(scope));
    if (beyond.length > 0) {
      throw new AppError("validation_failed", `An API key cannot have scopes your token lacks: ${beyond.join(", ")}.`, {
        fields: { scopes: [`must be among the scopes of your token (${[...auth.scopes].join(" ")})`] },
      });
    }
    // A token that names a team makes keys bound to that team (docs/api.md "Authentication").
    const teamId = auth.teamId === undefined ? null : await this.#deps.teams.resolve(auth);
    const { key, prefix, keyHash } = mintApiKey();
    const now = this.#deps.clock.now();
    const record = await storeApiKey(
      this.#deps.db,
      {
        organizationId: auth.organizationId,
        teamId,
        createdBy: auth.userId,
        name: input.name,
        prefix,
        keyHash,
        scopes: [...new Set(input.scopes)],
        createdAt: now,
        expiresAt:
          input.expires_in_days === undefined ? null : new Date(now.getTime() + input.expires_in_days * DAY_MS),
      },
      origin,
    );
    if (!record) {
      throw new AppError(
        "rate_limited",
        `This organization already holds ${API_KEYS_PER_ORGANIZATION} live API keys: revoke one before creating another.`,
        { extra: { limit: API_KEYS_PER_ORGANIZATION }, retryAfterSeconds: KEY_LIMIT_RETRY_AFTER_SECONDS },
      );
    }
    return { ...toApiKeyResponse(record), key };
  }

  async list(organizationId: string): Promise<TApiKey[]> {
    return (await new ApiKeysRepository(queryOf(this.#deps.db)).list(organizationId)).map(toApiKeyResponse);
  }

  async revoke(organizationId: string, id: string, origin: AuditOrigin): Promise<void> {
    const now = this.#deps.clock.now();
    const revoked = await this.#deps.db.transaction(async (query) => {
      const deleted = await new ApiKeysRepository(query).delete(organizationId, id);
      if (!deleted) return null;
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: now,
        action: "api_key.revoked",
        actor: origin.actor,
        teamId: deleted.teamId,
        sourceIp: origin.sourceIp,
        target: { type: "api_key", id },
        details: { name: deleted.name, prefix: deleted.prefix },
      });
      return deleted;
    });
    if (!revoked) throw new AppError("not_found", "API key not found.");
    this.#deps.forget(revoked.keyHash);
  }
}
