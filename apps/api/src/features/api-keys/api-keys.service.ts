import { randomBytes } from "node:crypto";
import { API_KEYS_PER_ORGANIZATION, type ApiKeyRecord, type AuditOrigin, type NewApiKey } from "@fleet/db";
import { AppError, type Clock, type TApiKey, type TCreateApiKeyInput, type TCreatedApiKey } from "@fleet/shared";
import type { AuthClaims } from "../auth/token-verifier.ts";
import { API_KEY_PREFIX, hashApiKey } from "./api-key-verifier.ts";
import { toApiKeyResponse } from "./api-keys.mapper.ts";

/** The persistence the service needs (ApiKeysRepository in production). */
export interface ApiKeyStore {
  /** Null when the organization already holds its limit of live keys (nothing written). */
  create(input: NewApiKey, origin: AuditOrigin): Promise<ApiKeyRecord | null>;
  list(organizationId: string): Promise<ApiKeyRecord[]>;
  revoke(organizationId: string, id: string, now: Date, origin: AuditOrigin): Promise<{ keyHash: string } | null>;
}

export interface ApiKeysServiceDeps {
  keys: ApiKeyStore;
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
    const record = await this.#deps.keys.create(
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
    return (await this.#deps.keys.list(organizationId)).map(toApiKeyResponse);
  }

  async revoke(organizationId: string, id: string, origin: AuditOrigin): Promise<void> {
    const revoked = await this.#deps.keys.revoke(organizationId, id, this.#deps.clock.now(), origin);
    if (!revoked) throw new AppError("not_found", "API key not found.");
    this.#deps.forget(revoked.keyHash);
  }
}
