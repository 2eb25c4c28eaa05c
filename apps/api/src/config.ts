import {
  ConfigError,
  envBool,
  envInt,
  envLogLevel,
  envOptional,
  envPort,
  envSecret,
  envString,
  envUrl,
  type EntryPointEnv,
  loadEntryPointEnv,
  type TEnv,
} from "@fleet/shared";
import cron from "node-cron";

/** Everything the API reads from its environment, parsed once (docs/operations.md "Configuration"). */
export interface ApiConfig {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  dataDir: string;
  logLevel: string;
  auth: {
    /** HS256 key; undefined with JWKS, or when the dev default is to be generated in DATA_DIR. */
    jwtSecret: string | undefined;
    jwksUrl: URL | undefined;
    issuer: string | undefined;
    audience: string | undefined;
    devLogin: boolean;
    /** Shared secret of POST /v1/auth/login-hook; the endpoint is off without it. */
    loginHookSecret: string | undefined;
  };
  stripe: {
    secretKey: string | undefined;
    publishableKey: string | undefined;
    apiBase: URL | undefined;
    emulatorPort: number;
  };
  docsUrl: string;
  /** ENTRY_POINT_* (docs/operations.md "Configuration"): `entry_point` and the port range of new forwards. */
  entryPoint: EntryPointEnv;
  oem: {
    /** `OEM_CATALOG_URL`: where the manufacturer catalogue is refreshed from; unset = no refresh. */
    catalogUrl: URL | undefined;
    /** `OEM_REFRESH_CRON`: when to refresh (node-cron syntax, server time zone). */
    refreshCron: string;
  };
  events: {
    /** `AUDIT_RETENTION_DAYS` (default 365): audit entries older than this are pruned. */
    auditRetentionDays: number;
    /** `WEBHOOK_ALLOW_PRIVATE` (default false): webhooks may use http and loopback/private addresses. */
    webhookAllowPrivate: boolean;
    /** `WEBHOOK_ENCRYPTION_KEY` (>= 32 bytes): encrypts webhook secrets at rest; dev: generated in DATA_DIR. */
    webhookEncryptionKey: string | undefined;
  };
}

export interface ApiConfigDefaults {
  /** `npm start` turns dev login on by default; the API alone keeps it off. */
  devLogin?: boolean;
}

/** The only reader of the environment. Throws ConfigError naming the variable on a bad value. */
export const loadApiConfig = (env: TEnv = process.env, defaults: ApiConfigDefaults = {}): ApiConfig => {
  const jwksUrl = envUrl(env, "JWT_JWKS_URL", ["http:", "https:"]);
  const jwtSecret = envSecret(env, "JWT_SECRET", 32);
  const databaseUrl = envUrl(env, "DATABASE_URL", ["postgres:", "postgresql:"]);
  const secretKey = envOptional(env, "STRIPE_SECRET_KEY");
  if (secretKey && !/^(sk|rk)_(test|live)_/.test(secretKey)) {
    throw new ConfigError("STRIPE_SECRET_KEY", "must be a Stripe secret key (sk_test_..., sk_live_...)");
  }
  const publishableKey = envOptional(env, "STRIPE_PUBLISHABLE_KEY");
  if (publishableKey && !/^pk_(test|live)_/.test(publishableKey)) {
    throw new ConfigError("STRIPE_PUBLISHABLE_KEY", "must be a Stripe publishable key (pk_test_..., pk_live_...)");
  }
  if (secretKey && !publishableKey) {
    throw new ConfigError("STRIPE_PUBLISHABLE_KEY", "must be set together with STRIPE_SECRET_KEY");
  }
  const docsUrl = envUrl(env, "DOCS_URL", ["http:", "https:"]);
  const devLoginDefault = (defaults.devLogin ?? false) && !jwksUrl;
  const devLogin = envBool(env, "AUTH_DEV_LOGIN", devLoginDefault);
  if (devLogin && jwksUrl) {
    throw new ConfigError("AUTH_DEV_LOGIN", "cannot be on with JWT_JWKS_URL (dev tokens are HS256)");
  }
  return {
    host: envString(env, "HOST", "127.0.0.1"),
    port: envPort(env, "PORT", 3000),
    databaseUrl: databaseUrl?.toString(),
    dataDir: envString(env, "DATA_DIR", "./.data"),
    logLevel: envLogLevel(env, "LOG_LEVEL"),
    auth: {
      jwtSecret,
      jwksUrl,
      issuer: envOptional(env, "JWT_ISSUER"),
      audience: envOptional(env, "JWT_AUDIENCE"),
      devLogin,
      loginHookSecret: envSecret(env, "AUTH_LOGIN_HOOK_SECRET", 32),
    },
    stripe: {
      secretKey,
      publishableKey,
      apiBase: envUrl(env, "STRIPE_API_BASE", ["http:", "https:"]),
      emulatorPort: envPort(env, "STRIPE_EMULATOR_PORT", 12111),
    },
    // The validated text as given: URL serialization would add a trailing slash to a bare origin.
    docsUrl: docsUrl ? (envOptional(env, "DOCS_URL") as string) : "http://localhost:3000/docs",
    entryPoint: loadEntryPointEnv(env),
    oem: {
      catalogUrl: envUrl(env, "OEM_CATALOG_URL", ["http:", "https:"]),
      refreshCron: envCron(env, "OEM_REFRESH_CRON", "17 3 * * *"),
    },
    events: {
      auditRetentionDays: envInt(env, "AUDIT_RETENTION_DAYS", 365, 1, 36_500),
      webhookAllowPrivate: envBool(env, "WEBHOOK_ALLOW_PRIVATE", false),
      webhookEncryptionKey: envSecret(env, "WEBHOOK_ENCRYPTION_KEY", 32),
    },
  };
};

const envCron = (env: TEnv, name: string, fallback: string): string => {
  const expression = envString(env, name, fallback);
  if (!cron.validate(expression)) {
    throw new ConfigError(name, `must be a cron expression such as "17 3 * * *", got "${expression}"`);
  }
  return expression;
};
