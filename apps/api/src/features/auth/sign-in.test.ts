import { makeChildOrganization } from "@fleet/db/testing";
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, adminApiKey, startApiHarness } from "../../testing/api-harness.ts";
import {
  CookieJar,
  freeLoopbackPort,
  signInThroughProvider,
  startTestIdp,
  type TestIdp,
  walkProvider,
} from "../../testing/test-idp.ts";

/** Sign-in through a real OpenID Connect provider, over HTTP (docs/api.md "Sign-in"). */
let idp: TestIdp;
let h: ApiHarness;
let api: string;
let logins = 0;
const login = (name = "person") => `${name}-${++logins}-${crypto.randomUUID().slice(0, 6)}`;

beforeAll(async () => {
  const port = await freeLoopbackPort();
  api = `http://127.0.0.1:${port}`;
  idp = await startTestIdp({ redirectUris: [`${api}/v1/auth/oidc/callback`] });
  h = await startApiHarness({ ...idp.env(), PORT: String(port), API_PUBLIC_URL: api });
});
afterAll(async () => {
  await h?.close();
  await idp?.close();
});
afterEach(() => {
  idp.tamper = undefined;
  idp.foreignKey = false;
});

const tokenOf = async (jar: CookieJar, body: unknown = {}, headers: Record<string, string> = {}) => {
  const response = await jar.fetch(`${api}/v1/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
};

const signedIn = async (name = login(), returnTo?: string) => {
  const jar = new CookieJar();
  const callback = await signInThroughProvider(jar, api, name, returnTo === undefined ? {} : { returnTo });
  expect(callback.status).toBe(302);
  return { jar, callback, name };
};

/** A failed check: 400 in the /v1 shape, and no cookie at all. */
const expectRefusedCallback = async (response: Response) => {
  expect(response.status).toBe(400);
  expect(response.headers.getSetCookie()).toEqual([]);
  const body = (await response.json()) as { message: string };
  expect(body.message).toEqual(expect.any(String));
};

describe("the code flow through a real provider", () => {
  it("start redirects to the provider with code + PKCE S256, state, nonce and a browser-bound cookie", async () => {
    const start = await fetch(`${api}/v1/auth/oidc/start?return_to=/console/fleet`, { redirect: "manual" });
    expect(start.status).toBe(302);
    const location = new URL(start.headers.get("location") ?? "");
    expect(location.origin).toBe(idp.issuer);
    const q = location.searchParams;
    expect(q.get("response_type")).toBe("code");
    expect(q.get("client_id")).toBe(idp.clientId);
    expect(q.get("scope")).toBe("openid email profile");
    expect(q.get("redirect_uri")).toBe(`${api}/v1/auth/oidc/callback`);
    expect(q.get("code_challenge_method")).toBe("S256");
    expect(q.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get("state")?.length).toBeGreaterThanOrEqual(32);
    expect(q.get("nonce")?.length).toBeGreaterThanOrEqual(32);
    const [cookie] = start.headers.getSetCookie();
    expect(cookie).toMatch(
      /^fleet_oidc=[A-Za-z0-9_-]{43}; Path=\/v1\/auth\/oidc; Max-Age=600; HttpOnly; SameSite=Lax$/,
    );
  });

  it("signs in, sets the session cookie, and mints the system's own token", async () => {
    const { jar, callback, name } = await signedIn(login(), "/console/routers/abc?tab=faults");
    expect(callback.headers.get("location")).toBe("/console/routers/abc?tab=faults");
    const session = callback.headers.getSetCookie().find((c) => c.startsWith("fleet_session="));
    expect(session).toMatch(/^fleet_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Lax$/);
    expect(jar.cookies.has("fleet_oidc")).toBe(false);

    const token = await tokenOf(jar);
    expect(token.status).toBe(200);
    expect(token.headers.get("cache-control")).toBe("no-store");
    expect(token.body).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 900,
      organization_id: expect.any(String),
      role: "owner",
    });
    const header = decodeProtectedHeader(token.body.access_token);
    expect(header.alg).toBe("EdDSA");
    const jwks = createRemoteJWKSet(new URL(`${api}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(token.body.access_token, jwks, { algorithms: ["EdDSA"] });
    expect(payload).toMatchObject({
      id: token.body.organization_id,
      scope: "account:read account:write routers:read routers:write organizations:write",
      sid: expect.any(String),
    });
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(900);
    expect(payload.team).toBeUndefined();

    const me = await h.request("GET", "/v1/me", { token: token.body.access_token });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      user_id: payload.sub,
      email: `${name}@example.test`,
      organization_id: token.body.organization_id,
      role: "owner",
      organizations: [{ id: token.body.organization_id, name: `${name}'s organization`, role: "owner" }],
    });
    // The token works where dev-login tokens do.
    expect((await h.request("GET", "/v1/account", { token: token.body.access_token })).status).toBe(422);
  });

  it("links the first sign-in to the user of the same email, and knows the person by iss + sub after", async () => {
    const name = login("linked");
    const existing = await h.login(`${name.toUpperCase()}@example.test`);
    const first = await signedIn(name);
    const firstToken = await tokenOf(first.jar);
    expect(decodeJwt(firstToken.body.access_token).sub).toBe(existing.userId);
    expect(firstToken.body.organization_id).toBe(existing.organizationId);
    // The provider now gives another email: the person is still the same user.
    idp.accounts.set(name, { email: `renamed-${name}@example.test` });
    const second = await signedIn(name);
    expect(second.jar.cookies.get("fleet_session")).not.toBe(first.jar.cookies.get("fleet_session"));
    expect(decodeJwt((await tokenOf(second.jar)).body.access_token).sub).toBe(existing.userId);
  });

  it("carries the provider's zoneinfo as the timezone claim when it is a known zone", async () => {
    const known = login("zoned");
    idp.accounts.set(known, { zoneinfo: "Europe/Berlin" });
    expect(decodeJwt((await tokenOf((await signedIn(known)).jar)).body.access_token).timezone).toBe("Europe/Berlin");
    const unknown = login("unzoned");
    idp.accounts.set(unknown, { zoneinfo: "Mars/Olympus" });
    expect(decodeJwt((await tokenOf((await signedIn(unknown)).jar)).body.access_token).timezone).toBeUndefined();
  });
});

