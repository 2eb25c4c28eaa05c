import type { TokenOwner } from "@fleet/db";
import { bearerToken, type Clock, heartbeatTokenLookupHash } from "@fleet/shared";
import { countTokenLookup } from "../metrics/prometheus.ts";
import type { FloodGuard } from "./flood-guard.ts";

/** What the authenticator reads: owners of token hashes, many per query. */
export interface TokenLookup {
  lookupTokens(hashes: readonly string[]): Promise<Map<string, TokenOwner>>;
}

export interface TokenAuthOptions {
  lookup: TokenLookup;
  /** A cached answer (owner or "unknown") is re-checked against the database after this long. */
  ttlMs: number;
  /** Cap on cached owners; the oldest go first. */
  maxEntries?: number;
  /** Cap on remembered unknown tokens, kept apart so garbage tokens cannot push out real ones. */
  maxUnknown?: number;
  /**
   * How long past `ttlMs` a cached owner may still be answered to a caller that allows it (the HTTP
   * path): the answer is immediate and the token is re-checked in the background, batched.
   */
  staleMs?: number;
  /**
   * A stale answer (allowStale) schedules a background re-check only once the entry is this old
   * (default: the TTL, i.e. at every stale answer). The HTTP path sets minutes: a router's token is
   * re-checked every few minutes instead of at every heartbeat. Removals and re-adoptions reach the
   * daemon sooner anyway: the status feed revokes at once, and the flush writes nothing for a gone
   * router or a replaced token and revokes it.
   */
  recheckAfterMs?: number;
  /** Background re-checks are gathered this long into one `= any($1)` query (per REFRESH_BATCH tokens). */
  refreshEveryMs?: number;
  /**
   * First-time lookups are gathered this long into one query (0: until the next event-loop turn).
   * HTTP routers arrive one request per turn: without it, a warm-up or a restart makes one query
   * per new token (bench: 150-240 one-token lookups a second while 500 new routers a second
   * arrived). A few milliseconds on a router's first heartbeat only.
   */
  gatherMs?: number;
  /** The daemon's `monotonicClock` (a wall-clock step must not expire or extend cached answers); tests pass a `ManualClock`. */
  clock: Clock;
}

/**
 * A cached owner. The HTTP path keeps the router's flood bucket on it (transport/http-heartbeats.ts):
 * one lookup per heartbeat finds both, and the buckets live and go with the cache entries.
 */
export interface CachedOwner extends TokenOwner {
  httpFlood?: FloodGuard;
}

interface Entry {
  owner: CachedOwner;
  checkedAt: number;
}

const LOOKUP_BATCH = 1_000;
/** The one spelling of the `Authorization` header `cachedBearer` remembers. */
const PLAIN_BEARER = "Bearer ";
/**
 * Tokens per background re-check query. The re-checks of a period go out in one statement, so the
 * statements per second stay flat in the router count (100,000 HTTP routers at a 30 s interval
 * through one process: 3,334 tokens a second, one query); nobody waits for it, unlike an upgrade.
 */
export const REFRESH_BATCH = 10_000;
/**
 * Token lookups in flight at once. While they run, new tokens gather into the next batch, so a
 * reconnect storm makes a few large queries instead of one small query per event-loop turn (which
 * queued behind each other on the pool and held every upgrade for tens of seconds).
 */
const MAX_LOOKUPS_IN_FLIGHT = 2;

/**
 * Heartbeat token -> router, cached by hash. Concurrent lookups (a reconnect storm) are merged into
 * one `= any($1)` query per event-loop turn (or per `gatherMs`), at most MAX_LOOKUPS_IN_FLIGHT at once (the rest wait
 * for the next, larger batch). Entries live `ttlMs`, so a router deleted in another
 * process is refused at the next upgrade after that at the latest; `revokeRouter` (from the status
 * feed or a flush that found the router gone) drops it at once.
 */
