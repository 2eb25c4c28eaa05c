import { createHash } from "node:crypto";
import type { ApiKeyRecord } from "@fleet/db";
import { AppError, type Clock, systemClock } from "@fleet/shared";
import type { Logger } from "pino";
import type { ApiKeyCheck, AuthClaims, VerifyOptions } from "../auth/token-verifier.ts";

/** Every API key starts with this, so a bearer value is told from a JWT (`eyJ...`) without work. */
export const API_KEY_PREFIX = "fk_";

export const hashApiKey = (key: string): string => createHash("sha256").update(key).digest("hex");

/** The persistence the verifier needs (ApiKeysRepository in production). */
export interface ApiKeyLookup {
  findByHash(keyHash: string): Promise<ApiKeyRecord | null>;
  touch(ids: readonly string[], at: Date): Promise<void>;
}

export interface ApiKeyVerifierOptions {
  keys: ApiKeyLookup;
  logger: Logger;
  /** Wall time of key expiry and the cache (the API's `wallClock`); default: the system clock. */
  clock?: Clock;
  /**
   * How long a looked-up key is trusted without asking the database again. Revocation in this
   * process evicts at once; another API process sees it within this time.
   */
  cacheTtlMs?: number;
  /** `last_used_at` is written at most this often per key. */
  touchIntervalMs?: number;
}

interface CacheEntry {
  /** Null: no such key (negative entries stop a flood of bad keys from reaching the database). */
  claims: AuthClaims | null;
  expiresAtMs: number | null;
  checkedAtMs: number;
}

const CACHE_LIMIT = 20_000;
const unauthenticated = (message: string) => new AppError("unauthenticated", message);

/**
 * API keys on the request path (docs/api.md "Authentication"). A key is a 256-bit random value, so
 * its SHA-256 is a safe lookup key and the cache is keyed by that hash: a repeat costs one hash and
 * one map lookup, like the cached JWT path. `last_used_at` is noted in memory and written later,
 * never awaited by the request.
 */
export class ApiKeyVerifier implements ApiKeyCheck {
  readonly #o: Required<Omit<ApiKeyVerifierOptions, "clock">>;
  readonly #clock: Clock;
  readonly #cache = new Map<string, CacheEntry>();
  readonly #touchedAt = new Map<string, number>();
  readonly #pendingTouch = new Set<string>();
  #flushing: Promise<void> | undefined;

  constructor(options: ApiKeyVerifierOptions) {
    this.#o = { cacheTtlMs: 10_000, touchIntervalMs: 60_000, ...options };
    this.#clock = options.clock ?? systemClock;
  }

  owns(bearer: string): boolean {
    return bearer.startsWith(API_KEY_PREFIX);
  }

  async verify(key: string, options: VerifyOptions = {}): Promise<AuthClaims> {
    const hash = hashApiKey(key);
    const now = this.#clock.nowMs();
    let entry = this.#cache.get(hash);
    if (!entry || now - entry.checkedAtMs >= this.#o.cacheTtlMs) {
      // An address over its limit of unauthenticated requests gets no database lookup for a key
      // this process does not know (docs/api.md "Rate limits"): random keys cost a hash, no more.
      const refusal = options.refuseLookup?.();
      if (refusal) throw refusal;
      const record = await this.#o.keys.findByHash(hash);
      entry = record
        ? { claims: claimsOf(record), expiresAtMs: record.expiresAt?.getTime() ?? null, checkedAtMs: now }
        : { claims: null, expiresAtMs: null, checkedAtMs: now };
      if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
      this.#cache.set(hash, entry);
    }
    if (!entry.claims) throw unauthenticated("The API key is invalid or has been revoked.");
    if (entry.expiresAtMs !== null && entry.expiresAtMs <= now) throw unauthenticated("The API key has expired.");
    this.#noteUse(entry.claims.credential.id, now);
    return entry.claims;
  }

  /** Revoked in this process: no request may pass with it any more. */
  forget(keyHash: string): void {
    this.#cache.delete(keyHash);
  }

  /** Writes the pending `last_used_at` updates (shutdown, tests). */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    if (this.#pendingTouch.size === 0) return;
    const ids = [...this.#pendingTouch];
    this.#pendingTouch.clear();
    this.#flushing = this.#o.keys
      .touch(ids, this.#clock.now())
      .catch((error) => this.#o.logger.warn({ err: error }, "could not record API key use"))
      .finally(() => {
        this.#flushing = undefined;
      });
    await this.#flushing;
  }

  #noteUse(id: string, now: number): void {
    const last = this.#touchedAt.get(id);
    if (last !== undefined && now - last < this.#o.touchIntervalMs) return;
    if (this.#touchedAt.size >= CACHE_LIMIT) this.#touchedAt.clear();
    this.#touchedAt.set(id, now);
    this.#pendingTouch.add(id);
    // After the request's own work: the write never delays the answer.
    setImmediate(() => void this.flush());
  }
}

const claimsOf = (record: ApiKeyRecord): AuthClaims => ({
  userId: record.createdBy,
  organizationId: record.organizationId,
  // API keys act for their team when their creator's token named one, else the organization's
  // default team (docs/api.md "Authentication").
  teamId: record.teamId ?? undefined,
  scopes: new Set(record.scopes),
  timezone: undefined,
  exp: record.expiresAt ? Math.floor(record.expiresAt.getTime() / 1000) : Number.MAX_SAFE_INTEGER,
  credential: { type: "api_key", id: record.id },
  credentialId: `key:${record.id}`,
});