describe("attacks on the callback", () => {
  it("refuses a forged state", async () => {
    const jar = new CookieJar();
    await jar.fetch(`${api}/v1/auth/oidc/start`);
    await expectRefusedCallback(await jar.fetch(`${api}/v1/auth/oidc/callback?code=abc&state=forged-state-value`));
    await expectRefusedCallback(await jar.fetch(`${api}/v1/auth/oidc/callback?code=abc`));
  });

  it("refuses a replayed state and code", async () => {
    const jar = new CookieJar();
    const start = await jar.fetch(`${api}/v1/auth/oidc/start`);
    const callback = await walkProvider(
      jar,
      start.headers.get("location") ?? "",
      login(),
      `${api}/v1/auth/oidc/callback`,
    );
    expect((await jar.fetch(callback)).status).toBe(302);
    const sessions = await h.db.query(`select count(*)::int as n from auth_sessions`);
    await expectRefusedCallback(await jar.fetch(callback));
    // The same code with a fresh state of the same browser: the provider refuses the code again.
    const again = await jar.fetch(`${api}/v1/auth/oidc/start`);
    const state = new URL(again.headers.get("location") ?? "").searchParams.get("state") ?? "";
    const replay = new URL(callback);
    replay.searchParams.set("state", state);
    await expectRefusedCallback(await jar.fetch(replay.href));
    expect(await h.db.query(`select count(*)::int as n from auth_sessions`)).toEqual(sessions);
  });

  it("refuses the provider's own refusal (error=access_denied), and takes its state", async () => {
    const jar = new CookieJar();
    const start = await jar.fetch(`${api}/v1/auth/oidc/start`);
    const state = new URL(start.headers.get("location") ?? "").searchParams.get("state") ?? "";
    const denied = `${api}/v1/auth/oidc/callback?error=access_denied&state=${encodeURIComponent(state)}`;
    await expectRefusedCallback(await jar.fetch(denied));
    await expectRefusedCallback(await jar.fetch(denied));
  });

  it("refuses a callback in another browser than the one that started the sign-in", async () => {
    const jar = new CookieJar();
    const start = await jar.fetch(`${api}/v1/auth/oidc/start`);
    const callback = await walkProvider(
      jar,
      start.headers.get("location") ?? "",
      login(),
      `${api}/v1/auth/oidc/callback`,
    );
    await expectRefusedCallback(await new CookieJar().fetch(callback));
  });

  it("refuses an ID token with another nonce", async () => {
    const jar = new CookieJar();
    const response = await signInThroughProvider(jar, api, login(), {
      rewriteAuthorizationUrl: (url) => {
        url.searchParams.set("nonce", "a-nonce-the-api-never-made-0123456789");
        return url;
      },
    });
    await expectRefusedCallback(response);
  });

  it.each([
    ["another issuer", (c: Record<string, unknown>) => ({ ...c, iss: "http://127.0.0.1:1/evil" })],
    ["another audience", (c: Record<string, unknown>) => ({ ...c, aud: "another-client" })],
    ["an expired ID token", (c: Record<string, unknown>) => ({ ...c, exp: Math.floor(Date.now() / 1000) - 3600 })],
  ])("refuses %s", async (_case, tamper) => {
    idp.tamper = tamper;
    await expectRefusedCallback(await signInThroughProvider(new CookieJar(), api, login()));
  });

  it("refuses an ID token not signed by the provider's keys", async () => {
    idp.foreignKey = true;
    await expectRefusedCallback(await signInThroughProvider(new CookieJar(), api, login()));
  });

  it("refuses an email the provider does not vouch for", async () => {
    const name = login("unverified");
    idp.accounts.set(name, { emailVerified: false });
    await expectRefusedCallback(await signInThroughProvider(new CookieJar(), api, name));
    const users = await h.db.query(`select 1 from users where email = $1`, [`${name}@example.test`]);
    expect(users).toEqual([]);
  });

  it.each([
    "https://evil.example/console/",
    "//evil.example/console/",
    "/\\evil.example",
    "/%2F%2Fevil.example",
    "/console/..%2F..%2F%2Fevil.example",
    "http:/evil.example",
    "/consolex",
  ])("lands on /console/ instead of return_to %s", async (returnTo) => {
    const { callback } = await signedIn(login(), returnTo);
    expect(callback.headers.get("location")).toBe("/console/");
  });
});

