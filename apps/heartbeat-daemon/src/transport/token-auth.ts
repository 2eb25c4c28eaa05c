import type { TokenOwner } from "@fleet/db";
import { bearerToken, type Clock, heartbeatTokenLookupHash } from "@fleet/shared";
import { countTokenLookup } from "../metrics/prometheus.ts";
import { Batcher } from "./token-batcher.ts";
import { type CachedOwner, TokenCache } from "./token-cache.ts";

export type { CachedOwner } from "./token-cache.ts";

/** What the authenticator reads: owners of token hashes, many per query. */
export interface TokenLookup {
  lookupTokens(hashes: readonly string[]): Promise<Map<string, TokenOwner>>;
}

export interface TokenAuthOptions {
  lookup: TokenLookup;
  /** A cached answer (owner or "unknown") is re-checked against the database after this long. */
  ttlMs: number;
  /** Cap on cached owners (and remembered headers); the least recently used go first. */
  maxEntries?: number;
  /** Cap on remembered unknown tokens, kept apart so garbage tokens cannot push out real ones. */
  maxUnknown?: number;
  /**
   * How long past `ttlMs` a cached owner may still be answered to a caller that allows it (the HTTP
   * path): the answer is immediate and the token is re-checked in the background, batched.
   */
  staleMs?: number;
  /**
   * A stale answer schedules a background re-check only once the entry is this old (default: the
   * TTL). The HTTP path sets minutes; removals and re-adoptions reach the daemon sooner anyway (the
   * status feed revokes at once; the flush revokes a gone router or a replaced token).
   */
  recheckAfterMs?: number;
  /** Background re-checks are gathered this long into one `= any($1)` query (per REFRESH_BATCH tokens). */
  refreshEveryMs?: number;
  /**
   * First-time lookups are gathered this long into one query (0: until the next event-loop turn).
   * HTTP routers arrive one request per turn: without it, a warm-up makes one query per new token.
   */
  gatherMs?: number;
  /** The daemon's `monotonicClock` (a wall-clock step must not expire or extend cached answers); tests pass a `ManualClock`. */
  clock: Clock;
}

const LOOKUP_BATCH = 1_000;
/**
 * Tokens per background re-check query: the re-checks of a period go out in one statement, so the
 * statements per second stay flat in the router count; nobody waits for them.
 */
export const REFRESH_BATCH = 10_000;
/** Token lookups in flight at once; new tokens gather into the next, larger batch meanwhile. */
const MAX_LOOKUPS_IN_FLIGHT = 2;
const NOTHING = new Map<string, never>();

/**
 * Revocations are numbered while lookups run. A lookup that was running when a router's token was
 * revoked may have read the row before the change: its answer for that router is not believed.
 */
export class RevocationLog {
  #seq = 0;
  #active = 0;
  readonly #at = new Map<string, number>();

  /** A lookup starts: returns the mark to pass to `revokedSince`. */
  begin(): number {
    this.#active += 1;
    return this.#seq;
  }

