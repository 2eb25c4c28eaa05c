import type { TokenOwner } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import { LRUCache } from "lru-cache";
import type { FloodGuard } from "./flood-guard.ts";

/**
 * A cached owner. The HTTP path keeps the router's flood bucket on it (transport/http-heartbeats.ts):
 * one lookup per heartbeat finds both, and the buckets live and go with the cache entries.
 */
export interface CachedOwner extends TokenOwner {
  httpFlood?: FloodGuard;
}

export interface TokenCacheOptions {
  /** A cached answer (owner or "unknown") is re-checked against the database after this long. */
  ttlMs: number;
  /** How long past `ttlMs` an owner may still be answered to a caller that allows it (`allowStale`). */
  staleMs?: number;
  /** A stale answer asks for a re-check (`onRecheck`) only once the entry is this old (at least `ttlMs`). */
  recheckAfterMs?: number;
  /** Cap on cached owners (and on remembered headers); the least recently used go first. */
  maxEntries?: number;
  /** Cap on remembered unknown tokens, kept apart so garbage tokens cannot push out real ones. */
  maxUnknown?: number;
  clock: Clock;
  /** A stale owner was answered and is due for a re-check (the authenticator batches them). */
  onRecheck?: (hash: string) => void;
}

interface Entry {
  owner: CachedOwner;
  checkedAt: number;
}

/** The one spelling of the `Authorization` header the header memo keeps. */
const PLAIN_BEARER = "Bearer ";

/**
 * What the daemon knows about token hashes, without I/O: owners (with the time they were checked),
 * unknown tokens (a negative cache with its own cap) and a memo of `Authorization` headers. Ages are
 * read off `checkedAt` against the injected clock, not lru-cache's `ttl`: its staleness test counts
 * a start time of 0 as "never" and keeps an entry at exactly its TTL, and `ttlResolution` arms a
 * timer per read. lru-cache bounds the maps (LRU) and tells us what it evicts.
 */
export class TokenCache {
  readonly #ttlMs: number;
  readonly #staleMs: number;
  readonly #recheckAfterMs: number;
  readonly #clock: Clock;
  readonly #onRecheck: (hash: string) => void;
  readonly #hashByRouter = new Map<string, string>();
  readonly #owners: LRUCache<string, Entry>;
  readonly #unknown: LRUCache<string, number>;
  /**
   * `Authorization` header -> the hash of its token, for plain `Bearer <token>` headers whose token
   * was a cached owner's: a router sends the same header at every heartbeat, and this spares parsing
   * and hashing it each time. The hash is then answered like any other (TTL, revocation).
   */
  readonly #hashByHeader: LRUCache<string, string>;

  constructor(options: TokenCacheOptions) {
    const maxEntries = options.maxEntries ?? 200_000;
    this.#ttlMs = options.ttlMs;
    this.#staleMs = options.staleMs ?? 0;
    this.#recheckAfterMs = Math.max(options.ttlMs, options.recheckAfterMs ?? options.ttlMs);
    this.#clock = options.clock;
    this.#onRecheck = options.onRecheck ?? (() => {});
    this.#owners = new LRUCache<string, Entry>({
      max: maxEntries,
      // An entry gone (evicted, deleted, replaced) takes its router's pointer with it.
      dispose: (entry, hash) => {
        if (this.#hashByRouter.get(entry.owner.routerId) === hash) this.#hashByRouter.delete(entry.owner.routerId);
      },
    });
    this.#unknown = new LRUCache<string, number>({ max: options.maxUnknown ?? 10_000 });
    this.#hashByHeader = new LRUCache<string, string>({ max: maxEntries });
  }

  /**
   * The one order of checks: a fresh owner; a stale one when allowed (asking for a re-check once it
   * is `recheckAfterMs` old); a token known to be unknown (null); else undefined (ask the database).
   */
  answer(hash: string, allowStale: boolean): CachedOwner | null | undefined {
    const now = this.#clock.nowMs();
    const entry = this.#owners.get(hash);
    if (entry !== undefined) {
      const age = now - entry.checkedAt;
      if (age < this.#ttlMs) return entry.owner;
      if (allowStale && age < this.#ttlMs + this.#staleMs) {
        if (age >= this.#recheckAfterMs) this.#onRecheck(hash);
        return entry.owner;
      }
    }
    const refused = this.#unknown.get(hash);
    if (refused !== undefined && now - refused < this.#ttlMs) return null;
    return undefined;
  }

  /** What the database said about `hash` now: its owner, or null (unknown). */
  remember(hash: string, owner: CachedOwner | null): void {
    const checkedAt = this.#clock.nowMs();
    if (!owner) {
      this.#owners.delete(hash);
      this.#unknown.set(hash, checkedAt);
      return;
    }
    this.#unknown.delete(hash);
    // The owner keeps the cache key's string, not a second copy of it from the database row.
    if (owner.tokenHash === hash) owner.tokenHash = hash;
    // A re-check keeps the router's flood bucket: refreshing the cache must not refill it.
    const previous = this.#owners.peek(hash)?.owner;
    if (previous?.httpFlood && previous.routerId === owner.routerId) owner.httpFlood = previous.httpFlood;
    this.#owners.set(hash, { owner, checkedAt });
    this.#hashByRouter.set(owner.routerId, hash);
  }

  /** Drops the router's cached token; returns its hash (undefined when none was cached). */
  forgetRouter(routerId: string): string | undefined {
    const hash = this.#hashByRouter.get(routerId);
    if (hash !== undefined) this.#owners.delete(hash);
    return hash;
  }

  /** The router's cached token is refused from now on (it was deleted). */
  revokeRouter(routerId: string): void {
    const hash = this.forgetRouter(routerId);
    if (hash !== undefined) this.#unknown.set(hash, this.#clock.nowMs());
  }

  /** This token is refused from now on, whoever it was cached for. */
  revokeHash(hash: string): void {
    this.#owners.delete(hash);
    this.#unknown.set(hash, this.#clock.nowMs());
  }

  /** The hash remembered for `header`, while its owner is cached; a stale memo is dropped. */
  headerHash(header: string): string | undefined {
    const hash = this.#hashByHeader.get(header);
    if (hash === undefined) return undefined;
    if (this.#owners.has(hash)) return hash;
    this.#hashByHeader.delete(header);
    return undefined;
  }

  /** Remember `header` -> `hash` (its token's, `owner`'s): only the plain `Bearer <token>`. */
  rememberHeader(header: string, token: string, hash: string, owner: CachedOwner): void {
    // One header per token, at most 263 characters: a router cannot fill the memo with its token
    // padded with spaces or spelled in other cases.
    if (header.length !== PLAIN_BEARER.length + token.length || !header.startsWith(PLAIN_BEARER)) return;
    // The owner's tokenHash is the cache key's own string (see remember): no second copy per router.
    this.#hashByHeader.set(header, owner.tokenHash === hash ? owner.tokenHash : hash);
  }

  /** Forget a remembered header (its owner's answer is gone or refused). */
  forgetHeader(header: string): void {
    this.#hashByHeader.delete(header);
  }

  get size(): number {
    return this.#owners.size;
  }

  get headersRemembered(): number {
    return this.#hashByHeader.size;
  }
}
