import { createPrivateKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  breaksTextRule,
  ConfigError,
  envBool,
  envInt,
  envLogLevel,
  envOptional,
  envPort,
  envPortOptional,
  envSecret,
  envString,
  envUrl,
  type EntryPointEnv,
  envTunnelModeName,
  envTunnelNetwork,
  loadEntryPointEnv,
  loadTunnelModeEnv,
  isHealthPingTarget,
  ROUTEROS_USER_NAME,
  type TEnv,
  type TunnelModeEnv,
  type TunnelNetwork,
  requireInProduction,
  requireMetricsGuardInProduction,
  requireStripeInProduction,
  withSecretFiles,
} from "@fleet/shared";
import path from "node:path";
import { envTrustProxy, envTunnelSshPort, type TrustedProxies } from "@fleet/shared";
import { CronExpressionParser } from "cron-parser";

/** Everything the API reads from its environment, parsed once (docs/operations.md "Configuration"). */
export interface ApiConfig {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  /** `METRICS_TOKEN`: when set, `GET /metrics` needs `Authorization: Bearer <it>`. */
  metricsToken: string | undefined;
  /** `METRICS_PORT`: when set, `/metrics` and the probes on a port of their own (public ports answer 404 for `/metrics`). */
  metricsPort: number | undefined;
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: OTLP/HTTP base URL; traces are sent only when set (docs/operations.md "Tracing"). */
  otlpEndpoint: string | undefined;
  /** `DATABASE_POOL_MAX`: connections of the process's pool on PostgreSQL (docs/operations.md "Configuration"). */
  databasePoolMax: number;
  dataDir: string;
  logLevel: string;
  auth: {
    /** HS256 key; undefined with JWKS, or when the dev default is to be generated in DATA_DIR. */
    jwtSecret: string | undefined;
    jwksUrl: URL | undefined;
    issuer: string | undefined;
    audience: string | undefined;
    devLogin: boolean;
    /**
     * Set when AUTH_DEV_LOGIN=true overrides the safe default (a JWT secret is configured, or
     * NODE_ENV=production): start-up logs it as a warning.
     */
    devLoginWarning: string | undefined;
    /** Shared secret of POST /v1/auth/login-hook; the endpoint is off without it. */
    loginHookSecret: string | undefined;
    /** `OIDC_*`: sign-in through an OpenID Connect provider (docs/api.md "Sign-in"); undefined: off. */
    oidc: OidcConfig | undefined;
    /** `SESSION_TTL_HOURS`: absolute lifetime of a sign-in session. */
    sessionTtlHours: number;
    /** `AUTH_SIGNING_KEY`: PKCS#8 PEM (Ed25519 or P-256) of the system's own tokens; dev: generated in DATA_DIR. */
    signingKey: string | undefined;
  };
  stripe: {
    secretKey: string | undefined;
    publishableKey: string | undefined;
    apiBase: URL | undefined;
    emulatorPort: number;
    /** `STRIPE_WEBHOOK_SECRET`; with the emulator and unset, generated once in DATA_DIR. */
    webhookSecret: string | undefined;
  };
  billing: {
    /** `TRIAL_ROUTERS`: routers a billing root may enroll before it has a payment method. */
    trialRouters: number;
    /** `BILLING_RECONCILE_INTERVAL_MS`: period of the mirror's reconciliation with the processor (0 = off). */
    reconcileIntervalMs: number;
  };
  docsUrl: string;
  /** `RATE_LIMIT_PER_MINUTE`: API requests per minute per credential (docs/api.md "Authentication"). */
  rateLimitPerMinute: number;
  /** ENTRY_POINT_* (docs/operations.md "Configuration"): `entry_point` and the port range of new forwards. */
  entryPoint: EntryPointEnv;
  /** `TUNNEL_NETWORK`: where enrollment assigns each router its unique tunnel address. */
  tunnelNetwork: TunnelNetwork;
  /** NODE_ENV is not `production`: the development defaults apply (a loopback `allow_from` is accepted). */
  development: boolean;
  /** `FORWARDS_PER_ORG`: active forwards one organization may hold (docs/api.md "Tunnel agent and entry point"). */
  forwardsPerOrg: number;
  /** `TRIAL_FORWARDS`: active forwards of a billing root with no payment method on file. */
  trialForwards: number;
  /** `TUNNEL_ADDRESS_QUARANTINE_DAYS`: days a removed router's tunnel address is not reassigned. */
  tunnelAddressQuarantineDays: number;
  /** Who is calling (docs/api.md "Rate limits"). */
  clients: {
    /** `RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE`: requests without a valid credential per source address. */
    unauthenticatedPerMinute: number;
    /** `TRUST_PROXY`: proxies whose `X-Forwarded-For` names the client. */
    trustProxy: TrustedProxies;
  };
  oem: {
    /** `OEM_CATALOG_URL`: where the manufacturer catalogue is refreshed from; unset = no refresh. */
    catalogUrl: URL | undefined;
    /** `OEM_REFRESH_CRON`: when to refresh (cron syntax as pg-boss's schedules read it, server time zone). */
    refreshCron: string;
  };
  /** What adoption scripts are made of (docs/routeros.md "Adoption"). */
  adoption: AdoptionConfig;
  /**
   * `CONSOLE_DIR`: the built operator console served at /console (docs/console.md); default the
   * repository's `apps/console/dist`, which `npm start` builds when it is missing or stale.
   */
  consoleDir: string;
  events: {
    /** `AUDIT_RETENTION_DAYS` (default 365): audit entries older than this are pruned. */
    auditRetentionDays: number;
    /** `METRICS_RETENTION_DAYS` (default 400): hourly downtime and hourly health older than this are pruned. */
    metricsRetentionDays: number;
    /** `RESOURCE_RETENTION_DAYS` (default 30): health samples older than this are dropped (docs/api.md "Health"). */
    resourceRetentionDays: number;
    /** `ACCESS_PASSWORD_KEY` (>= 32 bytes): temporary router users' passwords derive from it; dev: generated in DATA_DIR. */
    accessPasswordKey: string | undefined;
    /** `WEBHOOK_ALLOW_PRIVATE` (default false): webhooks may use http and loopback/private addresses. */
    webhookAllowPrivate: boolean;
    /** `WEBHOOK_ENCRYPTION_KEY` (>= 32 bytes): encrypts webhook secrets at rest; dev: generated in DATA_DIR. */
    webhookEncryptionKey: string | undefined;
  };
  /** Invitation mail (docs/api.md "Members and invitations"); no `smtpUrl`: links are only returned. */
  mail: {
    /** `SMTP_URL`: `smtp://user:pass@host:port` or `smtps://...`. */
    smtpUrl: string | undefined;
    /** `MAIL_FROM`: the sender of invitation mail; required with `SMTP_URL`. */
    from: string | undefined;
  };
  /** docs/api.md "Alerts and maintenance windows" (email goes through `mail` above). */
  alerts: {
    /** `TELEGRAM_API_BASE` (default https://api.telegram.org). */
    telegramApiBase: string;
    /** `PAGERDUTY_EVENTS_URL` (default https://events.pagerduty.com/v2/enqueue). */
    pagerdutyEventsUrl: string;
  };
}

