import type { AuthSessionRecord } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import { type MembershipResolver, ROLE_SCOPES } from "./membership-resolver.ts";
import type { AuthClaims } from "./token-verifier.ts";

/** The persistence the check needs (SignInRepository in production). */
export interface SessionLookup {
  findSession(id: string): Promise<AuthSessionRecord | null>;
}

export interface SessionCheckOptions {
  sessions: SessionLookup;
  /** The API's `wallClock`. */
  clock: Clock;
  /**
   * Who may act where: a token holds only while its user still has a role in its organization (a
   * removed member's tokens stop; a demoted member's lose, in `MembershipsService.limit`, what the
   * role lost).
   */
  memberships: MembershipResolver;
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

interface RoleEntry {
  /** Whether the user has an effective role there. */
  member: boolean;
  checkedAtMs: number;
}

const grants = (granted: ReadonlySet<string>, claims: Pick<AuthClaims, "scopes">): boolean => {
  for (const scope of claims.scopes) if (!granted.has(scope)) return false;
  return true;
};

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
  readonly #roles = new Map<string, RoleEntry>();

  constructor(options: SessionCheckOptions) {
    this.#o = { cacheTtlMs: 5_000, ...options };
  }

  /** Whether a system token holds, when the caches answer on their own; undefined: ask `holds`. */
  holdsNow(claims: AuthClaims): boolean | undefined {
    if (claims.sessionId === undefined) return undefined;
    const live = this.liveNow(claims.sessionId);
    if (live !== true) return live;
    const role = this.#roles.get(`${claims.userId}:${claims.organizationId}`);
    if (!role || this.#o.clock.nowMs() - role.checkedAtMs >= this.#o.cacheTtlMs) return undefined;
    return role.member;
  }

  /** Whether a system token holds: its session is live and its user still has a role there. */
  async holds(claims: AuthClaims): Promise<boolean> {
    const known = this.holdsNow(claims);
    if (known !== undefined) return known;
    if (claims.sessionId === undefined || !(await this.live(claims.sessionId))) return false;
    const key = `${claims.userId}:${claims.organizationId}`;
    let role = this.#roles.get(key);
    if (!role || this.#o.clock.nowMs() - role.checkedAtMs >= this.#o.cacheTtlMs) {
      const checkedAtMs = this.#o.clock.nowMs();
      const membership = await this.#o.memberships.resolveMembership(claims.userId, claims.organizationId);
      role = { member: membership !== null, checkedAtMs };
      if (this.#roles.size >= CACHE_LIMIT) this.#roles.clear();
      this.#roles.set(key, role);
    }
    return role.member;
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

  /** Why a system token no longer holds, asked afresh (open streams, docs/api.md "Authentication"). */
  async problem(claims: AuthClaims): Promise<string | null> {
    if (claims.sessionId === undefined) return null;
    const ended = sessionProblem(await this.#o.sessions.findSession(claims.sessionId), this.#o.clock.nowMs());
    if (ended) return ended;
    const membership = await this.#o.memberships.resolveMembership(claims.userId, claims.organizationId);
    if (!membership || !grants(new Set(ROLE_SCOPES[membership.role]), claims)) {
      return "The role this access token was minted for no longer holds in its organization.";
    }
    return null;
  }

  /** Ended in this process: no request may pass with its tokens any more. */
  forget(sessionId: string): void {
    this.#cache.set(sessionId, { live: false, expiresAtMs: 0, checkedAtMs: this.#o.clock.nowMs() });
  }
}
