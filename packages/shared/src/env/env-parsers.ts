/**
 * Small parsers for configuration values. A bad value throws ConfigError whose message is the one
 * line start-up prints before exiting (docs/operations.md "Configuration": "one clear line naming the variable").
 */

export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}`);
    this.name = "ConfigError";
    this.variable = variable;
  }
}

export type TEnv = Readonly<Record<string, string | undefined>>;

const present = (env: TEnv, name: string): string | undefined => {
  const value = env[name];
  return value === undefined || value.trim() === "" ? undefined : value.trim();
};

export const envString = (env: TEnv, name: string, fallback: string): string => present(env, name) ?? fallback;

export const envOptional = (env: TEnv, name: string): string | undefined => present(env, name);

export const envPort = (env: TEnv, name: string, fallback: number, allowZero = true): number => {
  const raw = present(env, name);
  if (raw === undefined) return fallback;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535 || (!allowZero && port === 0)) {
    throw new ConfigError(name, `must be a TCP port number (${allowZero ? 0 : 1}-65535), got "${raw}"`);
  }
  return port;
};

/** A port that may be left unset (then undefined): e.g. METRICS_PORT. */
export const envPortOptional = (env: TEnv, name: string): number | undefined =>
  present(env, name) === undefined ? undefined : envPort(env, name, 0);

export const envInt = (env: TEnv, name: string, fallback: number, min: number, max: number): number => {
  const raw = present(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new ConfigError(name, `must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
};

export const envBool = (env: TEnv, name: string, fallback: boolean): boolean => {
  const raw = present(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (["1", "true", "yes", "on"].includes(raw)) return true;
  if (["0", "false", "no", "off"].includes(raw)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
};

export const envUrl = (env: TEnv, name: string, protocols: readonly string[]): URL | undefined => {
  const raw = present(env, name);
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Never echo the value: a database URL may carry a password.
    throw new ConfigError(name, "is not a valid URL");
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(" or ")}, got "${url.protocol}"`);
  }
  return url;
};

export const envSecret = (env: TEnv, name: string, minBytes: number): string | undefined => {
  const raw = present(env, name);
  if (raw === undefined) return undefined;
  if (Buffer.byteLength(raw) < minBytes) {
    throw new ConfigError(name, `must be at least ${minBytes} bytes long`);
  }
  return raw;
};

export const envPortRange = (
  env: TEnv,
  name: string,
  fallback: readonly [number, number],
): readonly [number, number] => {
  const raw = present(env, name);
  if (raw === undefined) return fallback;
  const match = /^(\d+)-(\d+)$/.exec(raw);
  const from = Number(match?.[1]);
  const to = Number(match?.[2]);
  if (!match || from < 1 || to > 65535 || from > to) {
    throw new ConfigError(name, `must be a port range like 61000-61999, got "${raw}"`);
  }
  return [from, to];
};

export const envLogLevel = (env: TEnv, name: string): string => {
  const level = envString(env, name, "info").toLowerCase();
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(level)) {
    throw new ConfigError(name, `must be one of fatal, error, warn, info, debug, trace, silent`);
  }
  return level;
};
