import { createSecretKey, type KeyObject } from "node:crypto";
import {
  AppError,
  bearerToken,
  breaksTextRule,
  type Clock,
  isKnownTimeZone,
  systemClock,
  type TRole,
} from "@fleet/shared";
import { createRemoteJWKSet, errors as joseErrors, type JWTPayload, jwtVerify, SignJWT } from "jose";
import type { SessionCheck } from "./session-check.ts";
import type { SystemTokens } from "./system-tokens.ts";

/** What a verified access token grants (docs/api.md "Authentication"). */
export interface AuthClaims {
  userId: string;
  organizationId: string;
  teamId: string | undefined;
  scopes: ReadonlySet<string>;
  /** IANA zone for `created_at`; undefined means UTC. */
  timezone: string | undefined;
  /** Expiry, seconds since the epoch. */
  exp: number;
  /**
   * The credential presented: an access token (id: its subject) or an API key (id: the key's id).
   * Rate limits and the audit log's actor key on it.
   */
  credential: { type: "token" | "api_key"; id: string };
  /** The same as one string (`sub:<user>` or `key:<id>`), what the rate limiter keys on. */
  credentialId?: string;
  /**
   * The holder's effective role in the organization, set once the request's authorization narrowed
   * the credential to it (docs/api.md "Roles and scopes"); absent for a subject that is no user of ours.
   */
  role?: TRole;
  /**
   * The sign-in session a system token was minted from (`sid`, docs/api.md "Sign-in"): the token
   * holds only while the session does.
   */
  sessionId?: string;
}

/** How one verification may spend work. */
export interface VerifyOptions {
  /**
   * Asked before a database lookup of an unknown API key: an error to throw instead (the source
   * address is over its limit of unauthenticated requests), or undefined to look it up.
   */
  refuseLookup?: () => Error | undefined;
}

/** Verifies API keys (docs/api.md "Authentication"); see ApiKeyVerifier. */
export interface ApiKeyCheck {
  /** True when the bearer value has the shape of an API key rather than a JWT. */
  owns(bearer: string): boolean;
  verify(key: string, options?: VerifyOptions): Promise<AuthClaims>;
}

export interface TokenVerifierOptions {
  secret?: string | undefined;
  jwksUrl?: URL | undefined;
  issuer?: string | undefined;
  audience?: string | undefined;
  /** Wall time of token expiry (the API's `wallClock`); default: the system clock. */
  clock?: Clock;
  /** API keys are accepted wherever a JWT is. */
  apiKeys?: ApiKeyCheck;
  /**
   * The system's own tokens (docs/api.md "Sign-in"), accepted beside those of the secret or the
   * JWKS: told apart by their key id, and valid only while their session is.
   */
  system?: { tokens: SystemTokens; sessions: SessionCheck };
}

const ASYMMETRIC = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"];
const CACHE_LIMIT = 20_000;

/**
 * Verifies bearer tokens with pinned algorithms. Verified tokens are cached (by the Authorization
 * header that carries them) until they expire: a JWT's validity depends only on its signature and
 * its claims, so a repeat costs a map lookup.
 */
export class TokenVerifier {
  readonly #key: KeyObject | ReturnType<typeof createRemoteJWKSet> | undefined;
  readonly #algorithms: string[];
  readonly #options: TokenVerifierOptions;
  readonly #cache = new Map<string, AuthClaims>();
  readonly #clock: Clock;

  constructor(options: TokenVerifierOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    if (options.jwksUrl) {
      this.#key = createRemoteJWKSet(options.jwksUrl, { cooldownDuration: 30_000, cacheMaxAge: 600_000 });
      this.#algorithms = ASYMMETRIC;
    } else if (options.secret) {
      this.#key = createSecretKey(Buffer.from(options.secret));
      this.#algorithms = ["HS256"];
    } else if (options.system) {
      this.#key = undefined;
      this.#algorithms = [];
    } else {
      throw new Error("TokenVerifier needs a secret, a JWKS URL or the system's signing key");
    }
  }

