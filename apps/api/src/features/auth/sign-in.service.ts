import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { IdentityWorkflow, MembershipsLookupRepository, SignInRepository } from "@fleet/db";
import { AppError, type Clock, isKnownTimeZone } from "@fleet/shared";
import type { Logger } from "pino";
import type { EffectiveMembership, MembershipResolver } from "./membership-resolver.ts";
import { ROLE_SCOPES } from "./membership-resolver.ts";
import type { OidcClient } from "./oidc-client.ts";
import { randomLoginChecks } from "./oidc-client.ts";
import { safeReturnTo } from "./return-to.ts";
import type { SessionCheck } from "./session-check.ts";
import { sessionProblem } from "./session-check.ts";
import { SYSTEM_TOKEN_TTL_SECONDS, type SystemTokens } from "./system-tokens.ts";
import type { AuthClaims } from "./token-verifier.ts";

/** The session cookie (docs/api.md "Sign-in"). */
export const SESSION_COOKIE = "fleet_session";
/** The short-lived cookie that binds a sign-in's `state` to the browser that started it. */
export const LOGIN_COOKIE = "fleet_oidc";
/** How long a sign-in may stay at the provider. */
export const LOGIN_TTL_SECONDS = 600;

const sha256 = (value: string): string => createHash("sha256").update(value).digest("hex");
const badSignIn = (message: string) => new AppError("bad_request", message);

export interface SignInServiceDeps {
  /** Undefined: sign-in through a provider is off (OIDC_ISSUER unset); its endpoints answer 404. */
  oidc: OidcClient | undefined;
  signIn: SignInRepository;
  identity: Pick<IdentityWorkflow, "loginByEmail">;
  lookup: Pick<MembershipsLookupRepository, "organizationsOf" | "userEmail" | "setCurrentOrganization">;
  memberships: MembershipResolver;
  tokens: SystemTokens;
  sessions: SessionCheck;
  /** The API's `wallClock`. */
  clock: Clock;
  sessionTtlHours: number;
  /** `<API_PUBLIC_URL>/v1/auth/oidc/callback`, or the bound address's; asked when needed (known once listening). */
  redirectUri: () => string;
  /** The origin of API_PUBLIC_URL when set: the only `Origin` a token request may come from. */
  publicOrigin: string | undefined;
  /** API_PUBLIC_URL is https: cookies are `Secure`. */
  secureCookies: boolean;
  logger: Logger;
}

/** What a cookie-authenticated request brings (docs/api.md "Sign-in"). */
export interface SessionRequest {
  /** The `fleet_session` cookie's value. */
  session: string | undefined;
  /** The `Origin` header, when the browser sent one. */
  origin: string | undefined;
  /** The origin the request was addressed to (its Host), used when API_PUBLIC_URL is unset. */
  requestOrigin: string;
}

/** A cookie to set: the transport renders it (docs/api.md "Sign-in"). */
export interface CookieToSet {
  name: string;
  value: string;
  path: string;
  /** Seconds; 0 clears it. */
  maxAge: number;
}

export interface TokenResult {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  organization_id: string;
  role: string;
}

export interface MeResult {
  user_id: string;
  email: string | null;
  organization_id: string;
  role: string | null;
  organizations: { id: string; name: string; role: string }[];
}

/**
 * Sign-in through an OpenID Connect provider and the system's own tokens (docs/api.md "Sign-in").
 * The provider proves who someone is; the session cookie then buys short-lived access tokens, for
 * the organization chosen, with the scopes of the person's role there.
 */
export class SignInService {
  readonly #d: SignInServiceDeps;
  constructor(deps: SignInServiceDeps) {
    this.#d = deps;
  }

  get enabled(): boolean {
    return this.#d.oidc !== undefined;
  }