/** docs/api.md "Sign-in": the system's client at an OpenID Connect provider. */
export interface OidcConfig {
  /** `OIDC_ISSUER`: its discovery document is read at start. */
  issuer: URL;
  clientId: string;
  clientSecret: string;
  /** `OIDC_DISPLAY_NAME`: the console's sign-in button. */
  displayName: string;
}

/** docs/operations.md "Configuration": the variables adoption scripts are built from. */
export interface AdoptionConfig {
  /** `API_PUBLIC_URL`; unset = `http://HOST:PORT` as the API is bound. */
  apiPublicUrl: string | undefined;
  /** `HEARTBEAT_PUBLIC_URL`; unset = `http://HOST:HEARTBEAT_PORT`. */
  heartbeatPublicUrl: string | undefined;
  /** `HEARTBEAT_PORT`, for the default above. */
  heartbeatPort: number;
  /** `HEARTBEAT_INTERVAL_MS`: the interval of the router's scheduler entry. */
  intervalMs: number;
  /** `TUNNEL_SSH_USER`: the user the script creates. */
  sshUser: string;
  /** `TUNNEL_SSH_KEY`: the agent's private key file; its public half is installed on routers. */
  sshKeyFile: string | undefined;
  /** `TUNNEL_SSH_PUBLIC_KEY`: the agent's public key line, so the API needs no private key. */
  sshPublicKey: string | undefined;
  /** `TUNNEL_NETWORK`: where the user may log in from. */
  tunnelNetwork: string;
  /** `TUNNEL_MODE`: in `wireguard` mode the script also builds the router's end of the tunnel. */
  tunnel: TunnelModeEnv;
  /** `TUNNEL_SSH_PORT`: what the router's tunnel filter rule lets the agent reach. */
  sshPort: number;
  /** `HEALTH_PING_TARGET`: what every heartbeat pings (default: the hub in wireguard mode, else none). */
  pingTarget: string | undefined;
}