  async verify(authorization: string | undefined, options: VerifyOptions = {}): Promise<AuthClaims> {
    // Keyed by the whole header, which holds the token: a repeat skips parsing the header too. Only
    // verified JWTs are ever stored (API keys have their own cache), so a hit is one of them.
    const cached = authorization === undefined ? undefined : this.#cache.get(authorization);
    if (cached) {
      if (cached.exp * 1000 > this.#clock.nowMs()) return this.#sessionHolds(cached);
      this.#cache.delete(authorization as string);
      throw unauthenticated("The access token has expired.");
    }
    const token = bearer(authorization);
    if (this.#options.apiKeys?.owns(token)) return this.#options.apiKeys.verify(token, options);
    const system = this.#options.system;
    if (system?.tokens.owns(token)) {
      let systemPayload: JWTPayload;
      try {
        systemPayload = await system.tokens.verify(token, this.#clock.now());
      } catch (error) {
        if (error instanceof joseErrors.JWTExpired) throw unauthenticated("The access token has expired.");
        throw unauthenticated("The access token is invalid.");
      }
      const claims = toClaims(systemPayload);
      if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
      this.#cache.set(authorization as string, claims);
      return this.#sessionHolds(claims);
    }
    if (this.#key === undefined) throw unauthenticated("The access token is invalid.");
    let payload: JWTPayload;
    try {
      const result = await jwtVerify(token, this.#key as KeyObject, {
        algorithms: this.#algorithms,
        issuer: this.#options.issuer,
        audience: this.#options.audience,
        requiredClaims: ["exp", "sub"],
        currentDate: this.#clock.now(),
      });
      payload = result.payload;
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw unauthenticated("The access token has expired.");
      throw unauthenticated("The access token is invalid.");
    }
    // A `sid` means something only in the system's own tokens.
    const { sessionId: _ignored, ...claims } = toClaims(payload);
    if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
    this.#cache.set(authorization as string, claims);
    return claims;
  }

  /** A system token holds while its session does (docs/api.md "Sign-in"). */
  async #sessionHolds(claims: AuthClaims): Promise<AuthClaims> {
    if (claims.sessionId === undefined) return claims;
    const sessions = this.#options.system?.sessions;
    if (!sessions || !(await sessions.holds(claims))) {
      throw unauthenticated("The sign-in session of this access token has ended, or its role no longer holds.");
    }
    return claims;
  }
}

/** RFC 6750's token68 characters: anything else is not a token of ours (a JWT or an API key). */
const TOKEN68 = /^[A-Za-z0-9\-_.~+/]+=*$/;

const bearer = (authorization: string | undefined): string => {
  if (!authorization) throw unauthenticated("Missing Authorization header; send 'Authorization: Bearer <token>'.");
  const token = bearerToken(authorization);
  if (token === undefined || !TOKEN68.test(token)) {
    throw unauthenticated("The Authorization header must be 'Bearer <token>'.");
  }
  return token;
};

const unauthenticated = (message: string) => new AppError("unauthenticated", message);

/** Claims that name ids are at most this long (docs/api.md "Authentication"). */
export const MAX_ID_CLAIM_LENGTH = 255;

/**
 * Claims are data from outside (docs/api.md "Authentication"): an id claim with a control
 * character, a lone surrogate or more than 255 characters is not an id. Refused here, before it can
 * reach a query (PostgreSQL refuses NUL with an error) or be stored as a name.
 */
const wellFormedId = (value: string): boolean =>
  value.length > 0 && value.length <= MAX_ID_CLAIM_LENGTH && value.trim() === value && !breaksTextRule(value);

const toClaims = (payload: JWTPayload): AuthClaims => {
  const { sub, exp } = payload;
  const id = payload.id;
  if (typeof sub !== "string" || sub === "") throw unauthenticated("The access token has no 'sub' claim.");
  if (typeof id !== "string" || id === "") throw unauthenticated("The access token has no 'id' (organization) claim.");
  if (typeof exp !== "number") throw unauthenticated("The access token has no 'exp' claim.");
  if (!wellFormedId(sub)) throw unauthenticated("The access token's 'sub' claim is not a well-formed id.");
  if (!wellFormedId(id)) throw unauthenticated("The access token's 'id' claim is not a well-formed id.");
  if (payload.team !== undefined && (typeof payload.team !== "string" || !wellFormedId(payload.team))) {
    throw unauthenticated("The access token's 'team' claim is not a well-formed id.");
  }
  const scope = typeof payload.scope === "string" ? payload.scope : "";
  const tz = typeof payload.timezone === "string" && isKnownTimeZone(payload.timezone) ? payload.timezone : undefined;
  const team = typeof payload.team === "string" ? payload.team : undefined;
  const sid = typeof payload.sid === "string" && wellFormedId(payload.sid) ? payload.sid : undefined;
  return {
    ...(sid === undefined ? {} : { sessionId: sid }),
    userId: sub,
    organizationId: id,
    teamId: team,
    scopes: new Set(scope.split(/\s+/).filter(Boolean)),
    timezone: tz,
    exp,
    credential: { type: "token", id: sub },
    credentialId: `sub:${sub}`,
  };
};

export interface TokenSignerOptions {
  secret: string;
  issuer?: string | undefined;
  audience?: string | undefined;
  ttlSeconds?: number;
}

/** Signs HS256 access tokens for the dev login; production tokens come from the identity provider. */
export class TokenSigner {
  readonly #key: KeyObject;
  readonly #options: TokenSignerOptions;
  readonly ttlSeconds: number;
  constructor(options: TokenSignerOptions) {
    this.#key = createSecretKey(Buffer.from(options.secret));
    this.#options = options;
    this.ttlSeconds = options.ttlSeconds ?? 3600;
  }

  async sign(claims: {
    userId: string;
    organizationId: string;
    teamId?: string;
    scope: string;
    timezone?: string | undefined;
  }): Promise<string> {
    const body: Record<string, string> = { id: claims.organizationId, scope: claims.scope };
    if (claims.timezone) body.timezone = claims.timezone;
    if (claims.teamId) body.team = claims.teamId;
    let jwt = new SignJWT(body)
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(claims.userId)
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`);
    if (this.#options.issuer) jwt = jwt.setIssuer(this.#options.issuer);
    if (this.#options.audience) jwt = jwt.setAudience(this.#options.audience);
    return jwt.sign(this.#key);
  }
}
