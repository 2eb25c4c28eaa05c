import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createSecretKey, generateKeyPairSync } from "node:crypto";
import { databaseFingerprint } from "@fleet/db/testing";
import { exportJWK, SignJWT } from "jose";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

const HOOK_SECRET = "hook-secret-0123456789-0123456789-abcdef";
/** The main harness's log lines from its start (it runs with AUTH_DEV_LOGIN=true beside JWT_SECRET). */
const mainLog: string[] = [];
let h: ApiHarness;
let secret: string;
beforeAll(async () => {
  h = await startApiHarness(
    { AUTH_LOGIN_HOOK_SECRET: HOOK_SECRET },
    { logger: pino({ level: "info" }, { write: (line: string) => mainLog.push(line) }) },
  );
  secret = h.config.auth.jwtSecret ?? "";
});
afterAll(async () => {
  await h?.close();
});

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");

const sign = (
  claims: Record<string, unknown>,
  options: { key?: string; exp?: string | number; alg?: "HS256" | "HS512" } = {},
) => {
  let jwt = new SignJWT(claims).setProtectedHeader({ alg: options.alg ?? "HS256" });
  if (options.exp !== undefined) jwt = jwt.setExpirationTime(options.exp);
  return jwt.sign(createSecretKey(Buffer.from(options.key ?? secret)));
};

describe("access tokens", () => {
  it.each([
    ["missing header", undefined],
    ["not a bearer header", "Basic abc"],
    ["garbage token", "Bearer not.a.jwt"],
  ])("%s: 401 on /v1 and /api shapes", async (_case, authorization) => {
    const headers: Record<string, string> = authorization ? { authorization } : {};
    const v1 = await h.request("GET", "/v1/account", { headers });
    expect(v1.status).toBe(401);
    expect(v1.body.message).toEqual(expect.any(String));
  });

  it("refuses an expired token", async () => {
    const { userId, organizationId } = await h.login();
    const token = await sign(
      { sub: userId, id: organizationId, scope: "account:read" },
      { exp: Math.floor(Date.now() / 1000) - 5 },
    );
    const res = await h.request("GET", "/v1/account", { token });
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/expired/);
  });

  it("expires a cached token when its time passes", async () => {
    const { token } = await h.login();
    expect((await h.request("GET", "/v1/account", { token })).status).toBe(422);
    h.clock.offsetMs = 3601_000;
    try {
      const res = await h.request("GET", "/v1/account", { token });
      expect(res.status).toBe(401);
    } finally {
      h.clock.offsetMs = 0;
    }
  });

  it("refuses a token without exp, without sub, or without id", async () => {
    const { userId, organizationId } = await h.login();
    const noExp = await sign({ sub: userId, id: organizationId, scope: "account:read" });
    const noSub = await sign({ id: organizationId, scope: "account:read" }, { exp: "5m" });
    const noId = await sign({ sub: userId, scope: "account:read" }, { exp: "5m" });
    for (const token of [noExp, noSub, noId]) {
      expect((await h.request("GET", "/v1/account", { token })).status).toBe(401);
    }
  });

  it("refuses alg none, a wrong key, and an unpinned algorithm", async () => {
    const { userId, organizationId } = await h.login();
    const claims = { sub: userId, id: organizationId, scope: "account:read", exp: Math.floor(Date.now() / 1000) + 600 };
    const unsigned = `${b64({ alg: "none", typ: "JWT" })}.${b64(claims)}.`;
    const wrongKey = await sign(claims, { key: "another-secret-that-is-long-enough-000" });
    const hs512 = await sign(claims, { alg: "HS512" });
    for (const token of [unsigned, wrongKey, hs512]) {
      const res = await h.request("GET", "/v1/account", { token });
      expect(res.status).toBe(401);
    }
  });

  it("answers 403 for a valid token without the scope, before validating the body", async () => {
    const { token: readOnly } = await h.login(undefined, { scope: "account:read" });
    const before = await databaseFingerprint(h.db);
    const res = await h.request("POST", "/v1/account", { token: readOnly, body: { name: 42 } });
    expect(res.status).toBe(403);
    expect(res.body.message).toMatch(/account:write/);
    expect(await databaseFingerprint(h.db)).toBe(before);
    const { token: writeOnly } = await h.login(undefined, { scope: "account:write" });
    expect((await h.request("GET", "/v1/account", { token: writeOnly })).status).toBe(403);
  });

  // Provisioning and mapping of organization claims: auth.service.test.ts "OrganizationResolver".
  it("accepts a trusted token naming an organization not seen before (UUID or external id)", async () => {
    const scope = "account:read account:write routers:read";
    const byUuid = await sign({ sub: "user-1", id: crypto.randomUUID(), scope }, { exp: "5m" });
    const res = await h.request("GET", "/v1/account", { token: byUuid });
    expect(res.status).toBe(422);
    expect(res.body.message).toMatch(/Create one first/);
    const external = await sign({ sub: "idp|42", id: `org_${crypto.randomUUID().slice(0, 8)}`, scope }, { exp: "5m" });
    const routers = await h.request("GET", "/api/routers", { token: external });
    expect(routers.status).toBe(200);
    expect(routers.body).toEqual({ status: "success", data: [] });
  });

  it("refuses an organization claim longer than 255 characters with 401, writing nothing", async () => {
    const before = await databaseFingerprint(h.db);
    const token = await sign({ sub: "u", id: "x".repeat(256), scope: "account:read" }, { exp: "5m" });
    expect((await h.request("GET", "/v1/account", { token })).status).toBe(401);
    expect(await databaseFingerprint(h.db)).toBe(before);
  });
});