  /** `GET /v1/auth/oidc/start`: where to send the browser, and the cookie that binds the sign-in to it. */
  async start(returnTo: unknown): Promise<{ location: string; cookie: CookieToSet }> {
    const oidc = this.#oidc();
    const checks = randomLoginChecks();
    const binding = randomBytes(32).toString("base64url");
    const now = this.#d.clock.now();
    let location: URL;
    try {
      location = await oidc.authorizationUrl(checks, this.#d.redirectUri());
    } catch (cause) {
      this.#d.logger.warn({ reason: reasonOf(cause) }, "the identity provider's discovery document could not be read");
      throw new AppError("upstream_failed", "The identity provider cannot be reached; try again shortly.");
    }
    await this.#d.signIn.deleteExpiredLogins(now);
    await this.#d.signIn.insertLogin(sha256(checks.state), {
      browserHash: sha256(binding),
      codeVerifier: checks.codeVerifier,
      nonce: checks.nonce,
      returnTo: safeReturnTo(returnTo),
      expiresAt: new Date(now.getTime() + LOGIN_TTL_SECONDS * 1000),
    });
    return {
      location: location.href,
      cookie: { name: LOGIN_COOKIE, value: binding, path: "/v1/auth/oidc", maxAge: LOGIN_TTL_SECONDS },
    };
  }

  /**
   * `GET /v1/auth/oidc/callback`: the state taken once (and only by the browser that started it),
   * the code exchanged, the ID token checked, the person found or made, a new session.
   */
  async callback(
    query: URLSearchParams,
    binding: string | undefined,
  ): Promise<{ location: string; cookie: CookieToSet }> {
    const oidc = this.#oidc();
    const state = query.get("state");
    if (!state || state.length > 512) throw badSignIn("The sign-in has no state; start it again.");
    const login = await this.#d.signIn.takeLogin(sha256(state));
    const now = this.#d.clock.now();
    if (!login) throw badSignIn("The sign-in is unknown or was already used; start it again.");
    if (login.expiresAt.getTime() <= now.getTime()) throw badSignIn("The sign-in took too long; start it again.");
    if (!binding || sha256(binding) !== login.browserHash) {
      throw badSignIn("The sign-in was started in another browser; start it again.");
    }
    const error = query.get("error");
    if (error) throw badSignIn("The identity provider refused the sign-in.");
    const callbackUrl = new URL(this.#d.redirectUri());
    for (const [key, value] of query) callbackUrl.searchParams.append(key, value);
    let person: Awaited<ReturnType<OidcClient["exchange"]>>;
    try {
      person = await oidc.exchange(callbackUrl, { state, nonce: login.nonce, codeVerifier: login.codeVerifier });
    } catch (cause) {
      this.#d.logger.warn(
        { reason: reasonOf(cause) },
        "sign-in refused: the provider's answer did not pass the checks",
      );
      throw badSignIn("The identity provider's answer did not pass the checks; start the sign-in again.");
    }
    if (!person.email || !person.emailVerified) {
      throw badSignIn(
        "The identity provider did not vouch for an email address (email_verified); ask its administrator.",
      );
    }
    const email = person.email.toLowerCase();
    if (email.length > 250) throw badSignIn("The email address is too long.");
    let userId = await this.#d.signIn.findIdentityUser(person.issuer, person.subject);
    if (!userId) {
      // First sign-in of this person: the user with this verified email (dev-login, the login
      // hook), or a new one by the authentication workflow (docs/api.md "Initial state and workflow rules": a default organization).
      userId = (await this.#d.identity.loginByEmail(email)).userId;
    }
    await this.#d.signIn.linkIdentity(person.issuer, person.subject, userId, email, now);
    const value = randomBytes(32).toString("base64url");
    const ttlMs = this.#d.sessionTtlHours * 3_600_000;
    await this.#d.signIn.insertSession(
      {
        id: randomUUID(),
        userId,
        timezone: person.zoneinfo && isKnownTimeZone(person.zoneinfo) ? person.zoneinfo : null,
        createdAt: now,
        expiresAt: new Date(now.getTime() + ttlMs),
        endedAt: null,
      },
      sha256(value),
    );
    return {
      location: login.returnTo,
      cookie: { name: SESSION_COOKIE, value, path: "/", maxAge: Math.floor(ttlMs / 1000) },
    };
  }

  /** `POST /v1/auth/token`: an access token of the session for the chosen organization. */
  async token(request: SessionRequest, organizationId: string | undefined): Promise<TokenResult> {
    this.#assertOwnOrigin(request);
    const session = await this.#session(request.session);
    const now = this.#d.clock.now();
    let chosen = organizationId;
    let membership: EffectiveMembership | null = null;
    if (chosen !== undefined) {
      membership = await this.#d.memberships.resolveMembership(session.userId, chosen);
      if (!membership) throw new AppError("not_found", "No such organization.");
    } else {
      const current = session.currentOrganizationId;
      if (current) membership = await this.#d.memberships.resolveMembership(session.userId, current);
      chosen = current ?? undefined;
      if (!membership) {
        // The current organization is gone or out of reach: the first one the user is a member of.
        for (const organization of await this.#d.lookup.organizationsOf(session.userId)) {
          membership = await this.#d.memberships.resolveMembership(session.userId, organization.id);
          chosen = organization.id;
          if (membership) break;
        }
      }
      if (!membership || chosen === undefined)
        throw new AppError("not_found", "You are not a member of any organization.");
    }
    if (chosen !== session.currentOrganizationId) await this.#d.lookup.setCurrentOrganization(session.userId, chosen);
    const expiresAt = new Date(Math.min(now.getTime() + SYSTEM_TOKEN_TTL_SECONDS * 1000, session.expiresAt.getTime()));
    const accessToken = await this.#d.tokens.sign(
      {
        userId: session.userId,
        organizationId: chosen,
        scope: ROLE_SCOPES[membership.role].join(" "),
        teamId: membership.teamId ?? undefined,
        timezone: session.timezone ?? undefined,
        sessionId: session.id,
      },
      now,
      expiresAt,
    );
    return {
      access_token: accessToken,
      token_type: "Bearer",
      expires_in: Math.max(0, Math.floor((expiresAt.getTime() - now.getTime()) / 1000)),
      organization_id: chosen,
      role: membership.role,
    };
  }

  /** `POST /v1/auth/logout`: the session ends, in this process at once and everywhere within 10 s. */
  async logout(request: SessionRequest): Promise<CookieToSet> {
    this.#assertOwnOrigin(request);
    const cleared: CookieToSet = { name: SESSION_COOKIE, value: "", path: "/", maxAge: 0 };
    if (!request.session || request.session.length > 200) return cleared;
    const session = await this.#d.signIn.findSessionByTokenHash(sha256(request.session));
    if (!session) return cleared;
    await this.#d.signIn.endSession(session.id, this.#d.clock.now());
    this.#d.sessions.forget(session.id);
    return cleared;
  }

  /** `GET /.well-known/jwks.json`. */
  jwks() {
    return this.#d.tokens.jwks();
  }

  get secureCookies(): boolean {
    return this.#d.secureCookies;
  }

  /** A cookie-authenticated call from another site's page is refused (docs/api.md "Sign-in"). */
  #assertOwnOrigin(request: SessionRequest): void {
    if (request.origin === undefined) return;
    if (request.origin !== (this.#d.publicOrigin ?? request.requestOrigin)) {
      throw new AppError("forbidden", "This request comes from another origin than the API's own.");
    }
  }

  /** `GET /v1/me`. */
  async me(auth: AuthClaims): Promise<MeResult> {
    // A token of an outside identity provider or an admin CLI key may name no user of ours: it is
    // still valid, and answers with what is known.
    const email = await this.#d.lookup.userEmail(auth.userId);
    const membership = await this.#d.memberships.resolveMembership(auth.userId, auth.organizationId);
    const organizations = await this.#d.lookup.organizationsOf(auth.userId);
    return {
      user_id: auth.userId,
      email,
      organization_id: auth.organizationId,
      role: membership?.role ?? null,
      organizations: organizations.map((o) => ({ id: o.id, name: o.name, role: o.role })),
    };
  }

  #oidc(): OidcClient {
    if (!this.#d.oidc) throw new AppError("not_found", "Sign-in through an identity provider is not configured.");
    return this.#d.oidc;
  }

  async #session(value: string | undefined) {
    const unauthenticated = (message: string) => new AppError("unauthenticated", message);
    if (!value || value.length > 200) throw unauthenticated("Not signed in: no session cookie.");
    const session = await this.#d.signIn.findSessionByTokenHash(sha256(value));
    const problem = sessionProblem(session, this.#d.clock.nowMs());
    if (!session || problem) throw unauthenticated(problem ?? "Not signed in.");
    return session;
  }
}

/** The library's words for a refusal (never a token or secret): the error's code and message. */
const reasonOf = (cause: unknown): string => {
  if (!(cause instanceof Error)) return "unknown";
  const code = (cause as { code?: unknown }).code;
  // oauth4webapi names the claim that failed a comparison (its value is never logged).
  const claim = (cause.cause as { claim?: unknown } | undefined)?.claim;
  const detail = typeof claim === "string" ? ` (claim ${claim})` : "";
  return `${typeof code === "string" ? `${code}: ` : ""}${cause.message}${detail}`.slice(0, 300);
};