export class TokenAuthenticator {
  readonly #lookup: TokenLookup;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #maxUnknown: number;
  readonly #clock: Clock;
  readonly #cache = new Map<string, Entry>();
  readonly #unknown = new Map<string, number>();
  readonly #hashByRouter = new Map<string, string>();
  /**
   * `Authorization` header -> the hash of its token, for plain `Bearer <token>` headers whose token
   * was a cached owner's (the HTTP path, `cachedBearer`): a router sends the same header at every heartbeat, and this
   * spares parsing it and hashing the token each time. Only the hashing is skipped: the hash is then
   * checked against the cache like any other (TTL, revocation), so an entry left behind by a revoked or
   * replaced token finds nothing and the header is parsed and hashed again. Bounded like the cache.
   */
  readonly #hashByHeader = new Map<string, string>();
  #pending = new Map<string, Array<(owner: TokenOwner | null) => void>>();
  /** Database lookups made (one per batch of uncached tokens): cache misses, for stats and metrics. */
  lookups = 0;
  #scheduled = false;
  #inFlight = 0;
  readonly #staleMs: number;
  readonly #recheckAfterMs: number;
  readonly #refreshEveryMs: number;
  readonly #gatherMs: number;
  #refresh = new Set<string>();
  #refreshTimer: NodeJS.Timeout | undefined;
  #refreshing = 0;
  /**
   * Revocations are numbered. A lookup that was already running when a router's token was revoked
   * may have read the row before the change: its answer for that router is asked again instead of
   * being believed (and cached). Only kept while some lookup runs.
   */
  #revocation = 0;
  readonly #revokedAt = new Map<string, number>();

  constructor(options: TokenAuthOptions) {
    this.#lookup = options.lookup;
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries ?? 200_000;
    this.#maxUnknown = options.maxUnknown ?? 10_000;
    this.#clock = options.clock;
    this.#staleMs = options.staleMs ?? 0;
    this.#recheckAfterMs = Math.max(options.ttlMs, options.recheckAfterMs ?? options.ttlMs);
    this.#refreshEveryMs = options.refreshEveryMs ?? 1_000;
    this.#gatherMs = options.gatherMs ?? 0;
  }

  /**
   * The router the token belongs to; null for a missing, malformed, unknown or revoked token.
   * `allowStale` (the HTTP path, where every heartbeat is a new check: a router posts once per
   * interval, past the TTL) answers a cached owner up to `staleMs` past the TTL at once and
   * re-checks it in the background, so the database sees one query per second (up to
   * REFRESH_BATCH tokens) instead of one per event-loop turn. A router deleted without a feed event
   * gets at most one more heartbeat acknowledged; the writer drops it (its row is gone) and revokes
   * the router.
   */
  async authenticate(token: string | undefined, allowStale = false): Promise<TokenOwner | null> {
    const known = this.cached(token, allowStale);
    if (known !== undefined) return known;
    const hash = heartbeatTokenLookupHash(token);
    if (hash === null) return null;
    countTokenLookup(false);
    return new Promise((resolve) => {
      const waiters = this.#pending.get(hash);
      if (waiters) waiters.push(resolve);
      else this.#pending.set(hash, [resolve]);
      this.#schedule();
    });
  }

  /**
   * `authenticate` without waiting: the owner or null when the cache (or the token's shape) already
   * knows, undefined when only the database can tell (then call `authenticate`). The HTTP path
   * answers nearly every heartbeat from here, with no promise per request.
   */
  cached(token: string | undefined, allowStale = false): CachedOwner | null | undefined {
    // Shape and hash from @fleet/shared heartbeat-token.ts, as the API stored them; implausible tokens are refused unhashed.
    const hash = heartbeatTokenLookupHash(token);
    if (hash === null) return null;
    return this.#cachedHash(hash, allowStale);
  }

  /**
   * `cached` for an `Authorization` header (the HTTP path: every heartbeat): the same answer, but a
   * header seen before with a cached owner's token is not parsed or hashed again. `token` is what
   * `authenticate` needs when the answer is undefined (the header's token, parsed only then).
   */
  cachedBearer(header: string | undefined, allowStale = false): CachedOwner | null | undefined {
    if (header !== undefined) {
      const known = this.#hashByHeader.get(header);
      if (known !== undefined) {
        const owner = this.#cache.has(known) ? this.#cachedHash(known, allowStale) : undefined;
        if (owner) return owner;
        // Revoked, replaced or expired since: forget the shortcut and take the long way.
        this.#hashByHeader.delete(header);
      }
    }
    const token = bearerToken(header);
    const hash = heartbeatTokenLookupHash(token);
    if (hash === null) return null;
    const owner = this.#cachedHash(hash, allowStale);
    // Only the plain spelling `Bearer <token>` (what RouterOS sends): one header per token, at most
    // 263 characters, so a router cannot fill the map with spellings of its token padded with spaces.
    if (
      owner &&
      header !== undefined &&
      header.length === PLAIN_BEARER.length + (token?.length ?? 0) &&
      header.startsWith(PLAIN_BEARER)
    ) {
      if (this.#hashByHeader.size >= this.#maxEntries) {
        const oldest = this.#hashByHeader.keys().next();
        if (!oldest.done) this.#hashByHeader.delete(oldest.value);
      }
      // The owner's tokenHash is the cache key's own string (see #remember): no second copy per router.
      this.#hashByHeader.set(header, owner.tokenHash === hash ? owner.tokenHash : hash);
    }
    return owner;
  }

