import type { ApiKeyRecord } from "@fleet/db";
import { AppError } from "@fleet/shared";
import { hashApiKey } from "../api-keys/api-key-verifier.ts";
import type { AuthClaims } from "./token-verifier.ts";

/** How often an open stream's credential is checked again when nothing happens (well inside 10 s). */
export const STREAM_RECHECK_MS = 4_000;

export interface CredentialWatchDeps {
  /** Looked up afresh, never from a cache: a key revoked in another process ends the stream too. */
  apiKeys: { findByHash(keyHash: string): Promise<ApiKeyRecord | null> };
  organizations: { organizationExists(organizationId: string): Promise<boolean> };
  /** Milliseconds since the epoch (the API's clock, so tests can expire tokens). */
  now: () => number;
  recheckMs?: number;
}

const bearerOf = (authorization: string | undefined): string =>
  /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1] ?? "";

/**
 * Streams end with their credential (docs/api.md "Authentication"): a stream opened with an API
 * key that is revoked, an access token that expires, or for an organization that is removed ends
 * within 10 s, and never delivers an event that happened after that. The credential is checked
 * every `recheckMs` while the stream is idle, and again before each event is sent unless a check
 * that began after the event was received already passed (one check serves a burst).
 */
export class CredentialWatch {
  readonly #d: Required<CredentialWatchDeps>;
  constructor(deps: CredentialWatchDeps) {
    this.#d = { recheckMs: STREAM_RECHECK_MS, ...deps };
  }

  /** Why the credential no longer holds, or null while it does. */
  async problem(auth: AuthClaims, authorization: string | undefined): Promise<string | null> {
    if (auth.exp * 1000 <= this.#d.now()) {
      return auth.credential.type === "api_key" ? "The API key has expired." : "The access token has expired.";
    }
    if (auth.credential.type === "api_key") {
      const key = await this.#d.apiKeys.findByHash(hashApiKey(bearerOf(authorization)));
      if (!key || key.id !== auth.credential.id) return "The API key has been revoked.";
      if (key.expiresAt && key.expiresAt.getTime() <= this.#d.now()) return "The API key has expired.";
    }
    if (!(await this.#d.organizations.organizationExists(auth.organizationId))) {
      return "The organization of this credential has been removed.";
    }
    return null;
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
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal?.addEventListener("abort", onAbort);
    let failure: unknown;
    /** Start time of the newest check that passed. */
    let passedAt = Number.NEGATIVE_INFINITY;
    let running: { startedAt: number; done: Promise<void> } | undefined;
    const check = (): Promise<void> => {
      if (running) return running.done;
      const startedAt = this.#d.now();
      const done = this.problem(auth, authorization)
        .then(
          (problem) => {
            if (problem) failure ??= new AppError("unauthenticated", problem);
            else passedAt = Math.max(passedAt, startedAt);
          },
          // The database did not answer: no event may pass unchecked, so the stream ends (the
          // client reconnects and is checked like any new request).
          (error: unknown) => {
            failure ??= error;
          },
        )
        .finally(() => {
          running = undefined;
          if (failure !== undefined) stop.abort();
        });
      running = { startedAt, done };
      return done;
    };
    const timer = setInterval(() => void check(), this.#d.recheckMs);
    timer.unref();
    try {
      for await (const event of open(stop.signal)) {
        const receivedAt = this.#d.now();
        // A check already under way may have begun before this event arrived: wait for it, then
        // run one that surely began after.
        while (failure === undefined && passedAt < receivedAt) {
          if (running && running.startedAt < receivedAt) await running.done;
          else await check();
        }
        if (failure !== undefined) break;
        yield event;
      }
    } finally {
      clearInterval(timer);
      signal?.removeEventListener("abort", onAbort);
      stop.abort();
    }
    if (failure !== undefined && !signal?.aborted) throw failure;
  }
}
