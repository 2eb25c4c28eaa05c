import { ConfigError } from "@fleet/shared";
import { describe, expect, it } from "vitest";
import { loadAdminConfig, loadAllInOneConfig } from "./config.ts";

const SECRET = "s".repeat(32);
/** What production needs besides a token key (docs/operations.md "Production"). */
const PRODUCTION = {
  STRIPE_EMULATOR: "true",
  WEBHOOK_ENCRYPTION_KEY: SECRET,
  TUNNEL_SSH_KEY: "/run/secrets/key",
  ACCESS_PASSWORD_KEY: SECRET,
  METRICS_TOKEN: "scrape-token",
};

// docs/operations.md "Configuration": `npm start` keeps the API's own dev-login default, so a
// configured token key or NODE_ENV=production turns dev login off here too.
describe("npm start configuration", () => {
  it.each([
    [{}, true],
    [{ JWT_JWKS_URL: "https://idp.example/jwks", NODE_ENV: "production", ...PRODUCTION }, false],
    [{ JWT_SECRET: SECRET }, false],
    [{ JWT_SECRET: SECRET, NODE_ENV: "production", ...PRODUCTION }, false],
    [{ JWT_JWKS_URL: "https://idp.example/jwks" }, false],
    [{ AUTH_DEV_LOGIN: "true", JWT_SECRET: SECRET, NODE_ENV: "production", ...PRODUCTION }, true],
  ])("dev login with %o: %s", (env, on) => {
    expect(loadAllInOneConfig(env).api.auth.devLogin).toBe(on);
  });

  // The agent runs inside: a public key alone (enough for an API alone) is not enough here.
  it("in production needs the agent's private key, not only its public half", () => {
    const env = {
      NODE_ENV: "production",
      JWT_SECRET: SECRET,
      ...PRODUCTION,
      TUNNEL_SSH_KEY: undefined,
      TUNNEL_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey",
    };
    expect(() => loadAllInOneConfig(env)).toThrow(ConfigError);
    expect(() => loadAllInOneConfig(env)).toThrow(/TUNNEL_SSH_KEY/);
  });

  // The API and the agent in one process both read ACCESS_PASSWORD_KEY: production refuses without it.
  it("in production needs ACCESS_PASSWORD_KEY, with one line naming it", () => {
    const env = { NODE_ENV: "production", JWT_SECRET: SECRET, ...PRODUCTION, ACCESS_PASSWORD_KEY: undefined };
    expect(() => loadAllInOneConfig(env)).toThrow(
      /^Invalid configuration: ACCESS_PASSWORD_KEY must be set with NODE_ENV=production: /,
    );
  });
});

// The Kubernetes init container and compose's `migrate` carry the database and nothing secret.
describe("admin CLI configuration", () => {
  it("starts in production with the database alone, and still refuses a bad value", () => {
    const env = { NODE_ENV: "production", DATABASE_URL: "postgres://u:p@db:5432/fleet" };
    expect(() => loadAllInOneConfig(env)).toThrow(ConfigError);
    expect(loadAdminConfig(env)).toEqual({
      databaseUrl: "postgres://u:p@db:5432/fleet",
      dataDir: "./.data",
      heartbeatIntervalMs: 30_000,
    });
    expect(() => loadAdminConfig({ ...env, DATABASE_URL: "mysql://x" })).toThrow(/DATABASE_URL/);
  });
});
