import { NO_TRUSTED_PROXIES, parseTrustedProxies, type TrustedProxies } from "../rules/trusted-proxies.ts";
import { ConfigError, envOptional, type TEnv } from "./env-parsers.ts";

/** `TRUST_PROXY`: a CIDR list (docs/operations.md "Configuration"); unset trusts nobody. */
export const envTrustProxy = (env: TEnv): TrustedProxies => {
  const raw = envOptional(env, "TRUST_PROXY");
  if (raw === undefined) return NO_TRUSTED_PROXIES;
  const parsed = parseTrustedProxies(raw);
  if (typeof parsed === "string")
    throw new ConfigError("TRUST_PROXY", `must be a comma-separated list of CIDRs: ${parsed}`);
  return parsed;
};
