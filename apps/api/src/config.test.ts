import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ConfigError, generateWireguardKeyPair } from "@fleet/shared";
import { afterAll, describe, expect, it } from "vitest";
import { loadApiConfig } from "./config.ts";

describe("API configuration", () => {
  const { privateKey: HUB_PRIVATE_KEY, publicKey: HUB_PUBLIC_KEY } = generateWireguardKeyPair();
  const SECRET = "s".repeat(32);
  const JWKS = "https://idp.example/jwks";
  const PRODUCTION = {
    STRIPE_EMULATOR: "true",
    WEBHOOK_ENCRYPTION_KEY: SECRET,
    TUNNEL_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey",
    ACCESS_PASSWORD_KEY: SECRET,
    METRICS_TOKEN: "scrape-token",
  };

  it("has the contract's defaults", () => {
    const config = loadApiConfig({});
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 3000,
      dataDir: "./.data",
      databaseUrl: undefined,
      logLevel: "info",
      docsUrl: "http://localhost:3000/docs",
      stripe: { secretKey: undefined, emulatorPort: 12111 },
      auth: { devLogin: true, devLoginWarning: undefined, jwksUrl: undefined },
      // Development: a loopback network, where the simulator's routers listen (docs/routeros.md "Simulator").
      tunnelNetwork: { cidr: "127.64.0.0/10", prefix: 10 },
      development: true,
      forwardsPerOrg: 50,
      entryPoint: { ports: [61000, 61999], tunnelSource: undefined },
    });
    expect(loadApiConfig({ NODE_ENV: "production", JWT_SECRET: "s".repeat(32), ...PRODUCTION })).toMatchObject({
      tunnelNetwork: { cidr: "100.64.0.0/10", prefix: 10 },
      development: false,
    });
  });

  // docs/operations.md "Configuration": on by default only with no JWT_SECRET, no JWT_JWKS_URL and
  // NODE_ENV other than production; an explicit true turns it on anyway, with a warning.
  it.each([
    [{}, true, false],
    [{ NODE_ENV: "development" }, true, false],
    [{ NODE_ENV: "test" }, true, false],
    [{ NODE_ENV: "production", JWT_JWKS_URL: JWKS }, false, false],
    [{ JWT_SECRET: SECRET }, false, false],
    [{ JWT_JWKS_URL: JWKS }, false, false],
    [{ JWT_SECRET: SECRET, NODE_ENV: "production" }, false, false],
    [{ AUTH_DEV_LOGIN: "false" }, false, false],
    [{ AUTH_DEV_LOGIN: "true" }, true, false],
    [{ AUTH_DEV_LOGIN: "true", JWT_SECRET: SECRET }, true, true],
    [{ AUTH_DEV_LOGIN: "true", JWT_SECRET: SECRET, NODE_ENV: "production" }, true, true],
    [{ AUTH_DEV_LOGIN: "false", JWT_SECRET: SECRET }, false, false],
  ])("AUTH_DEV_LOGIN with %o: on=%s, warning=%s", (env, on, warned) => {
    // Production rows carry the rest of what production needs (docs/operations.md "Production").
    const production = "NODE_ENV" in env && env.NODE_ENV === "production" ? PRODUCTION : {};
    const auth = loadApiConfig({ ...production, ...env }).auth;
    expect(auth.devLogin).toBe(on);
    expect(auth.devLoginWarning !== undefined).toBe(warned);
    if (warned) expect(auth.devLoginWarning).toMatch(/AUTH_DEV_LOGIN=true/);
  });

  it.each([
    [{ PORT: "65535" }, null],
    [{ PORT: "0" }, null],
    [{ PORT: "65536" }, "PORT"],
    [{ PORT: "-1" }, "PORT"],
    [{ PORT: "80a" }, "PORT"],
    [{ JWT_SECRET: "x".repeat(32) }, null],
    [{ JWT_SECRET: "x".repeat(31) }, "JWT_SECRET"],
    [{ DATABASE_URL: "postgres://u:p@h:5432/db" }, null],
    [{ DATABASE_URL: "mysql://h/db" }, "DATABASE_URL"],
    [{ DATABASE_URL: "::not a url::" }, "DATABASE_URL"],
    [{ STRIPE_SECRET_KEY: "sk_test_abc" }, "STRIPE_PUBLISHABLE_KEY"],
    [{ STRIPE_SECRET_KEY: "nope", STRIPE_PUBLISHABLE_KEY: "pk_test_abc" }, "STRIPE_SECRET_KEY"],
    [{ STRIPE_SECRET_KEY: "sk_test_abc", STRIPE_PUBLISHABLE_KEY: "pk_test_abc" }, null],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    [{ AUTH_DEV_LOGIN: "true", JWT_JWKS_URL: "https://idp.example/jwks" }, "AUTH_DEV_LOGIN"],
    [{ STRIPE_EMULATOR_PORT: "70000" }, "STRIPE_EMULATOR_PORT"],
    [{ TUNNEL_NETWORK: "10.20.0.0/16" }, null],
    [{ TUNNEL_NETWORK: "10.20.0.0/31" }, "TUNNEL_NETWORK"],
    [{ TUNNEL_NETWORK: "not a network" }, "TUNNEL_NETWORK"],
    [{ FORWARDS_PER_ORG: "1" }, null],
    [{ FORWARDS_PER_ORG: "0" }, "FORWARDS_PER_ORG"],
    [{ FORWARDS_PER_ORG: "many" }, "FORWARDS_PER_ORG"],
    [{ ENTRY_POINT_TUNNEL_SOURCE: "10.255.0.0/24" }, null],
    [{ ENTRY_POINT_TUNNEL_SOURCE: "10.255.0.0/24;" }, "ENTRY_POINT_TUNNEL_SOURCE"],
    [{ TRIAL_FORWARDS: "0" }, null],
    [{ TRIAL_FORWARDS: "-1" }, "TRIAL_FORWARDS"],
    [{ TUNNEL_ADDRESS_QUARANTINE_DAYS: "0" }, null],
    [{ TUNNEL_ADDRESS_QUARANTINE_DAYS: "30d" }, "TUNNEL_ADDRESS_QUARANTINE_DAYS"],
    [{ RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "0" }, "RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE"],
    [{ TRUST_PROXY: "10.0.0.0/8, 192.0.2.7,::1" }, null],
    [{ TRUST_PROXY: "10.0.0.0/33" }, "TRUST_PROXY"],
    [{ TRUST_PROXY: "proxy.internal" }, "TRUST_PROXY"],
  ])("%o -> %s", (env, failing) => {
    if (failing === null) {
      expect(() => loadApiConfig(env)).not.toThrow();
      return;
    }
    let error: unknown;
    try {
      loadApiConfig(env);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(failing);
    expect((error as Error).message).not.toContain("\n");
  });

  it("never echoes a database URL (it may carry a password)", () => {
    let message = "";
    try {
      loadApiConfig({ DATABASE_URL: "postgres://user:hunter2@host:99999/db" });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/DATABASE_URL/);
    expect(message).not.toContain("hunter2");
  });

  it("DATABASE_POOL_MAX: 10 by default, 1..1000, anything else stops start-up naming it", () => {
    expect(loadApiConfig({}).databasePoolMax).toBe(10);
    expect(loadApiConfig({ DATABASE_POOL_MAX: "1" }).databasePoolMax).toBe(1);
    expect(loadApiConfig({ DATABASE_POOL_MAX: "1000" }).databasePoolMax).toBe(1000);
    for (const bad of ["0", "1001", "ten", "2.5"]) {
      expect(() => loadApiConfig({ DATABASE_POOL_MAX: bad }), bad).toThrow(/DATABASE_POOL_MAX/);
    }
  });

  it("SMTP_URL and MAIL_FROM: off by default; the sender defaults; a bad value stops start-up naming it, without the password", () => {
    expect(loadApiConfig({}).mail).toEqual({ smtpUrl: undefined, from: undefined });
    expect(
      loadApiConfig({ SMTP_URL: "smtps://u:p@mail.example.com:465", MAIL_FROM: "Fleet <fleet@example.com>" }).mail,
    ).toEqual({
      smtpUrl: "smtps://u:p@mail.example.com:465",
      from: "Fleet <fleet@example.com>",
    });
    // Without MAIL_FROM: fleet@ the API's public host.
    expect(loadApiConfig({ SMTP_URL: "smtp://u:hunter2@mail.example.com" }).mail.from).toBe("fleet@localhost");
    expect(
      loadApiConfig({ SMTP_URL: "smtp://mail.example.com", API_PUBLIC_URL: "https://fleet.example.net" }).mail.from,
    ).toBe("fleet@fleet.example.net");
    for (const bad of ["http://mail.example.com", "not a url"]) {
      let message = "";
      try {
        loadApiConfig({ SMTP_URL: bad.replace("mail", "u:hunter2@mail"), MAIL_FROM: "fleet@example.com" });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/SMTP_URL/);
      expect(message).not.toContain("hunter2");
    }
    expect(() => loadApiConfig({ SMTP_URL: "smtp://mail.example.com", MAIL_FROM: "nobody" })).toThrow(/MAIL_FROM/);
  });

  describe('NODE_ENV=production refuses a half configuration (docs/operations.md "Production")', () => {
    const complete = {
      NODE_ENV: "production",
      JWT_SECRET: SECRET,
      STRIPE_SECRET_KEY: "sk_live_abc",
      STRIPE_PUBLISHABLE_KEY: "pk_live_abc",
      STRIPE_WEBHOOK_SECRET: "whsec_0123456789abcdef",
      WEBHOOK_ENCRYPTION_KEY: SECRET,
      TUNNEL_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey",
      ACCESS_PASSWORD_KEY: SECRET,
      METRICS_TOKEN: "scrape-token",
    };
    /** TUNNEL_MODE=wireguard on top: adoption scripts name the hub. */
    const wireguard = {
      ...complete,
      TUNNEL_MODE: "wireguard",
      TUNNEL_WG_ENDPOINT: "hub.example.net:51820",
      TUNNEL_WG_PUBLIC_KEY: HUB_PUBLIC_KEY,
    };
    const refusal = (env: Record<string, string | undefined>): string | null => {
      try {
        loadApiConfig(env);
        return null;
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        expect(error.message).not.toContain("\n");
        return error.variable;
      }
    };

    it("starts with everything production needs, and with each alternative", () => {
      expect(refusal(complete)).toBeNull();
      expect(refusal({ ...complete, JWT_SECRET: undefined, JWT_JWKS_URL: JWKS })).toBeNull();
      expect(refusal({ ...complete, TUNNEL_SSH_PUBLIC_KEY: undefined, TUNNEL_SSH_KEY: "/run/secrets/key" })).toBeNull();
      const emulator = { ...complete, STRIPE_SECRET_KEY: undefined, STRIPE_PUBLISHABLE_KEY: undefined };
      expect(refusal({ ...emulator, STRIPE_EMULATOR: "true" })).toBeNull();
      // The emulator generates its own webhook secret.
      expect(refusal({ ...emulator, STRIPE_EMULATOR: "true", STRIPE_WEBHOOK_SECRET: undefined })).toBeNull();
      expect(refusal(wireguard)).toBeNull();
      // An API beside the hub in one process may derive the public key from the private one.
      expect(
        refusal({ ...wireguard, TUNNEL_WG_PUBLIC_KEY: undefined, TUNNEL_WG_PRIVATE_KEY: HUB_PRIVATE_KEY }),
      ).toBeNull();
    });

    it("names the missing variable in one line that carries no secret", () => {
      const message = (env: Record<string, string | undefined>): string => {
        try {
          loadApiConfig(env);
        } catch (error) {
          return (error as Error).message;
        }
        throw new Error("started without what production needs");
      };
      expect(message({ ...complete, ACCESS_PASSWORD_KEY: undefined })).toBe(
        "Invalid configuration: ACCESS_PASSWORD_KEY must be set with NODE_ENV=production: the API and every tunnel agent derive the same temporary router passwords from it",
      );
      expect(message({ ...wireguard, TUNNEL_WG_PUBLIC_KEY: undefined })).toMatch(
        /^Invalid configuration: TUNNEL_WG_PUBLIC_KEY must be set with NODE_ENV=production \(or TUNNEL_WG_PRIVATE_KEY\): /,
      );
      expect(message({ ...complete, ACCESS_PASSWORD_KEY: undefined })).not.toContain(SECRET);
    });

    it.each([
      ["JWT_SECRET", { JWT_SECRET: undefined }],
      ["STRIPE_SECRET_KEY", { STRIPE_SECRET_KEY: undefined, STRIPE_PUBLISHABLE_KEY: undefined }],
      [
        "STRIPE_SECRET_KEY",
        { STRIPE_SECRET_KEY: undefined, STRIPE_PUBLISHABLE_KEY: undefined, STRIPE_EMULATOR: "false" },
      ],
      ["WEBHOOK_ENCRYPTION_KEY", { WEBHOOK_ENCRYPTION_KEY: undefined }],
      ["TUNNEL_SSH_KEY", { TUNNEL_SSH_PUBLIC_KEY: undefined }],
      ["ACCESS_PASSWORD_KEY", { ACCESS_PASSWORD_KEY: undefined }],
      ["STRIPE_WEBHOOK_SECRET", { STRIPE_WEBHOOK_SECRET: undefined }],
      ["METRICS_TOKEN", { METRICS_TOKEN: undefined }],
    ])("without %s it stops naming it", (variable, without) => {
      expect(refusal({ ...complete, ...without })).toBe(variable);
    });

    // /metrics is never anonymous on the public ports: a token, or a port of its own.
    it("without METRICS_TOKEN stops with one line naming it, unless METRICS_PORT moves /metrics off", () => {
      expect(() => loadApiConfig({ ...complete, METRICS_TOKEN: undefined })).toThrow(
        /^Invalid configuration: METRICS_TOKEN must be set with NODE_ENV=production \(or METRICS_PORT\): /,
      );
      expect(refusal({ ...complete, METRICS_TOKEN: undefined, METRICS_PORT: "9100" })).toBeNull();
      expect(refusal({ ...complete, NODE_ENV: "development", METRICS_TOKEN: undefined })).toBeNull();
    });

    it("in wireguard mode, without the hub's key it stops naming TUNNEL_WG_PUBLIC_KEY", () => {
      expect(refusal({ ...wireguard, TUNNEL_WG_PUBLIC_KEY: undefined })).toBe("TUNNEL_WG_PUBLIC_KEY");
      // External mode never needs it.
      expect(refusal({ ...complete, TUNNEL_WG_PUBLIC_KEY: undefined })).toBeNull();
    });

    it("checks nothing of the kind outside production (development generates keys)", () => {
      expect(
        refusal({ ...complete, NODE_ENV: "development", JWT_SECRET: undefined, WEBHOOK_ENCRYPTION_KEY: undefined }),
      ).toBeNull();
      expect(refusal({})).toBeNull();
    });
  });

  describe("<NAME>_FILE reads a secret from a file", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "fleet-secret-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const file = (name: string, text: string) => {
      const at = path.join(dir, name);
      writeFileSync(at, text);
      return at;
    };

    it("takes the file's text without its trailing newline, for every secret", () => {
      const config = loadApiConfig({
        JWT_SECRET_FILE: file("jwt", `${SECRET}\n`),
        WEBHOOK_ENCRYPTION_KEY_FILE: file("webhook", SECRET.toUpperCase()),
        METRICS_TOKEN_FILE: file("metrics", "scrape-me\n"),
        DATABASE_URL_FILE: file("db", "postgres://u:p@h:5432/db\n"),
        AUTH_LOGIN_HOOK_SECRET_FILE: file("hook", SECRET),
        STRIPE_SECRET_KEY_FILE: file("sk", "sk_test_abc\n"),
        STRIPE_PUBLISHABLE_KEY: "pk_test_abc",
        STRIPE_WEBHOOK_SECRET_FILE: file("whsec", "whsec_0123456789abcdef\n"),
      });
      expect(config.auth.jwtSecret).toBe(SECRET);
      expect(config.events.webhookEncryptionKey).toBe(SECRET.toUpperCase());
      expect(config.metricsToken).toBe("scrape-me");
      expect(config.databaseUrl).toBe("postgres://u:p@h:5432/db");
      expect(config.auth.loginHookSecret).toBe(SECRET);
      expect(config.stripe.secretKey).toBe("sk_test_abc");
      expect(config.stripe.webhookSecret).toBe("whsec_0123456789abcdef");
    });

    it("validates the file's value like the variable's, and refuses a missing file or both forms", () => {
      expect(refusalOf({ JWT_SECRET_FILE: file("short", "short\n") })).toBe("JWT_SECRET");
      expect(refusalOf({ JWT_SECRET_FILE: path.join(dir, "missing") })).toBe("JWT_SECRET_FILE");
      expect(refusalOf({ JWT_SECRET: SECRET, JWT_SECRET_FILE: file("both", SECRET) })).toBe("JWT_SECRET_FILE");
    });

    it("satisfies production like the variable itself", () => {
      expect(
        refusalOf({
          NODE_ENV: "production",
          JWT_SECRET_FILE: file("jwt-prod", SECRET),
          STRIPE_EMULATOR: "true",
          WEBHOOK_ENCRYPTION_KEY_FILE: file("webhook-prod", SECRET),
          ACCESS_PASSWORD_KEY_FILE: file("access-prod", `${SECRET}\n`),
          TUNNEL_SSH_KEY: "/run/secrets/key",
          METRICS_TOKEN_FILE: file("metrics-prod", "scrape-me\n"),
        }),
      ).toBeNull();
    });

    const refusalOf = (env: Record<string, string>): string | null => {
      try {
        loadApiConfig(env);
        return null;
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        return error.variable;
      }
    };
  });
});

