import { ConfigError, envBool, envOptional, type TEnv } from "./env-parsers.ts";

/**
 * Secrets (docs/operations.md "Configuration"): each may be given as `<NAME>_FILE`, the path of a
 * file holding it (a mounted Kubernetes or compose secret), instead of the value itself. Key files
 * (`TUNNEL_SSH_KEY`) are paths already.
 */
export const SECRET_VARIABLES = [
  "DATABASE_URL",
  "JWT_SECRET",
  "AUTH_LOGIN_HOOK_SECRET",
  "STRIPE_SECRET_KEY",
  "STRIPE_WEBHOOK_SECRET",
  "WEBHOOK_ENCRYPTION_KEY",
  "METRICS_TOKEN",
  "ACCESS_PASSWORD_KEY",
  "TUNNEL_WG_PRIVATE_KEY",
  "OIDC_CLIENT_SECRET",
  "AUTH_SIGNING_KEY",
] as const;

/**
 * The environment with every `<NAME>_FILE` of {@link SECRET_VARIABLES} replaced by `<NAME>` read
 * from that file (one trailing newline dropped). Setting both is refused, so a stale value cannot
 * silently win. `readFile` is the caller's (this package does no I/O).
 */
export const withSecretFiles = (env: TEnv, readFile: (file: string) => string): TEnv => {
  let resolved: Record<string, string | undefined> | undefined;
  for (const name of SECRET_VARIABLES) {
    const file = envOptional(env, `${name}_FILE`);
    if (file === undefined) continue;
    if (envOptional(env, name) !== undefined) {
      throw new ConfigError(`${name}_FILE`, `cannot be set together with ${name}`);
    }
    let value: string;
    try {
      value = readFile(file);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      throw new ConfigError(
        `${name}_FILE`,
        `names a file that cannot be read (${typeof code === "string" ? code : "error"})`,
      );
    }
    resolved ??= { ...env };
    resolved[name] = value.replace(/\r?\n$/, "");
  }
  return resolved ?? env;
};

/** `NODE_ENV=production`: start-up refuses a half configuration (docs/operations.md "Production"). */
export const isProduction = (env: TEnv): boolean => envOptional(env, "NODE_ENV") === "production";

/**
 * In production, at least one of `names` must be set; else start-up stops with one line naming the
 * first (and its alternatives). Outside production it checks nothing: development generates keys.
 */
export const requireInProduction = (env: TEnv, names: readonly [string, ...string[]], why: string): void => {
  if (!isProduction(env) || names.some((name) => envOptional(env, name) !== undefined)) return;
  const [first, ...others] = names;
  const or = others.length > 0 ? ` (or ${others.join(" or ")})` : "";
  throw new ConfigError(first, `must be set with NODE_ENV=production${or}: ${why}`);
};

/**
 * `STRIPE_EMULATOR=true` starts the built-in emulator even with NODE_ENV=production (a staging
 * system on purpose); without it, production needs `STRIPE_SECRET_KEY`, and `STRIPE_WEBHOOK_SECRET`
 * (without it every Stripe event is refused and billing waits for the next reconciliation).
 */
export const requireStripeInProduction = (env: TEnv): boolean => {
  const emulator = envBool(env, "STRIPE_EMULATOR", false);
  if (!emulator) {
    requireInProduction(
      env,
      ["STRIPE_SECRET_KEY"],
      "the Stripe emulator never starts in production unless STRIPE_EMULATOR=true",
    );
    requireInProduction(
      env,
      ["STRIPE_WEBHOOK_SECRET"],
      "Stripe's events are refused without it, and billing then lags until the next reconciliation",
    );
  }
  return emulator;
};

/**
 * `/metrics` is never anonymous on the public ports in production (docs/operations.md
 * "Production"): `METRICS_TOKEN`, or `METRICS_PORT` (then metrics are served only there).
 */
export const requireMetricsGuardInProduction = (env: TEnv): void =>
  requireInProduction(
    env,
    ["METRICS_TOKEN", "METRICS_PORT"],
    "/metrics would otherwise answer anyone on the public ports with fleet-wide figures",
  );
