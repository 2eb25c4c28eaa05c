import type { ApiKeyRecord } from "@fleet/db";
import { AppError, bearerToken, type Clock } from "@fleet/shared";
import { hashApiKey } from "../api-keys/api-key-verifier.ts";
import type { AuthClaims } from "./token-verifier.ts";

/** How often open streams' credentials are checked again when nothing happens (well inside 10 s). */
export const STREAM_RECHECK_MS = 4_000;

export interface CredentialWatchDeps {
  /** Looked up afresh, never from a cache: a key revoked in another process ends the stream too. */
  apiKeys: { findByHash(keyHash: string): Promise<ApiKeyRecord | null> };
  organizations: { organizationExists(organizationId: string): Promise<boolean> };
  /** Asked afresh too: a member removed or demoted in another process ends the stream as well. */
  memberships: { problem(auth: AuthClaims): Promise<string | null> };
  /** Sign-in sessions of system tokens (`sid`), asked afresh like the keys. */
  sessions?: { problem(auth: AuthClaims): Promise<string | null> };
  /** The API's `wallClock` (tests move it to expire tokens). */
  clock: Clock;
  recheckMs?: number;
}

/** One open stream. */
interface Watched {
  auth: AuthClaims;
  /** The API key's hash (API keys only). */
  keyHash: string | undefined;
  /** Start time of the newest check round that found the credential valid. */
  passedAt: number;
  failure: unknown;
  stop: AbortController;
}

/**
 * Streams end with their credential (docs/api.md "Authentication"): a stream opened with an API
 * key that is revoked, an access token that expires, or for an organization that is removed ends
 * within 10 s, and never delivers an event that happened after that.
 *
 * Checks run in rounds over every open stream of the process, each distinct credential asked once
 * per round: one every `recheckMs` while nothing happens, and one before an event is sent unless a
 * round that began after the event was received already passed it (so a burst of events to many
 * streams costs a round or two, not a query per stream and event).
 */
export class CredentialWatch {
  readonly #d: Required<Omit<CredentialWatchDeps, "sessions">> & Pick<CredentialWatchDeps, "sessions">;
  readonly #watched = new Set<Watched>();
  #round: { startedAt: number; done: Promise<void> } | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(deps: CredentialWatchDeps) {
    this.#d = { recheckMs: STREAM_RECHECK_MS, ...deps };
  }

  /** Why the credential no longer holds, or null while it does. */
  async problem(auth: AuthClaims, keyHash: string | undefined): Promise<string | null> {
    if (auth.exp * 1000 <= this.#d.clock.nowMs()) {
      return auth.credential.type === "api_key" ? "The API key has expired." : "The access token has expired.";
    }
    if (auth.credential.type === "api_key") {
      const key = await this.#d.apiKeys.findByHash(keyHash ?? "");
      if (!key || key.id !== auth.credential.id) return "The API key has been revoked.";
      if (key.expiresAt && key.expiresAt.getTime() <= this.#d.clock.nowMs()) return "The API key has expired.";
    }
    if (auth.sessionId !== undefined) {
      const ended = this.#d.sessions ? await this.#d.sessions.problem(auth) : "The sign-in session has ended.";
      if (ended) return ended;
    }
    if (!(await this.#d.organizations.organizationExists(auth.organizationId))) {
      return "The organization of this credential has been removed.";
    }
    return this.#d.memberships.problem(auth);
  }

  /**
   * The events `open` yields, for as long as the credential holds; then it throws `unauthenticated`
   * (the stream ends with tRPC's UNAUTHORIZED, so the client does not reconnect with it).
   */
  async *guard<T>(
    auth: AuthClaims,
    authorization: string | undefined,
    signal: AbortSignal | undefined,
    open: (signal: AbortSignal) => AsyncIterable<T>,
  ): AsyncGenerator<T> {
    const watched: Watched = {
      auth,
      keyHash: auth.credential.type === "api_key" ? hashApiKey(bearerToken(authorization) ?? "") : undefined,
      passedAt: Number.NEGATIVE_INFINITY,
      failure: undefined,
      stop: new AbortController(),
    };
    const onAbort = () => watched.stop.abort();
    signal?.addEventListener("abort", onAbort);
    this.#watch(watched);
    try {
      for await (const event of open(watched.stop.signal)) {
        await this.#passedSince(watched, this.#d.clock.nowMs());
        if (watched.failure !== undefined) break;
        yield event;
      }
    } finally {
      this.#unwatch(watched);
      signal?.removeEventListener("abort", onAbort);
      watched.stop.abort();
    }
    if (watched.failure !== undefined && !signal?.aborted) throw watched.failure;
  }

  #watch(watched: Watched): void {
    this.#watched.add(watched);
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (!this.#round) void this.#startRound();
    }, this.#d.recheckMs);
    this.#timer.unref();
  }

  #unwatch(watched: Watched): void {
    this.#watched.delete(watched);
    if (this.#watched.size > 0 || !this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Waits until a round that began at or after `at` passed this stream, or it failed. */
  async #passedSince(watched: Watched, at: number): Promise<void> {
    while (watched.failure === undefined && watched.passedAt < at) {
      // A round already under way may have begun before `at` (or before this stream was known to
      // it): let it finish, then run one that surely covers both.
      if (this.#round) await this.#round.done;
      else await this.#startRound();
    }
  }

  #startRound(): Promise<void> {
    const startedAt = this.#d.clock.nowMs();
    const streams = [...this.#watched];
    const byCredential = new Map<string, Watched[]>();
    for (const w of streams) {
      const key = `${w.auth.credential.type}:${w.auth.credential.id}:${w.keyHash ?? ""}:${w.auth.organizationId}:${w.auth.exp}:${w.auth.sessionId ?? ""}`;
      const group = byCredential.get(key);
      if (group) group.push(w);
      else byCredential.set(key, [w]);
    }
    const done = Promise.all(
      [...byCredential.values()].map(async (group) => {
        const [first] = group;
        if (!first) return;
        let failure: unknown;
        try {
          const problem = await this.problem(first.auth, first.keyHash);
          if (problem) failure = new AppError("unauthenticated", problem);
        } catch (error) {
          // The database did not answer: no event may pass unchecked, so the stream ends (the
          // client reconnects and is checked like any new request).
          failure = error;
        }
        for (const w of group) {
          if (failure === undefined) {
            w.passedAt = Math.max(w.passedAt, startedAt);
          } else {
            w.failure ??= failure;
            w.stop.abort();
          }
        }
      }),
    ).then(() => {
      this.#round = undefined;
    });
    this.#round = { startedAt, done };
    return done;
  }
}