describe('sign-in through an OpenID Connect provider (docs/api.md "Sign-in")', () => {
  const ed25519 = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const p256 = generateKeyPairSync("ec", { namedCurve: "P-256" })
    .privateKey.export({ type: "pkcs8", format: "pem" })
    .toString();
  const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 })
    .privateKey.export({ type: "pkcs8", format: "pem" })
    .toString();
  const oidc = { OIDC_ISSUER: "https://idp.example/realms/msp", OIDC_CLIENT_ID: "fleet", OIDC_CLIENT_SECRET: "s3cret" };
  const production = {
    NODE_ENV: "production",
    STRIPE_EMULATOR: "true",
    WEBHOOK_ENCRYPTION_KEY: "s".repeat(32),
    TUNNEL_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey",
    ACCESS_PASSWORD_KEY: "s".repeat(32),
    METRICS_TOKEN: "scrape-token",
  };
  const failure = (env: Record<string, string>): string | null => {
    try {
      loadApiConfig(env);
      return null;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      expect(error.message).not.toContain("\n");
      expect(error.message).not.toContain("s3cret");
      expect(error.message).not.toContain("PRIVATE KEY");
      return error.message;
    }
  };

  it("is off by default, with a 12-hour session and the button's default name", () => {
    const config = loadApiConfig({});
    expect(config.auth.oidc).toBeUndefined();
    expect(config.auth.sessionTtlHours).toBe(12);
    expect(loadApiConfig(oidc).auth.oidc).toEqual({
      issuer: new URL(oidc.OIDC_ISSUER),
      clientId: "fleet",
      clientSecret: "s3cret",
      displayName: "Single sign-on",
    });
  });

  it("needs the client with the issuer, and an https issuer in production", () => {
    expect(failure({ OIDC_ISSUER: oidc.OIDC_ISSUER })).toMatch(/OIDC_CLIENT_ID must be set/);
    expect(failure({ ...oidc, OIDC_CLIENT_SECRET: "" })).toMatch(/OIDC_CLIENT_SECRET must be set/);
    expect(failure({ OIDC_CLIENT_ID: "fleet" })).toMatch(/OIDC_ISSUER must be set/);
    expect(failure({ ...oidc, OIDC_ISSUER: "not a url" })).toMatch(/OIDC_ISSUER/);
    expect(failure({ ...oidc, OIDC_ISSUER: "http://idp.example", ...production, AUTH_SIGNING_KEY: ed25519 })).toMatch(
      /OIDC_ISSUER must use https:/,
    );
    expect(failure({ ...oidc, OIDC_DISPLAY_NAME: "a\u0007b" })).toMatch(/OIDC_DISPLAY_NAME/);
  });

  it("SESSION_TTL_HOURS: 1..8760", () => {
    expect(loadApiConfig({ SESSION_TTL_HOURS: "1" }).auth.sessionTtlHours).toBe(1);
    expect(loadApiConfig({ SESSION_TTL_HOURS: "8760" }).auth.sessionTtlHours).toBe(8760);
    expect(failure({ SESSION_TTL_HOURS: "0" })).toMatch(/SESSION_TTL_HOURS/);
    expect(failure({ SESSION_TTL_HOURS: "8761" })).toMatch(/SESSION_TTL_HOURS/);
  });

  it("AUTH_SIGNING_KEY: an Ed25519 or P-256 PKCS#8 PEM, required with OIDC_ISSUER in production", () => {
    expect(loadApiConfig({ AUTH_SIGNING_KEY: ed25519 }).auth.signingKey?.trim()).toBe(ed25519.trim());
    expect(loadApiConfig({ AUTH_SIGNING_KEY: p256 }).auth.signingKey?.trim()).toBe(p256.trim());
    expect(failure({ AUTH_SIGNING_KEY: rsa })).toBe(
      "Invalid configuration: AUTH_SIGNING_KEY must be an Ed25519 or P-256 (prime256v1) private key",
    );
    // A PEM's armour around no key at all, built from parts (no key-shaped text in the repository).
    const dashes = "-".repeat(5);
    const notAKey = `${dashes}BEGIN PRIVATE KEY${dashes}\nnope\n${dashes}END PRIVATE KEY${dashes}`;
    expect(failure({ AUTH_SIGNING_KEY: notAKey })).toMatch(/AUTH_SIGNING_KEY is not a PKCS#8 PEM private key/);
    expect(failure({ ...production, ...oidc })).toBe(
      "Invalid configuration: AUTH_SIGNING_KEY must be set with NODE_ENV=production: every replica must sign access tokens with the same key",
    );
    // With the key, OIDC alone satisfies production's need for a token verifier.
    expect(failure({ ...production, ...oidc, AUTH_SIGNING_KEY: ed25519 })).toBeNull();
  });
});