/** The only reader of the environment. Throws ConfigError naming the variable on a bad value. */
export const loadApiConfig = (given: TEnv = process.env): ApiConfig => {
  // `<NAME>_FILE` of every secret (docs/operations.md "Configuration").
  const env = withSecretFiles(given, (file) => readFileSync(file, "utf8"));
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
  // docs/operations.md "Configuration": dev login is on by default only on a development machine,
  // i.e. with no token key configured and NODE_ENV other than production.
  const production = envOptional(env, "NODE_ENV") === "production";
  const devLoginDefault = !jwtSecret && !jwksUrl && !production;
  const devLogin = envBool(env, "AUTH_DEV_LOGIN", devLoginDefault);
  if (devLogin && jwksUrl) {
    throw new ConfigError("AUTH_DEV_LOGIN", "cannot be on with JWT_JWKS_URL (dev tokens are HS256)");
  }
  const devLoginWarning =
    devLogin && !devLoginDefault
      ? `AUTH_DEV_LOGIN=true although ${production ? "NODE_ENV=production" : "JWT_SECRET is set"}: POST /v1/auth/dev-login gives anyone who reaches the API a token for any email`
      : undefined;
  // docs/operations.md "Production": what production needs, or start-up stops naming it.
  requireInProduction(
    env,
    ["JWT_SECRET", "JWT_JWKS_URL", "OIDC_ISSUER"],
    "tokens must verify in every replica and after a restart",
  );
  requireStripeInProduction(env);
  requireInProduction(
    env,
    ["WEBHOOK_ENCRYPTION_KEY"],
    "webhook secrets sealed by one replica must open in every other",
  );
  requireInProduction(env, ["TUNNEL_SSH_KEY", "TUNNEL_SSH_PUBLIC_KEY"], "adoption installs the agent's public key");
  requireInProduction(
    env,
    ["ACCESS_PASSWORD_KEY"],
    "the API and every tunnel agent derive the same temporary router passwords from it",
  );
  requireWireguardHubKeyInProduction(env);
  requireMetricsGuardInProduction(env);
  const oidc = loadOidcConfig(env, production);
  const signingKey = envSigningKey(env);
  if (oidc) requireInProduction(env, ["AUTH_SIGNING_KEY"], "every replica must sign access tokens with the same key");
  return {
    host: envString(env, "HOST", "127.0.0.1"),
    port: envPort(env, "PORT", 3000),
    databaseUrl: databaseUrl?.toString(),
    metricsToken: envOptional(env, "METRICS_TOKEN"),
    metricsPort: envPortOptional(env, "METRICS_PORT"),
    otlpEndpoint: envUrl(env, "OTEL_EXPORTER_OTLP_ENDPOINT", ["http:", "https:"])?.toString(),
    databasePoolMax: envInt(env, "DATABASE_POOL_MAX", 10, 1, 1000),
    dataDir: envString(env, "DATA_DIR", "./.data"),
    logLevel: envLogLevel(env, "LOG_LEVEL"),
    auth: {
      jwtSecret,
      jwksUrl,
      issuer: envOptional(env, "JWT_ISSUER"),
      audience: envOptional(env, "JWT_AUDIENCE"),
      devLogin,
      devLoginWarning,
      loginHookSecret: envSecret(env, "AUTH_LOGIN_HOOK_SECRET", 32),
      oidc,
      sessionTtlHours: envInt(env, "SESSION_TTL_HOURS", 12, 1, 8760),
      signingKey,
    },
    stripe: {
      secretKey,
      publishableKey,
      apiBase: envUrl(env, "STRIPE_API_BASE", ["http:", "https:"]),
      emulatorPort: envPort(env, "STRIPE_EMULATOR_PORT", 12111),
      webhookSecret: envWebhookSecret(env),
    },
    billing: {
      trialRouters: envInt(env, "TRIAL_ROUTERS", 3, 0, 1_000_000),
      reconcileIntervalMs: envInt(env, "BILLING_RECONCILE_INTERVAL_MS", 900_000, 0, 86_400_000),
    },
    // The validated text as given: URL serialization would add a trailing slash to a bare origin.
    docsUrl: docsUrl ? (envOptional(env, "DOCS_URL") as string) : "http://localhost:3000/docs",
    rateLimitPerMinute: envInt(env, "RATE_LIMIT_PER_MINUTE", 600, 1, 1_000_000),
    entryPoint: loadEntryPointEnv(env),
    tunnelNetwork: envTunnelNetwork(env),
    development: !production,
    forwardsPerOrg: envInt(env, "FORWARDS_PER_ORG", 50, 1, 1_000_000),
    trialForwards: envInt(env, "TRIAL_FORWARDS", 5, 0, 1_000_000),
    tunnelAddressQuarantineDays: envInt(env, "TUNNEL_ADDRESS_QUARANTINE_DAYS", 30, 0, 3650),
    clients: {
      unauthenticatedPerMinute: envInt(env, "RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE", 120, 1, 1_000_000),
      trustProxy: envTrustProxy(env),
    },
    oem: {
      catalogUrl: envUrl(env, "OEM_CATALOG_URL", ["http:", "https:"]),
      refreshCron: envCron(env, "OEM_REFRESH_CRON", "17 3 * * *"),
    },
    adoption: loadAdoptionConfig(env),
    consoleDir: path.resolve(envString(env, "CONSOLE_DIR", path.join(import.meta.dirname, "../../console/dist"))),
    events: {
      auditRetentionDays: envInt(env, "AUDIT_RETENTION_DAYS", 365, 1, 36_500),
      metricsRetentionDays: envInt(env, "METRICS_RETENTION_DAYS", 400, 1, 36_500),
      resourceRetentionDays: envInt(env, "RESOURCE_RETENTION_DAYS", 30, 1, 36_500),
      accessPasswordKey: envSecret(env, "ACCESS_PASSWORD_KEY", 32),
      webhookAllowPrivate: envBool(env, "WEBHOOK_ALLOW_PRIVATE", false),
      webhookEncryptionKey: envSecret(env, "WEBHOOK_ENCRYPTION_KEY", 32),
    },
    mail: loadMailConfig(env),
    alerts: {
      telegramApiBase: (
        envUrl(env, "TELEGRAM_API_BASE", ["http:", "https:"])?.toString() ?? "https://api.telegram.org"
      ).replace(/\/+$/, ""),
      pagerdutyEventsUrl:
        envUrl(env, "PAGERDUTY_EVENTS_URL", ["http:", "https:"])?.toString() ??
        "https://events.pagerduty.com/v2/enqueue",
    },
  };
};

