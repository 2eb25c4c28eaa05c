import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJwt, exportJWK, type JWK, type JWTPayload, SignJWT } from "jose";
import Provider from "oidc-provider";

/** What the provider says about one login (the dev login form's "login" field). */
export interface TestIdpAccount {
  email?: string;
  emailVerified?: boolean;
  zoneinfo?: string;
}

export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Accounts by login; a login not here is `<login>@example.test`, verified. */
  accounts: Map<string, TestIdpAccount>;
  /**
   * Rewrites the claims of the next ID tokens the token endpoint sends, re-signed with the
   * provider's own key (or, with `foreignKey`, another one): a provider that lies.
   */
  tamper: ((claims: JWTPayload) => JWTPayload) | undefined;
  foreignKey: boolean;
  /** The environment that points the API at this provider. */
  env(): Record<string, string>;
  close(): Promise<void>;
}

const listenOnLoopback = async (server: Server, port = 0): Promise<number> => {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return (server.address() as AddressInfo).port;
};

/** A free TCP port on loopback (the API's, so its redirect URI is known before it starts). */
export const freeLoopbackPort = async (): Promise<number> => {
  const probe = createServer();
  const port = await listenOnLoopback(probe);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
};

/**
 * A real OpenID Connect provider (`oidc-provider`, panva's certified implementation) on loopback,
 * with its development login pages (any login and password sign in) and one confidential client
 * registered with `redirectUris` (docs/api.md "Sign-in").
 */
export const startTestIdp = async (options: { redirectUris: string[]; port?: number }): Promise<TestIdp> => {
  const server = createServer();
  const port = await listenOnLoopback(server, options.port ?? 0);
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const signingJwk: JWK = { ...(await exportJWK(privateKey)), kid: "test-idp", alg: "RS256", use: "sig" };
  const foreign = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
  const accounts = new Map<string, TestIdpAccount>();
  const clientId = "fleet";
  const clientSecret = randomBytes(24).toString("base64url");

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    jwks: { keys: [signingJwk] },
    cookies: { keys: [randomBytes(32).toString("base64url")] },
    features: { devInteractions: { enabled: true } },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600 },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name", "zoneinfo"] },
    // Claims in the ID token itself, as Keycloak and Google send them.
    conformIdTokenClaims: false,
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => {
        const account = accounts.get(sub) ?? {};
        return {
          sub,
          email: account.email ?? `${sub}@example.test`,
          email_verified: account.emailVerified ?? true,
          ...(account.zoneinfo ? { zoneinfo: account.zoneinfo } : {}),
        };
      },
    }),
  });

  const idp: TestIdp = {
    issuer,
    clientId,
    clientSecret,
    accounts,
    tamper: undefined,
    foreignKey: false,
    env: () => ({ OIDC_ISSUER: issuer, OIDC_CLIENT_ID: clientId, OIDC_CLIENT_SECRET: clientSecret }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  // The token endpoint's answer, rewritten when a test asks for a lying provider.
  provider.use(async (ctx, next) => {
    await next();
    const body = ctx.body as { id_token?: unknown } | undefined;
    if (ctx.path !== "/token" || typeof body?.id_token !== "string") return;
    if (!idp.tamper && !idp.foreignKey) return;
    const claims = idp.tamper ? idp.tamper(decodeJwt(body.id_token)) : decodeJwt(body.id_token);
    const idToken = await new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: "test-idp", typ: "JWT" })
      .sign(idp.foreignKey ? foreign : privateKey);
    ctx.body = { ...body, id_token: idToken };
  });
  server.on("request", provider.callback());
  return idp;
};

/** Cookies of one browser: every cookie goes to every host (the provider and the API are both loopback). */
export class CookieJar {
  readonly cookies = new Map<string, string>();

  store(headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair = "", ...attributes] = line.split(";");
      const eq = pair.indexOf("=");
      if (eq < 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const cleared = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === "";
      if (cleared) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set("cookie", this.header());
    const response = await fetch(url, { ...init, headers, redirect: "manual" });
    this.store(response.headers);
    return response;
  }
}

const formOf = (html: string, base: string): { action: string; fields: Record<string, string> } => {
  const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!form?.[1]) throw new Error(`no form on the provider's page: ${html.slice(0, 300)}`);
  const fields: Record<string, string> = {};
  for (const input of (form[2] ?? "").matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
    const name = /name="([^"]+)"/.exec(input[0])?.[1];
    const value = /value="([^"]*)"/.exec(input[0])?.[1] ?? "";
    if (name) fields[name] = value;
  }
  return { action: new URL(form[1].replaceAll("&amp;", "&"), base).href, fields };
};

/**
 * Walks a browser through the provider from its authorization URL: follows redirects, fills the
 * development login form with `login`, confirms the consent form, and stops at the first redirect
 * to `stopAt` (the API's callback), which it answers without visiting.
 */
export const walkProvider = async (
  jar: CookieJar,
  authorizationUrl: string,
  login: string,
  stopAt: string,
): Promise<string> => {
  let url = authorizationUrl;
  let init: RequestInit = {};
  for (let step = 0; step < 20; step++) {
    const response = await jar.fetch(url, init);
    init = {};
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      const next = new URL(location, url).href;
      if (next.startsWith(stopAt)) return next;
      url = next;
      continue;
    }
    const html = await response.text();
    if (response.status !== 200) throw new Error(`provider answered ${response.status}: ${html.slice(0, 300)}`);
    const { action, fields } = formOf(html, url);
    const body = new URLSearchParams(fields);
    if (fields.prompt === "login") {
      body.set("login", login);
      body.set("password", "any");
    }
    url = action;
    init = { method: "POST", body, headers: { "content-type": "application/x-www-form-urlencoded" } };
  }
  throw new Error("the provider never redirected to the callback");
};

/**
 * A whole sign-in through the API and the provider: `start` (with `returnTo`), the provider's
 * pages, and the callback. Answers the callback's response; the jar then holds `fleet_session`.
 */
export const signInThroughProvider = async (
  jar: CookieJar,
  apiUrl: string,
  login: string,
  options: { returnTo?: string; rewriteAuthorizationUrl?: (url: URL) => URL } = {},
): Promise<Response> => {
  const query = options.returnTo === undefined ? "" : `?return_to=${encodeURIComponent(options.returnTo)}`;
  const start = await jar.fetch(`${apiUrl}/v1/auth/oidc/start${query}`);
  const location = start.headers.get("location");
  if (start.status !== 302 || !location) throw new Error(`start answered ${start.status}: ${await start.text()}`);
  const authorizationUrl = options.rewriteAuthorizationUrl
    ? options.rewriteAuthorizationUrl(new URL(location)).href
    : location;
  const callback = await walkProvider(jar, authorizationUrl, login, `${apiUrl}/v1/auth/oidc/callback`);
  return jar.fetch(callback);
};