describe("dev login (the authentication workflow)", () => {
  // Its rules (a stable user, the owner role, the token's claims): auth.service.test.ts.
  it("answers 200 with the login body, whose token the API accepts", async () => {
    const first = await h.request("POST", "/v1/auth/dev-login", {
      body: { email: `Flow-${crypto.randomUUID()}@Example.com` },
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(Object.keys(first.body).sort()).toEqual(
      ["access_token", "expires_in", "organization_id", "team_id", "token_type", "user_id"].sort(),
    );
    for (const key of ["access_token", "user_id", "organization_id", "team_id"])
      expect(first.body[key]).toEqual(expect.any(String));
    expect((await h.request("GET", "/api/routers", { token: first.body.access_token })).status).toBe(200);
  });

  it("signs in to another organization the user acts in (it becomes current); any other is 404", async () => {
    const email = `switch-${crypto.randomUUID()}@example.com`;
    const home = await h.request("POST", "/v1/auth/dev-login", { body: { email } });
    const token = home.body.access_token as string;
    const child = await h.request("POST", "/v1/organizations", { token, body: { name: "Customer" } });
    expect(child.status).toBe(201);
    const into = await h.request("POST", "/v1/auth/dev-login", {
      body: { email, organization_id: child.body.id.toUpperCase() },
    });
    expect(into.status).toBe(200);
    expect(into.body.organization_id).toBe(child.body.id);
    const me = await h.request("GET", "/v1/me", { token: into.body.access_token });
    expect([me.body.organization_id, me.body.role]).toEqual([child.body.id, "owner"]);
    // It is the current one now: a plain dev-login comes back to it.
    const again = await h.request("POST", "/v1/auth/dev-login", { body: { email } });
    expect(again.body.organization_id).toBe(child.body.id);
    const stranger = await h.request("POST", "/v1/auth/dev-login", { body: { email: `other-${email}` } });
    for (const organization_id of [stranger.body.organization_id, crypto.randomUUID(), "not-an-id", "x".repeat(100)]) {
      const refused = await h.request("POST", "/v1/auth/dev-login", { body: { email, organization_id } });
      expect([organization_id, refused.status]).toEqual([organization_id, 404]);
    }
    const long = await h.request("POST", "/v1/auth/dev-login", { body: { email, organization_id: "x".repeat(101) } });
    expect([long.status, Object.keys(long.body.errors ?? {})]).toEqual([422, ["organization_id"]]);
    expect((await h.request("POST", "/v1/auth/dev-login", { body: { email } })).body.organization_id).toBe(
      child.body.id,
    );
  });

  it("validates its input", async () => {
    const before = await databaseFingerprint(h.db);
    expect((await h.request("POST", "/v1/auth/dev-login", { body: { email: "nope" } })).status).toBe(422);
    expect(
      (await h.request("POST", "/v1/auth/dev-login", { body: { email: "a@b.co", scope: "admin:all" } })).status,
    ).toBe(422);
    expect(
      (await h.request("POST", "/v1/auth/dev-login", { body: { email: "a@b.co", timezone: "Mars/Base" } })).status,
    ).toBe(422);
    expect(await databaseFingerprint(h.db)).toBe(before);
  });
});

describe("dev-login default", () => {
  /** The API's log lines while a harness with `env` starts, runs `meanwhile` and stops. */
  const startupLog = async (
    env: Record<string, string>,
    meanwhile: (api: ApiHarness) => Promise<void> = async () => {},
  ): Promise<Array<{ level: number; msg: string }>> => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const api = await startApiHarness(env, { logger });
    try {
      await meanwhile(api);
    } finally {
      await api.close();
    }
    return lines.map((line) => JSON.parse(line));
  };

  it("an explicit AUTH_DEV_LOGIN=true beside JWT_SECRET turns it on with a warning in the log", () => {
    expect(h.config.auth.jwtSecret).toEqual(expect.any(String));
    expect(mainLog.map((line) => JSON.parse(line))).toContainEqual(
      expect.objectContaining({ level: 40, msg: expect.stringMatching(/AUTH_DEV_LOGIN=true/) }),
    );
  });

  it("off: POST /v1/auth/dev-login is 404 (and so is the login hook without its secret), no warning is logged", async () => {
    const log = await startupLog({ AUTH_DEV_LOGIN: "false" }, async (off) => {
      const res = await off.request("POST", "/v1/auth/dev-login", { body: { email: "a@b.co" } });
      expect(res.status).toBe(404);
      expect((await off.request("POST", "/v1/auth/login-hook", { body: { email: "a@b.co" } })).status).toBe(404);
    });
    expect(log.filter((line) => /AUTH_DEV_LOGIN/.test(line.msg))).toEqual([]);
  });
});

describe("login hook", () => {
  it("requires the shared secret in the authorization header and returns the claim ids", async () => {
    const email = `idp-${crypto.randomUUID()}@example.com`;
    const denied = await h.request("POST", "/v1/auth/login-hook", {
      body: { email },
      headers: { authorization: "Bearer wrong" },
    });
    expect(denied.status).toBe(401);
    const ok = await h.request("POST", "/v1/auth/login-hook", {
      body: { email },
      headers: { authorization: `Bearer ${HOOK_SECRET}` },
    });
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.body).sort()).toEqual(["organization_id", "team_id", "user_id"]);
  });
});

