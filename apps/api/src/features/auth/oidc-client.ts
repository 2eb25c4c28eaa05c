import * as oidc from "openid-client";
import type { OidcConfig } from "../../config.ts";

/** What sign-in takes from the provider's ID token (or its userinfo, when the token leaves them out). */
export interface ProviderIdentity {
  issuer: string;
  subject: string;
  email: string | undefined;
  emailVerified: boolean;
  zoneinfo: string | undefined;
}

/** The checks of one sign-in, made at its start (docs/api.md "Sign-in"). */
export interface LoginChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/**
 * The system's client at an OpenID Connect provider, through `openid-client`: authorization code
 * flow with PKCE (S256), state and nonce; the ID token's signature checked against the provider's
 * JWKS, and its `iss`, `aud`, `exp` and `nonce` by the library.
 */
export class OidcClient {
  readonly #config: OidcConfig;
  readonly #allowHttp: boolean;
  #discovered: Promise<oidc.Configuration> | undefined;

  constructor(config: OidcConfig, options: { allowHttp: boolean }) {
    this.#config = config;
    this.#allowHttp = options.allowHttp;
  }

  /** Reads the provider's discovery document (at start, and again after a failure). */
  configuration(): Promise<oidc.Configuration> {
    this.#discovered ??= oidc
      .discovery(
        this.#config.issuer,
        this.#config.clientId,
        undefined,
        oidc.ClientSecretBasic(this.#config.clientSecret),
        {
          execute: [
            // Development and tests only: production requires an https issuer (config.ts).
            ...(this.#allowHttp ? [oidc.allowInsecureRequests] : []),
            // The ID token's signature too, not only TLS (docs/api.md "Sign-in").
            oidc.enableNonRepudiationChecks,
          ],
          timeout: 10,
        },
      )
      .catch((error: unknown) => {
        this.#discovered = undefined;
        throw error;
      });
    return this.#discovered;
  }

  async authorizationUrl(checks: LoginChecks, redirectUri: string): Promise<URL> {
    const configuration = await this.configuration();
    return oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      response_type: "code",
      scope: "openid email profile",
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: "S256",
    });
  }

  /** Exchanges the code of the callback (`callbackUrl`: the redirect URI with its query) and checks the ID token. */
  async exchange(callbackUrl: URL, checks: LoginChecks): Promise<ProviderIdentity> {
    const configuration = await this.configuration();
    const tokens = await oidc.authorizationCodeGrant(configuration, callbackUrl, {
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      pkceCodeVerifier: checks.codeVerifier,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims) throw new Error("the provider sent no ID token");
    let source: Record<string, unknown> = claims;
    // Some providers put email only in userinfo (OpenID Connect Core 5.4): ask it, for this subject.
    if (typeof claims.email !== "string" || claims.email_verified === undefined) {
      source = { ...(await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub)), ...claims };
    }
    return {
      issuer: claims.iss,
      subject: claims.sub,
      email: typeof source.email === "string" ? source.email : undefined,
      emailVerified: source.email_verified === true || source.email_verified === "true",
      zoneinfo: typeof source.zoneinfo === "string" ? source.zoneinfo : undefined,
    };
  }
}

export const randomLoginChecks = (): LoginChecks => ({
  state: oidc.randomState(),
  nonce: oidc.randomNonce(),
  codeVerifier: oidc.randomPKCECodeVerifier(),
});