const loadMailConfig = (env: TEnv): ApiConfig["mail"] => {
  const smtpUrl = envUrl(env, "SMTP_URL", ["smtp:", "smtps:"]);
  // Unset beside SMTP_URL: fleet@ the API's public host (docs/operations.md "Configuration").
  const from = envOptional(env, "MAIL_FROM") ?? (smtpUrl ? `fleet@${publicMailHost(env)}` : undefined);
  if (from !== undefined && !/^[^\s@<>]+@[^\s@<>]+$|^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/.test(from)) {
    throw new ConfigError("MAIL_FROM", 'must be an address such as fleet@example.com or "Fleet <fleet@example.com>"');
  }
  return { smtpUrl: smtpUrl?.toString(), from };
};

/**
 * `TUNNEL_MODE=wireguard` in production: adoption scripts name the hub's public key, which an API
 * in its own container cannot read from the agent's DATA_DIR.
 */
const requireWireguardHubKeyInProduction = (env: TEnv): void => {
  if (envTunnelModeName(env) !== "wireguard") return;
  requireInProduction(
    env,
    ["TUNNEL_WG_PUBLIC_KEY", "TUNNEL_WG_PRIVATE_KEY"],
    "with TUNNEL_MODE=wireguard adoption scripts name the hub's public key",
  );
};