describe("JWKS mode", () => {
  let jwks: Server;
  let jwksUrl: string;
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  beforeAll(async () => {
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256", use: "sig" };
    jwks = createServer((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, "127.0.0.1", resolve));
    jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
  });
  afterAll(() => new Promise<void>((resolve) => jwks.close(() => resolve())));

  it("verifies ES256 tokens by JWKS, checks issuer and audience, and refuses HS256", async () => {
    const api = await startApiHarness({
      JWT_JWKS_URL: jwksUrl,
      JWT_ISSUER: "https://idp.example",
      JWT_AUDIENCE: "fleet",
      AUTH_DEV_LOGIN: "false",
    });
    try {
      const { organizationId, userId } = await (await import("@fleet/db/testing")).makeUser(api.db);
      const good = await new SignJWT({ id: organizationId, scope: "account:read" })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setSubject(userId)
        .setIssuer("https://idp.example")
        .setAudience("fleet")
        .setExpirationTime("5m")
        .sign(privateKey);
      expect((await api.request("GET", "/v1/account", { token: good })).status).toBe(422);
      const wrongAudience = await new SignJWT({ id: organizationId, scope: "account:read" })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setSubject(userId)
        .setIssuer("https://idp.example")
        .setAudience("other")
        .setExpirationTime("5m")
        .sign(privateKey);
      expect((await api.request("GET", "/v1/account", { token: wrongAudience })).status).toBe(401);
      const hs = await sign(
        { sub: userId, id: organizationId, scope: "account:read", iss: "https://idp.example", aud: "fleet" },
        { exp: "5m" },
      );
      expect((await api.request("GET", "/v1/account", { token: hs })).status).toBe(401);
    } finally {
      await api.close();
    }
  });
});