  /** Headers remembered by `cachedBearer` (tests, stats). */
  get headersRemembered(): number {
    return this.#hashByHeader.size;
  }

  #cachedHash(hash: string, allowStale: boolean): CachedOwner | null | undefined {
    const now = this.#clock.nowMs();
    const entry = this.#cache.get(hash);
    if (entry && now - entry.checkedAt < this.#ttlMs) {
      countTokenLookup(true);
      return entry.owner;
    }
    if (entry && allowStale && now - entry.checkedAt < this.#ttlMs + this.#staleMs) {
      countTokenLookup(true);
      if (now - entry.checkedAt >= this.#recheckAfterMs) {
        this.#refresh.add(hash);
        this.#scheduleRefresh();
      }
      return entry.owner;
    }
    const refused = this.#unknown.get(hash);
    if (refused !== undefined && now - refused < this.#ttlMs) {
      countTokenLookup(true);
      return null;
    }
    return undefined;
  }

  /** Forget a router's token now (it was deleted): it is refused from now on. */
  revokeRouter(routerId: string): void {
    this.#noteRevocation(routerId);
    const hash = this.#hashByRouter.get(routerId);
    if (hash === undefined) return;
    this.#hashByRouter.delete(routerId);
    this.#cache.delete(hash);
    this.#rememberUnknown(hash, this.#clock.nowMs());
  }

  /**
   * A router's token was replaced (re-adoption): whatever is cached for it is dropped, so its next
   * heartbeat is checked against the database, which knows only the new token.
   */
  forgetRouter(routerId: string): void {
    this.#noteRevocation(routerId);
    const hash = this.#hashByRouter.get(routerId);
    if (hash === undefined) return;
    this.#hashByRouter.delete(routerId);
    this.#cache.delete(hash);
  }

  /** This token is no longer its router's (a flush found it replaced): refused from now on. */
  revokeToken(routerId: string, hash: string): void {
    this.#noteRevocation(routerId);
    if (this.#hashByRouter.get(routerId) === hash) this.#hashByRouter.delete(routerId);
    this.#cache.delete(hash);
    this.#rememberUnknown(hash, this.#clock.nowMs());
  }

  #noteRevocation(routerId: string): void {
    if (this.#inFlight === 0 && this.#refreshing === 0) return;
    this.#revocation += 1;
    this.#revokedAt.set(routerId, this.#revocation);
  }

  /** True when the router's token was revoked after a lookup that started at `since` began. */
  #revokedSince(routerId: string, since: number): boolean {
    return (this.#revokedAt.get(routerId) ?? 0) > since;
  }

  #lookupsSettled(): void {
    if (this.#inFlight === 0 && this.#refreshing === 0) this.#revokedAt.clear();
  }

  get size(): number {
    return this.#cache.size;
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= MAX_LOOKUPS_IN_FLIGHT) return;
    this.#scheduled = true;
    const run = () => {
      this.#scheduled = false;
      void this.#run();
    };
    if (this.#gatherMs > 0) setTimeout(run, this.#gatherMs);
    else setImmediate(run);
  }

  #scheduleRefresh(): void {
    if (this.#refreshTimer !== undefined) return;
    this.#refreshTimer = setTimeout(() => {
      this.#refreshTimer = undefined;
      void this.#runRefresh();
    }, this.#refreshEveryMs);
    this.#refreshTimer.unref();
  }

  async #runRefresh(): Promise<void> {
    this.#refreshing += 1;
    try {
      await this.#refreshAll();
    } finally {
      this.#refreshing -= 1;
      this.#lookupsSettled();
    }
  }

  async #refreshAll(): Promise<void> {
    const hashes = [...this.#refresh];
    this.#refresh = new Set();
    for (let i = 0; i < hashes.length; i += REFRESH_BATCH) {
      const part = hashes.slice(i, i + REFRESH_BATCH);
      let owners: Map<string, TokenOwner>;
      const since = this.#revocation;
      try {
        this.lookups += 1;
        owners = await this.#lookup.lookupTokens(part);
      } catch {
        continue; // Database unreachable: the cached owners stay until their stale window ends.
      }
      const checkedAt = this.#clock.nowMs();
      for (const hash of part) {
        const owner = owners.get(hash) ?? null;
        // Revoked meanwhile: the answer may predate it; the revocation already dropped the entry.
        if (owner && this.#revokedSince(owner.routerId, since)) continue;
        if (!owner) {
          const gone = this.#cache.get(hash)?.owner.routerId;
          if (gone !== undefined && this.#hashByRouter.get(gone) === hash) this.#hashByRouter.delete(gone);
        }
        this.#remember(hash, owner, checkedAt);
      }
    }
  }

  async #run(): Promise<void> {
    const batch = this.#pending;
    if (batch.size === 0) return;
    this.#pending = new Map();
    this.#inFlight += 1;
    try {
      await this.#lookupBatch(batch);
    } finally {
      this.#inFlight -= 1;
      this.#lookupsSettled();
      if (this.#pending.size > 0) this.#schedule();
    }
  }

  async #lookupBatch(batch: Map<string, Array<(owner: TokenOwner | null) => void>>): Promise<void> {
    const hashes = [...batch.keys()];
    for (let i = 0; i < hashes.length; i += LOOKUP_BATCH) {
      const part = hashes.slice(i, i + LOOKUP_BATCH);
      let owners: Map<string, TokenOwner>;
      const since = this.#revocation;
      try {
        this.lookups += 1;
        owners = await this.#lookup.lookupTokens(part);
      } catch {
        // Database unreachable: refuse for now (not cached), the router retries.
        for (const hash of part) for (const resolve of batch.get(hash) ?? []) resolve(null);
        continue;
      }
      const checkedAt = this.#clock.nowMs();
      for (const hash of part) {
        const owner = owners.get(hash) ?? null;
        if (owner && this.#revokedSince(owner.routerId, since)) {
          // Read before the router's token was revoked or replaced, maybe: ask again.
          const waiters = batch.get(hash) ?? [];
          const queued = this.#pending.get(hash);
          if (queued) queued.push(...waiters);
          else this.#pending.set(hash, waiters);
          continue;
        }
        this.#remember(hash, owner, checkedAt);
        for (const resolve of batch.get(hash) ?? []) resolve(owner);
      }
    }
  }

  #rememberUnknown(hash: string, checkedAt: number): void {
    if (this.#unknown.size >= this.#maxUnknown) {
      const oldest = this.#unknown.keys().next();
      if (!oldest.done) this.#unknown.delete(oldest.value);
    }
    this.#unknown.delete(hash);
    this.#unknown.set(hash, checkedAt);
  }

  #remember(hash: string, owner: CachedOwner | null, checkedAt: number): void {
    if (!owner) {
      this.#cache.delete(hash);
      this.#rememberUnknown(hash, checkedAt);
      return;
    }
    this.#unknown.delete(hash);
    if (this.#cache.size >= this.#maxEntries && !this.#cache.has(hash)) {
      const oldest = this.#cache.keys().next();
      if (!oldest.done) {
        const evicted = this.#cache.get(oldest.value);
        this.#cache.delete(oldest.value);
        if (evicted?.owner) this.#hashByRouter.delete(evicted.owner.routerId);
      }
    }
    // The owner keeps the cache key's string, not a second copy of it from the database row.
    if (owner.tokenHash === hash) owner.tokenHash = hash;
    // A re-check keeps the router's flood bucket: refreshing the cache must not refill it.
    const previous = this.#cache.get(hash)?.owner;
    if (previous?.httpFlood && previous.routerId === owner.routerId) {
      owner.httpFlood = previous.httpFlood;
    }
    this.#cache.delete(hash);
    this.#cache.set(hash, { owner, checkedAt });
    this.#hashByRouter.set(owner.routerId, hash);
  }
}