const loadOidcConfig = (env: TEnv, production: boolean): OidcConfig | undefined => {
  const issuer = envUrl(env, "OIDC_ISSUER", production ? ["https:"] : ["http:", "https:"]);
  const clientId = envOptional(env, "OIDC_CLIENT_ID");
  const clientSecret = envOptional(env, "OIDC_CLIENT_SECRET");
  if (!issuer) {
    if (clientId !== undefined) throw new ConfigError("OIDC_ISSUER", "must be set together with OIDC_CLIENT_ID");
    return undefined;
  }
  if (issuer.search || issuer.hash || issuer.username || issuer.password) {
    throw new ConfigError("OIDC_ISSUER", "must be the provider's issuer URL, without credentials, query or fragment");
  }
  if (clientId === undefined) throw new ConfigError("OIDC_CLIENT_ID", "must be set together with OIDC_ISSUER");
  if (clientSecret === undefined) {
    throw new ConfigError("OIDC_CLIENT_SECRET", "must be set together with OIDC_ISSUER (or OIDC_CLIENT_SECRET_FILE)");
  }
  const displayName = envString(env, "OIDC_DISPLAY_NAME", "Single sign-on");
  if (displayName.length > 100 || breaksTextRule(displayName)) {
    throw new ConfigError("OIDC_DISPLAY_NAME", "must be at most 100 characters without control characters");
  }
  return { issuer, clientId, clientSecret, displayName };
};

/** A PKCS#8 PEM of an Ed25519 or P-256 private key; the value is never echoed. */
const envSigningKey = (env: TEnv): string | undefined => {
  const pem = envOptional(env, "AUTH_SIGNING_KEY");
  if (pem === undefined) return undefined;
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: "pem" });
  } catch {
    throw new ConfigError("AUTH_SIGNING_KEY", "is not a PKCS#8 PEM private key");
  }
  const p256 = key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1";
  if (key.asymmetricKeyType !== "ed25519" && !p256) {
    throw new ConfigError("AUTH_SIGNING_KEY", "must be an Ed25519 or P-256 (prime256v1) private key");
  }
  return pem;
};

const PUBLIC_KEY_LINE = /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+={0,2}( .*)?$/;

/** The host of API_PUBLIC_URL as a mail domain (`localhost` when unset or an IPv6 address). */
const publicMailHost = (env: TEnv): string => {
  const host = envUrl(env, "API_PUBLIC_URL", ["http:", "https:"])?.hostname ?? "";
  return host === "" || host.startsWith("[") ? "localhost" : host;
};

