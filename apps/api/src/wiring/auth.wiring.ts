import { ApiKeysRepository, IdentityWorkflow, MembershipsLookupRepository, queryOf, SignInRepository } from "@fleet/db";
import { dataDirSecret } from "@fleet/runtime";
import { ApiKeyVerifier } from "../features/api-keys/api-key-verifier.ts";
import { ApiKeysService } from "../features/api-keys/api-keys.service.ts";
import { AuthService } from "../features/auth/auth.service.ts";
import { CredentialWatch } from "../features/auth/credential-watch.ts";
import type { MembershipResolver } from "../features/auth/membership-resolver.ts";
import { OidcClient } from "../features/auth/oidc-client.ts";
import { OrganizationResolver } from "../features/auth/organization-resolver.ts";
import { SessionCheck } from "../features/auth/session-check.ts";
import { SignInService } from "../features/auth/sign-in.service.ts";
import { generateSigningKeyPem, SystemTokens } from "../features/auth/system-tokens.ts";
import { StreamLimits, type StreamLimitsOptions } from "../features/auth/stream-limits.ts";
import { TokenSigner, TokenVerifier } from "../features/auth/token-verifier.ts";
import { MembershipsService } from "../features/members/memberships.service.ts";
import { TeamResolver } from "../features/teams/team-resolver.ts";
import type { Wired, WiringContext } from "./wiring.ts";

export interface AuthServices {
  tokens: TokenVerifier;
  organizations: OrganizationResolver;
  auth: AuthService;
  teams: TeamResolver;
  apiKeys: ApiKeysService;
  streams: CredentialWatch;
  memberships: MembershipsService;
  signIn: SignInService;
  streamLimits: StreamLimits;
}

export interface WiredAuth extends Wired<AuthServices> {
  /** Set when dev-login may sign tokens (AUTH_DEV_LOGIN with a local secret). */
  signer: TokenSigner | undefined;
}

/** Bearer tokens (JWTs and API keys), dev-login, organizations and teams (docs/api.md "Authentication"). */
export const wireAuth = (
  { config, db, logger, wallClock }: WiringContext,
  options: {
    /** The API's base URL once it listens (API_PUBLIC_URL, else the bound address). */
    apiUrl: () => string;
    /** Who may act where; default: the memberships service's effective role. */
    memberships?: MembershipResolver;
    /** Open streams per credential and organization (docs/api.md "Rate limits"). */
    streamLimits?: StreamLimitsOptions | undefined;
  },
): WiredAuth => {
  if (config.auth.devLoginWarning) logger.warn(config.auth.devLoginWarning);
  const signInStore = new SignInRepository(queryOf(db));
  const lookup = new MembershipsLookupRepository(queryOf(db));
  const memberships = new MembershipsService({ db, clock: wallClock });
  // docs/api.md "Roles and scopes": sign-in and session checks read the effective role, cached.
  const resolver: MembershipResolver = options.memberships ?? {
    resolveMembership: async (userId, organizationId) => {
      const effective = await memberships.effectiveRole(userId, organizationId);
      return effective && { role: effective.role, teamId: effective.teamId };
    },
  };
  const sessions = new SessionCheck({ sessions: signInStore, clock: wallClock, memberships: resolver });
  // docs/api.md "Sign-in": AUTH_SIGNING_KEY, else (development) a key made once in DATA_DIR. A
  // production API without sign-in mints no tokens of its own: a key of the process's own will do.
  const systemTokens = new SystemTokens(
    config.auth.signingKey ??
      (config.development
        ? dataDirSecret(config.dataDir, "authSigning", generateSigningKeyPem)
        : generateSigningKeyPem()),
  );
  const oidc = config.auth.oidc ? new OidcClient(config.auth.oidc, { allowHttp: config.development }) : undefined;
  // Read at start (docs/api.md "Sign-in"); a provider down now is asked again at the first sign-in.
  oidc
    ?.configuration()
    .catch((error: unknown) =>
      logger.warn({ reason: error instanceof Error ? error.message : String(error) }, "OIDC_ISSUER: discovery failed"),
    );
  const publicUrl = config.adoption.apiPublicUrl;
  const apiKeyStore = new ApiKeysRepository(queryOf(db));
  const identity = new IdentityWorkflow(db);
  const apiKeys = new ApiKeyVerifier({
    keys: apiKeyStore,
    logger: logger.child({ feature: "api-keys" }),
    clock: wallClock,
  });
  const jwtSecret = config.auth.jwksUrl ? undefined : (config.auth.jwtSecret ?? dataDirSecret(config.dataDir, "jwt"));
  const tokens = new TokenVerifier({
    secret: jwtSecret,
    jwksUrl: config.auth.jwksUrl,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
    apiKeys,
    clock: wallClock,
    system: { tokens: systemTokens, sessions },
  });
  const signer =
    config.auth.devLogin && jwtSecret
      ? new TokenSigner({ secret: jwtSecret, issuer: config.auth.issuer, audience: config.auth.audience })
      : undefined;
  const teams = new TeamResolver(identity);
  return {
    services: {
      tokens,
      organizations: new OrganizationResolver(identity),
      auth: new AuthService({ identity, signer, loginHookSecret: config.auth.loginHookSecret }),
      teams,
      apiKeys: new ApiKeysService({
        db,
        teams,
        clock: wallClock,
        forget: (hash) => apiKeys.forget(hash),
      }),
      streams: new CredentialWatch({
        apiKeys: apiKeyStore,
        organizations: identity,
        memberships,
        sessions,
        clock: wallClock,
      }),
      memberships,
      signIn: new SignInService({
        oidc,
        signIn: signInStore,
        identity,
        lookup,
        memberships: resolver,
        tokens: systemTokens,
        sessions,
        clock: wallClock,
        sessionTtlHours: config.auth.sessionTtlHours,
        redirectUri: () => `${publicUrl ?? options.apiUrl()}/v1/auth/oidc/callback`,
        publicOrigin: publicUrl ? new URL(publicUrl).origin : undefined,
        secureCookies: publicUrl?.startsWith("https:") ?? false,
        logger: logger.child({ feature: "sign-in" }),
      }),
      streamLimits: new StreamLimits(options.streamLimits ?? {}),
    },
    schedules: [],
    signer,
    // Last-used times of API keys are written in batches: the last batch goes out on close.
    close: () => apiKeys.flush(),
  };
};
