import { IdentityWorkflow, MembershipsLookupRepository, queryOf, SignInRepository } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, type TestDatabase } from "@fleet/db/testing";
import { AppError, ManualClock } from "@fleet/shared";
import { decodeJwt } from "jose";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { CookieJar, startTestIdp, type TestIdp, walkProvider } from "../../testing/test-idp.ts";
import { MembershipsService } from "../members/memberships.service.ts";
import type { MembershipResolver } from "./membership-resolver.ts";
import { OidcClient } from "./oidc-client.ts";
import { SessionCheck } from "./session-check.ts";
import { LOGIN_TTL_SECONDS, type SessionRequest, SignInService } from "./sign-in.service.ts";
import { generateSigningKeyPem, SystemTokens } from "./system-tokens.ts";

/**
 * The sign-in service on a real database with a real provider at its edge (docs/api.md "Sign-in"):
 * time rules on a ManualClock, each at its edge. HTTP (cookies, redirects, origins) is in sign-in.test.ts.
 */
const REDIRECT = "http://127.0.0.1:9/v1/auth/oidc/callback";
const TTL_HOURS = 2;
let db: TestDatabase;
let idp: TestIdp;
let clock: ManualClock;
let service: SignInService;
let people = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  idp = await startTestIdp({ redirectUris: [REDIRECT] });
  clock = new ManualClock(Date.now());
  const lookup = new MembershipsLookupRepository(queryOf(db));
  const roles = new MembershipsService({ db, clock });
  const memberships: MembershipResolver = {
    resolveMembership: async (userId, organizationId) => {
      const effective = await roles.effectiveRole(userId, organizationId);
      return effective && { role: effective.role, teamId: effective.teamId };
    },
  };
  const signIn = new SignInRepository(queryOf(db));
  service = new SignInService({
    oidc: new OidcClient(
      { issuer: new URL(idp.issuer), clientId: idp.clientId, clientSecret: idp.clientSecret, displayName: "IdP" },
      { allowHttp: true },
    ),
    signIn,
    identity: new IdentityWorkflow(db),
    lookup,
    memberships,
    tokens: new SystemTokens(generateSigningKeyPem()),
    sessions: new SessionCheck({ sessions: signIn, clock, memberships }),
    clock,
    sessionTtlHours: TTL_HOURS,
    redirectUri: () => REDIRECT,
    publicOrigin: "https://fleet.example",
    secureCookies: true,
    logger: pino({ level: "silent" }),
  });
});
afterAll(async () => {
  await idp?.close();
  await db?.close();
});

/** Start, the provider's pages, and the callback's query; `wait` ms pass at the provider. */
const throughProvider = async (wait = 0) => {
  const started = await service.start("/console/");
  const callback = await walkProvider(
    new CookieJar(),
    started.location,
    `service-${++people}-${crypto.randomUUID().slice(0, 6)}`,
    REDIRECT,
  );
  clock.advance(wait);
  return { query: new URL(callback).searchParams, binding: started.cookie.value };
};

const own = (session: string | undefined): SessionRequest => ({
  session,
  origin: undefined,
  requestOrigin: "http://127.0.0.1:9",
});

describe("the sign-in service", () => {
  it(`takes a sign-in back within ${LOGIN_TTL_SECONDS} s of its start, not at ${LOGIN_TTL_SECONDS} s`, async () => {
    const late = await throughProvider(LOGIN_TTL_SECONDS * 1000);
    const before = await databaseFingerprint(db);
    const refused = await rejection(service.callback(late.query, late.binding));
    expect(refused).toMatchObject({ code: "bad_request" });
    // The state was taken (it cannot be tried again); nothing else changed.
    expect(await db.query(`select count(*)::int as n from auth_sessions`)).toEqual([{ n: 0 }]);
    expect(before).not.toBe(await databaseFingerprint(db));
    const inTime = await throughProvider(LOGIN_TTL_SECONDS * 1000 - 1);
    const signedIn = await service.callback(inTime.query, inTime.binding);
    expect(signedIn).toMatchObject({ location: "/console/", cookie: { name: "fleet_session", path: "/" } });
  });

  it(`a session holds until ${TTL_HOURS} h after sign-in, and its tokens never outlive it`, async () => {
    const { query, binding } = await throughProvider();
    const { cookie } = await service.callback(query, binding);
    clock.advance(TTL_HOURS * 3_600_000 - 60_001);
    const last = await service.token(own(cookie.value), undefined);
    expect(last.expires_in).toBe(60);
    expect(decodeJwt(last.access_token).exp).toBe(Math.floor((clock.nowMs() + 60_001) / 1000));
    clock.advance(60_000);
    expect((await service.token(own(cookie.value), undefined)).expires_in).toBe(0);
    clock.advance(1);
    const before = await databaseFingerprint(db);
    expect(await rejection(service.token(own(cookie.value), undefined))).toMatchObject({ code: "unauthenticated" });
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("refuses another origin before anything else, and takes its own", async () => {
    const { query, binding } = await throughProvider();
    const { cookie } = await service.callback(query, binding);
    const foreign = { ...own(cookie.value), origin: "http://127.0.0.1:9" };
    expect(await rejection(service.token(foreign, undefined))).toMatchObject({ code: "forbidden" });
    expect(await rejection(service.logout(foreign))).toMatchObject({ code: "forbidden" });
    const token = await service.token({ ...own(cookie.value), origin: "https://fleet.example" }, undefined);
    expect(token.role).toBe("owner");
  });

  it("logout ends the session once; an unknown or missing cookie changes nothing", async () => {
    const { query, binding } = await throughProvider();
    const { cookie } = await service.callback(query, binding);
    const token = decodeJwt((await service.token(own(cookie.value), undefined)).access_token);
    expect(await service.logout(own(cookie.value))).toEqual({ name: "fleet_session", value: "", path: "/", maxAge: 0 });
    const ended = await db.query<{ ended: boolean }>(
      `select ended_at is not null as ended from auth_sessions where id = $1`,
      [token.sid],
    );
    expect(ended).toEqual([{ ended: true }]);
    const before = await databaseFingerprint(db);
    await service.logout(own(cookie.value));
    await service.logout(own("unknown"));
    await service.logout(own(undefined));
    expect(await databaseFingerprint(db)).toBe(before);
    expect(await rejection(service.token(own(cookie.value), undefined))).toBeInstanceOf(AppError);
  });
});
