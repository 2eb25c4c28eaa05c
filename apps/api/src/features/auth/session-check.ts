import type { AuthSessionRecord } from "@fleet/db";
import type { Clock } from "@fleet/shared";

/** The persistence the check needs (SignInRepository in production). */
export interface SessionLookup {
  findSession(id: string): Promise<AuthSessionRecord | null>;
}

export interface SessionCheckOptions {
  sessions: SessionLookup;
  /** The API's `wallClock`. */
  clock: Clock;
  /**
   * How long a session found live is trusted without asking the database again. A logout in this
   * process is seen at once; in another API process within this time (docs/api.md "Sign-in": 10 s).
   */
  cacheTtlMs?: number;
}

interface Entry {
  live: boolean;
  /** The session's own end (SESSION_TTL_HOURS after sign-in). */
  expiresAtMs: number;
  checkedAtMs: number;
}

const CACHE_LIMIT = 20_000;

/** Why a session no longer holds, or null while it does. */
export const sessionProblem = (session: AuthSessionRecord | null, nowMs: number): string | null => {
  if (!session || session.endedAt !== null) return "The sign-in session has ended.";
  if (session.expiresAt.getTime() <= nowMs) return "The sign-in session has expired.";
  return null;
};

/**
 * Whether the session a system token was minted from (`sid`) still holds, on the request path:
 * the answer of the database is cached per session for `cacheTtlMs`, so a token costs a map lookup,
 * and a session ended anywhere stops its tokens within that time (as ApiKeyVerifier does for keys).
 */
export class SessionCheck {
  readonly #o: Required<SessionCheckOptions>;
  readonly #cache = new Map<string, Entry>();

  constructor(options: SessionCheckOptions) {
    this.#o = { cacheTtlMs: 5_000, ...options };
  }

  /** True or false when the cache answers on its own; undefined: ask `live`. */
  liveNow(sessionId: string): boolean | undefined {
    const entry = this.#cache.get(sessionId);
    const now = this.#o.clock.nowMs();
    if (!entry || now - entry.checkedAtMs >= this.#o.cacheTtlMs) return undefined;
    return entry.live && entry.expiresAtMs > now;
  }

  async live(sessionId: string): Promise<boolean> {
    const known = this.liveNow(sessionId);
    if (known !== undefined) return known;
    const now = this.#o.clock.nowMs();
    const session = await this.#o.sessions.findSession(sessionId);
    const entry: Entry = {
      live: sessionProblem(session, now) === null,
      expiresAtMs: session?.expiresAt.getTime() ?? 0,
      checkedAtMs: now,
    };
    if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
    this.#cache.set(sessionId, entry);
    return entry.live;
  }

  /** Why the session no longer holds, asked afresh (open streams, docs/api.md "Authentication"). */
  async problem(sessionId: string): Promise<string | null> {
    return sessionProblem(await this.#o.sessions.findSession(sessionId), this.#o.clock.nowMs());
  }

  /** Ended in this process: no request may pass with its tokens any more. */
  forget(sessionId: string): void {
    this.#cache.set(sessionId, { live: false, expiresAtMs: 0, checkedAtMs: this.#o.clock.nowMs() });
  }
}
