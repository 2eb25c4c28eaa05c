import { AppError } from "@fleet/shared";
import type { AuthClaims } from "./token-verifier.ts";

/** CONTRACT 12 (docs/api.md "Rate limits"): open streams (tRPC subscriptions, SSE) at once. */
export const STREAMS_PER_CREDENTIAL = 20;
export const STREAMS_PER_ORGANIZATION = 200;
/** A stream's slot frees when some stream of the credential closes: a retry in a few seconds is a guess. */
export const STREAM_CAP_RETRY_AFTER_SECONDS = 10;

export interface StreamLimitsOptions {
  perCredential?: number;
  perOrganization?: number;
}

/**
 * Open streams per credential (the rate limiter's key: an API key, or a token's subject) and per
 * organization, in this process. `open` takes a slot or throws `rate_limited` (429 with
 * `Retry-After`); the release it answers frees the slot, once however often it is called.
 */
export class StreamLimits {
  readonly #perCredential: number;
  readonly #perOrganization: number;
  readonly #byCredential = new Map<string, number>();
  readonly #byOrganization = new Map<string, number>();

  constructor(options: StreamLimitsOptions = {}) {
    this.#perCredential = options.perCredential ?? STREAMS_PER_CREDENTIAL;
    this.#perOrganization = options.perOrganization ?? STREAMS_PER_ORGANIZATION;
  }

  open(auth: AuthClaims): () => void {
    const credential = auth.credentialId ?? `sub:${auth.userId}`;
    const organization = auth.organizationId;
    if ((this.#byCredential.get(credential) ?? 0) >= this.#perCredential) {
      throw refused(`This credential already holds ${this.#perCredential} open streams, the most allowed.`);
    }
    if ((this.#byOrganization.get(organization) ?? 0) >= this.#perOrganization) {
      throw refused(`This organization already holds ${this.#perOrganization} open streams, the most allowed.`);
    }
    increment(this.#byCredential, credential, 1);
    increment(this.#byOrganization, organization, 1);
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      increment(this.#byCredential, credential, -1);
      increment(this.#byOrganization, organization, -1);
    };
  }

  /** Streams open now (tests). */
  count(auth: Pick<AuthClaims, "credentialId" | "userId" | "organizationId">): {
    credential: number;
    organization: number;
  } {
    return {
      credential: this.#byCredential.get(auth.credentialId ?? `sub:${auth.userId}`) ?? 0,
      organization: this.#byOrganization.get(auth.organizationId) ?? 0,
    };
  }
}

const refused = (message: string) =>
  new AppError("rate_limited", `${message} Close one before opening another.`, {
    retryAfterSeconds: STREAM_CAP_RETRY_AFTER_SECONDS,
  });

const increment = (counts: Map<string, number>, key: string, by: number): void => {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
};