  end(): void {
    this.#active -= 1;
    if (this.#active === 0) this.#at.clear();
  }

  note(routerId: string): void {
    if (this.#active === 0) return;
    this.#seq += 1;
    this.#at.set(routerId, this.#seq);
  }

  revokedSince(routerId: string, mark: number): boolean {
    return (this.#at.get(routerId) ?? 0) > mark;
  }
}

/**
 * Heartbeat token -> router (docs/architecture.md "How a heartbeat travels", step 2): a TokenCache
 * answers what it knows without I/O; first-time lookups and background re-checks go to the database
 * through two Batchers (one `= any($1)` query per batch). `revokeRouter` (status feed, or a flush that
 * found the router gone) drops a router's token at once.
 */
export class TokenAuthenticator {
  readonly #store: TokenLookup;
  readonly #cache: TokenCache;
  readonly #revocations = new RevocationLog();
  readonly #lookups: Batcher<string, TokenOwner | null>;
  readonly #rechecks: Batcher<string, never>;
  /** Database lookups made (one per batch of uncached tokens): cache misses, for stats and metrics. */
  lookups = 0;

  constructor(options: TokenAuthOptions) {
    this.#store = options.lookup;
    this.#rechecks = new Batcher({
      load: (hashes) => this.#recheck(hashes),
      gatherMs: options.refreshEveryMs ?? 1_000,
      maxBatch: REFRESH_BATCH,
      timer: true,
    });
    this.#cache = new TokenCache({
      ttlMs: options.ttlMs,
      staleMs: options.staleMs,
      recheckAfterMs: options.recheckAfterMs,
      maxEntries: options.maxEntries,
      maxUnknown: options.maxUnknown,
      clock: options.clock,
      onRecheck: (hash) => this.#rechecks.request(hash),
    });
    this.#lookups = new Batcher({
      load: (hashes) => this.#lookup(hashes),
      gatherMs: options.gatherMs ?? 0,
      maxInFlight: MAX_LOOKUPS_IN_FLIGHT,
      maxBatch: LOOKUP_BATCH,
    });
  }

  /**
   * The router the token belongs to; null for a missing, malformed, unknown or revoked token.
   * `allowStale` (the HTTP path) answers a cached owner up to `staleMs` past the TTL at once and
   * re-checks it in the background, batched.
   */
  authenticate(token: string | undefined, allowStale = false): Promise<TokenOwner | null> {
    const hash = heartbeatTokenLookupHash(token);
    if (hash === null) return Promise.resolve(null);
    const known = this.#answer(hash, allowStale);
    if (known !== undefined) return Promise.resolve(known);
    countTokenLookup(false);
    return new Promise((resolve) => this.#lookups.request(hash, (owner) => resolve(owner ?? null)));
  }

  /**
   * `authenticate` without waiting (the same checks, `#answer`): the owner or null when the cache or
   * the token's shape already knows, undefined when only the database can tell.
   */
  cached(token: string | undefined, allowStale = false): CachedOwner | null | undefined {
    // Shape and hash from @fleet/shared heartbeat-token.ts; implausible tokens are refused unhashed.
    const hash = heartbeatTokenLookupHash(token);
    if (hash === null) return null;
    return this.#answer(hash, allowStale);
  }

  /**
   * `cached` for an `Authorization` header (the HTTP path: every heartbeat): the same answer, but a
   * plain `Bearer <token>` header seen before with a cached owner's token is not parsed or hashed again.
   */
  cachedBearer(header: string | undefined, allowStale = false): CachedOwner | null | undefined {
    if (header !== undefined) {
      const remembered = this.#cache.headerHash(header);
      if (remembered !== undefined) {
        const owner = this.#answer(remembered, allowStale);
        if (owner) return owner;
        // Expired since (revoked or replaced ones are gone already): forget the shortcut.
        this.#cache.forgetHeader(header);
      }
    }
    const token = bearerToken(header);
    const hash = heartbeatTokenLookupHash(token);
    if (hash === null) return null;
    const owner = this.#answer(hash, allowStale);
    if (owner && header !== undefined && token !== undefined) this.#cache.rememberHeader(header, token, hash, owner);
    return owner;
  }

  /** The one path every check takes: the cache's answer, counted when it is one. */
  #answer(hash: string, allowStale: boolean): CachedOwner | null | undefined {
    const known = this.#cache.answer(hash, allowStale);
    if (known !== undefined) countTokenLookup(true);
    return known;
  }

  /** Headers remembered by `cachedBearer` (tests, stats). */
  get headersRemembered(): number {
    return this.#cache.headersRemembered;
  }

  get size(): number {
    return this.#cache.size;
  }

  /** Forget a router's token now (it was deleted): it is refused from now on. */
  revokeRouter(routerId: string): void {
    this.#revocations.note(routerId);
    this.#cache.revokeRouter(routerId);
  }

  /** A router's token was replaced (re-adoption): its next heartbeat is checked against the database. */
  forgetRouter(routerId: string): void {
    this.#revocations.note(routerId);
    this.#cache.forgetRouter(routerId);
  }

  /** This token is no longer its router's (a flush found it replaced): refused from now on. */
  revokeToken(routerId: string, hash: string): void {
    this.#revocations.note(routerId);
    this.#cache.revokeHash(hash);
  }

  /** First-time lookups: an answer read before its router's token was revoked is asked again. */
  async #lookup(hashes: readonly string[]): Promise<Map<string, TokenOwner | null>> {
    const answers = new Map<string, TokenOwner | null>();
    let ask = hashes;
    while (ask.length > 0) {
      const mark = this.#revocations.begin();
      try {
        this.lookups += 1;
        const owners = await this.#store.lookupTokens(ask);
        const again: string[] = [];
        for (const hash of ask) {
          const owner = owners.get(hash) ?? null;
          if (owner && this.#revocations.revokedSince(owner.routerId, mark)) again.push(hash);
          else {
            this.#cache.remember(hash, owner);
            answers.set(hash, owner);
          }
        }
        ask = again;
      } catch {
        break; // Database unreachable: refused for now (not cached), the router retries.
      } finally {
        this.#revocations.end();
      }
    }
    return answers;
  }

  /** Background re-checks: nobody waits; an answer that may predate a revocation is dropped. */
  async #recheck(hashes: readonly string[]): Promise<Map<string, never>> {
    const mark = this.#revocations.begin();
    try {
      this.lookups += 1;
      const owners = await this.#store.lookupTokens(hashes);
      for (const hash of hashes) {
        const owner = owners.get(hash) ?? null;
        if (!owner || !this.#revocations.revokedSince(owner.routerId, mark)) this.#cache.remember(hash, owner);
      }
    } catch {
      // Database unreachable: the cached owners stay until their stale window ends.
    } finally {
      this.#revocations.end();
    }
    return NOTHING;
  }
}