describe("the token endpoint and the session", () => {
  it("refuses a token request from another origin (403), accepts its own", async () => {
    const { jar } = await signedIn();
    const foreign = await tokenOf(jar, {}, { origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect(foreign.body.message).toEqual(expect.any(String));
    expect((await tokenOf(jar, {}, { origin: api })).status).toBe(200);
    // A bare POST (no body, no content type), as curl sends it.
    expect((await jar.fetch(`${api}/v1/auth/token`, { method: "POST" })).status).toBe(200);
  });

  it("answers 401 without a session cookie or with an unknown one", async () => {
    expect((await tokenOf(new CookieJar())).status).toBe(401);
    const jar = new CookieJar();
    jar.cookies.set("fleet_session", "x".repeat(43));
    expect((await tokenOf(jar)).status).toBe(401);
  });

  it("acts in a chosen organization below (which becomes current), and 404 outside the user's reach", async () => {
    const { jar } = await signedIn();
    const top = (await tokenOf(jar)).body.organization_id as string;
    const child = await makeChildOrganization(h.db, top);
    const chosen = await tokenOf(jar, { organization_id: child.organizationId });
    expect(chosen.status).toBe(200);
    expect(chosen.body).toMatchObject({ organization_id: child.organizationId, role: "owner" });
    expect(decodeJwt(chosen.body.access_token).id).toBe(child.organizationId);
    expect((await tokenOf(jar)).body.organization_id).toBe(child.organizationId);

    const stranger = await h.login();
    expect((await tokenOf(jar, { organization_id: stranger.organizationId })).status).toBe(404);
    expect((await tokenOf(jar, { organization_id: "not-an-id" })).status).toBe(404);
    expect((await tokenOf(jar, { organization_id: crypto.randomUUID() })).status).toBe(404);
    // A refused choice changed nothing: the current organization is still the child.
    expect((await tokenOf(jar)).body.organization_id).toBe(child.organizationId);
  });

  it("logout ends the session: the cookie and every token minted from it answer 401", async () => {
    const { jar } = await signedIn();
    const stale = jar.header();
    const { access_token: accessToken } = (await tokenOf(jar)).body;
    expect((await h.request("GET", "/v1/me", { token: accessToken })).status).toBe(200);
    const out = await jar.fetch(`${api}/v1/auth/logout`, { method: "POST" });
    expect(out.status).toBe(200);
    expect(out.headers.getSetCookie()).toEqual(["fleet_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"]);
    expect((await h.request("GET", "/v1/me", { token: accessToken })).status).toBe(401);
    const replay = await fetch(`${api}/v1/auth/token`, { method: "POST", headers: { cookie: stale } });
    expect(replay.status).toBe(401);
  });

  it("a session ended by another API process stops its tokens here within 10 s (this process's cache warm)", async () => {
    const { jar } = await signedIn();
    const { access_token: accessToken } = (await tokenOf(jar)).body;
    expect((await h.request("GET", "/v1/me", { token: accessToken })).status).toBe(200);
    const sid = decodeJwt(accessToken).sid;
    await h.db.query(`update auth_sessions set ended_at = now() where id = $1`, [sid]);
    try {
      // The cache trusts a live session for 5 s: on the API's clock, 6 s later it asks again.
      h.clock.offsetMs = 6_000;
      expect((await h.request("GET", "/v1/me", { token: accessToken })).status).toBe(401);
    } finally {
      h.clock.offsetMs = 0;
    }
  });

  it("a demoted member's tokens lose what the role lost, a removed one's stop, within 10 s, below too", async () => {
    const { jar } = await signedIn();
    const top = (await tokenOf(jar)).body;
    const child = await makeChildOrganization(h.db, top.organization_id);
    const below = (await tokenOf(jar, { organization_id: child.organizationId })).body.access_token as string;
    expect((await h.request("GET", "/v1/me", { token: below })).status).toBe(200);
    expect((await h.request("GET", "/v1/account", { token: top.access_token })).status).not.toBe(403);
    const userId = decodeJwt(below).sub;
    // Demoted at the top to a viewer: the owner's other scopes no longer hold; reading routers does.
    await h.db.query(`update organization_members set role = 'viewer' where user_id = $1`, [userId]);
    try {
      h.clock.offsetMs = 6_000;
      for (const token of [below, top.access_token as string]) {
        expect((await h.request("GET", "/v1/me", { token })).status).toBe(200);
        expect((await h.request("GET", "/api/routers", { token })).status).toBe(200);
        expect((await h.request("GET", "/v1/account", { token })).status).toBe(403);
        expect((await h.request("POST", "/v1/organizations", { token, body: { name: "x" } })).status).toBe(403);
      }
      // A new token carries what the role holds now.
      const viewer = await tokenOf(jar);
      expect(viewer.body.role).toBe("viewer");
      expect(decodeJwt(viewer.body.access_token).scope).toBe("routers:read");
      expect((await h.request("GET", "/v1/me", { token: viewer.body.access_token })).status).toBe(200);
      // Removed: nothing holds, and no token is minted.
      await h.db.query(`delete from organization_members where user_id = $1`, [userId]);
      h.clock.offsetMs = 12_000;
      expect((await h.request("GET", "/v1/me", { token: viewer.body.access_token })).status).toBe(401);
      expect((await tokenOf(jar)).status).toBe(404);
    } finally {
      h.clock.offsetMs = 0;
    }
  });

  it("logout ends the streams opened with the session's tokens within 10 s", async () => {
    const { jar } = await signedIn();
    const { access_token: accessToken } = (await tokenOf(jar)).body;
    const abort = new AbortController();
    const stream = await fetch(`${api}/trpc/routers.onStatus`, {
      headers: { accept: "text/event-stream", authorization: `Bearer ${accessToken}` },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    let text = "";
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    const ended = (async () => {
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) return Date.now();
        text += new TextDecoder().decode(value);
      }
    })();
    try {
      const loggedOutAt = Date.now();
      expect((await jar.fetch(`${api}/v1/auth/logout`, { method: "POST" })).status).toBe(200);
      const endedAt = await ended;
      expect(endedAt - loggedOutAt).toBeLessThan(10_000);
      expect(text).toMatch(/event: serialized-error/);
      expect(text).toMatch(/"code":"UNAUTHORIZED"/);
    } finally {
      abort.abort();
    }
  }, 30_000);

  it("a session ends SESSION_TTL_HOURS after sign-in, and its tokens never outlive it", async () => {
    const { jar } = await signedIn();
    try {
      h.clock.offsetMs = 12 * 3_600_000 - 60_000;
      const last = await tokenOf(jar);
      expect(last.status).toBe(200);
      expect(last.body.expires_in).toBeLessThanOrEqual(60);
      h.clock.offsetMs = 12 * 3_600_000 + 1_000;
      expect((await tokenOf(jar)).status).toBe(401);
      expect((await h.request("GET", "/v1/me", { token: last.body.access_token })).status).toBe(401);
    } finally {
      h.clock.offsetMs = 0;
    }
  });

  it("GET /v1/me answers any valid credential: a dev-login token, an admin key naming no user", async () => {
    const dev = await h.login();
    const me = await h.request("GET", "/v1/me", { token: dev.token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ user_id: dev.userId, organization_id: dev.organizationId, role: "owner" });
    const key = await adminApiKey(h.db, dev.organizationId, ["routers:read"]);
    const byKey = await h.request("GET", "/v1/me", { token: key });
    expect(byKey.status).toBe(200);
    expect(byKey.body).toEqual({
      user_id: "admin-cli",
      email: null,
      organization_id: dev.organizationId,
      role: null,
      organizations: [],
    });
    expect((await h.request("GET", "/v1/me")).status).toBe(401);
  });

  it("serves the public keys as a JWK Set", async () => {
    const res = await h.request("GET", "/.well-known/jwks.json");
    expect(res.status).toBe(200);
    expect(res.body.keys).toEqual([expect.objectContaining({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" })]);
    expect(res.body.keys[0].d).toBeUndefined();
  });
});
