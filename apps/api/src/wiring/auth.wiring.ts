import { ApiKeysRepository, dataDirSecret, IdentityRepository, queryOf } from "@fleet/db";
import { ApiKeyVerifier } from "../features/api-keys/api-key-verifier.ts";
import { ApiKeysService } from "../features/api-keys/api-keys.service.ts";
import { AuthService } from "../features/auth/auth.service.ts";
import { CredentialWatch } from "../features/auth/credential-watch.ts";
import { OrganizationResolver } from "../features/auth/organization-resolver.ts";
import { StreamLimits, type StreamLimitsOptions } from "../features/auth/stream-limits.ts";
import { TokenSigner, TokenVerifier } from "../features/auth/token-verifier.ts";
import { TeamResolver } from "../features/teams/team-resolver.ts";
import type { Wired, WiringContext } from "./wiring.ts";

export interface AuthServices {
  tokens: TokenVerifier;
  organizations: OrganizationResolver;
  auth: AuthService;
  teams: TeamResolver;
  apiKeys: ApiKeysService;
  streams: CredentialWatch;
  streamLimits: StreamLimits;
}

export interface WiredAuth extends Wired<AuthServices> {
  /** Set when dev-login may sign tokens (AUTH_DEV_LOGIN with a local secret). */
  signer: TokenSigner | undefined;
}

/** Bearer tokens (JWTs and API keys), dev-login, organizations and teams (docs/api.md "Authentication"). */
export const wireAuth = (
  { config, db, logger, wallClock }: WiringContext,
  streamLimits: StreamLimitsOptions = {},
): WiredAuth => {
  if (config.auth.devLoginWarning) logger.warn(config.auth.devLoginWarning);
  const apiKeyStore = new ApiKeysRepository(queryOf(db));
  const identity = new IdentityRepository(db);
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
      streams: new CredentialWatch({ apiKeys: apiKeyStore, organizations: identity, clock: wallClock }),
      streamLimits: new StreamLimits(streamLimits),
    },
    schedules: [],
    signer,
    // Last-used times of API keys are written in batches: the last batch goes out on close.
    close: () => apiKeys.flush(),
  };
};