const publicBase = (env: TEnv, name: string): string | undefined => {
  const url = envUrl(env, name, ["http:", "https:"]);
  if (!url) return undefined;
  if (url.username || url.password || url.search || url.hash) {
    throw new ConfigError(name, "must be a base URL without credentials, query or fragment");
  }
  return url.toString().replace(/\/+$/, "");
};

const loadAdoptionConfig = (env: TEnv): AdoptionConfig => {
  const sshUser = envString(env, "TUNNEL_SSH_USER", "mgmt");
  if (!ROUTEROS_USER_NAME.test(sshUser)) {
    throw new ConfigError("TUNNEL_SSH_USER", "must be 1-64 letters, digits, '.', '_' or '-' (a RouterOS user name)");
  }
  const sshPublicKey = envOptional(env, "TUNNEL_SSH_PUBLIC_KEY");
  if (sshPublicKey !== undefined && !PUBLIC_KEY_LINE.test(sshPublicKey)) {
    throw new ConfigError("TUNNEL_SSH_PUBLIC_KEY", "must be an OpenSSH public key line such as ssh-ed25519 AAAA...");
  }
  return {
    apiPublicUrl: publicBase(env, "API_PUBLIC_URL"),
    heartbeatPublicUrl: publicBase(env, "HEARTBEAT_PUBLIC_URL"),
    heartbeatPort: envPort(env, "HEARTBEAT_PORT", 3001),
    intervalMs: envInt(env, "HEARTBEAT_INTERVAL_MS", 30_000, 50, 86_400_000),
    sshUser,
    sshKeyFile: envOptional(env, "TUNNEL_SSH_KEY"),
    sshPublicKey: sshPublicKey?.split(" ").slice(0, 2).join(" "),
    // The one parse of TUNNEL_NETWORK (the same value enrollment allocates from), as its CIDR text.
    tunnelNetwork: envTunnelNetwork(env).cidr,
    tunnel: loadTunnelModeEnv(env, envTunnelNetwork(env)),
    sshPort: envTunnelSshPort(env),
    pingTarget: envHealthPingTarget(env, loadTunnelModeEnv(env, envTunnelNetwork(env))),
  };
};

/** docs/routeros.md "Health": the heartbeat's ping target, an IPv4 address or host name the script may carry. */
const envHealthPingTarget = (env: TEnv, tunnel: TunnelModeEnv): string | undefined => {
  const target = envOptional(env, "HEALTH_PING_TARGET");
  if (target === undefined) return tunnel.mode === "wireguard" ? tunnel.hubAddress : undefined;
  if (!isHealthPingTarget(target))
    throw new ConfigError("HEALTH_PING_TARGET", "must be an IPv4 address or a host name");
  return target;
};

const envWebhookSecret = (env: TEnv): string | undefined => {
  const secret = envOptional(env, "STRIPE_WEBHOOK_SECRET");
  if (secret !== undefined && !/^whsec_\S{16,}$/.test(secret)) {
    throw new ConfigError("STRIPE_WEBHOOK_SECRET", "must be a Stripe endpoint secret (whsec_...)");
  }
  return secret;
};

/**
 * A cron expression of a cluster-wide schedule, checked by the parser that will run it: pg-boss
 * reads schedules with cron-parser (non-strict, and it refuses an empty expression), so an
 * expression accepted here is one its schedule accepts.
 */
const isScheduleCron = (expression: string): boolean => {
  if (expression.trim() === "") return false;
  try {
    CronExpressionParser.parse(expression, { tz: "UTC", strict: false });
    return true;
  } catch {
    return false;
  }
};

const envCron = (env: TEnv, name: string, fallback: string): string => {
  const expression = envString(env, name, fallback);
  if (!isScheduleCron(expression)) {
    throw new ConfigError(name, `must be a cron expression such as "17 3 * * *", got "${expression}"`);
  }
  return expression;
};
