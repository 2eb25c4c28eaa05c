import { makeRouter } from "@fleet/db/testing";
import type Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";
import { emulatorSdk, loginWithAccount, testCard } from "../testing/billing-fixtures.ts";
import { openApiChecker } from "../testing/openapi-checker.ts";

/**
 * docs/api.md "Errors": /openapi.json documents every status an operation answers, with the body
 * really sent. This walks real traffic through every operation (successes and the errors that can
 * be provoked from outside) and validates each answer against the served document.
 */
const HOOK_SECRET = "login-hook-secret-of-at-least-32-bytes!!";
const RATE_LIMIT = 60;
let h: ApiHarness;
let checker: ReturnType<typeof openApiChecker>;
const problems: string[] = [];

beforeAll(async () => {
  h = await startApiHarness({ AUTH_LOGIN_HOOK_SECRET: HOOK_SECRET, RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT) });
  const doc = await h.request("GET", "/openapi.json");
  checker = openApiChecker(doc.body);
});
afterAll(async () => {
  await h?.close();
});

type Options = Parameters<ApiHarness["request"]>[2];
/** One request, its answer checked against the document. */
const call = async (method: string, path: string, options: Options = {}) => {
  const res = await h.request(method, path, options);
  problems.push(...checker.check(method, path, res.status, res.body));
  return res;
};

const UNKNOWN = "00000000-0000-4000-8000-000000000000";
const READ_ONLY = "account:read routers:read";

describe("the OpenAPI document tells the truth", () => {
  // About 200 requests in a row: on a loaded machine the default 30 s is too short.
  it("every answer of a walk through every operation validates against /openapi.json", {
    timeout: 120_000,
  }, async () => {
    const owner = await loginWithAccount(h);
    const reader = await h.login(undefined, { scope: READ_ONLY });
    const bare = await h.login();
    const t = owner.token;

    // auth
    await call("POST", "/v1/auth/dev-login", { body: { email: "truth@example.com" } });
    await call("POST", "/v1/auth/dev-login", { body: { email: "not-an-email" } });
    await call("POST", "/v1/auth/dev-login", { body: { email: "a@example.com", scope: "nope" } });
    await call("GET", "/v1/auth/dev-login");
    const hookAuth = { authorization: `Bearer ${HOOK_SECRET}` };
    await call("POST", "/v1/auth/login-hook", { headers: hookAuth, body: { email: "hook@example.com" } });
    await call("POST", "/v1/auth/login-hook", { headers: hookAuth, body: { email: 42 } });
    await call("POST", "/v1/auth/login-hook", { body: { email: 42 } });
    // sign-in sessions (the whole flow through a provider: features/auth/sign-in.test.ts)
    await call("POST", "/v1/auth/token", { body: {} });
    await call("POST", "/v1/auth/token", { body: {}, headers: { origin: "https://evil.example" } });
    await call("POST", "/v1/auth/token", { body: { organization_id: 42 } });
    await call("POST", "/v1/auth/logout", { body: {} });
    await call("GET", "/v1/auth/oidc/start?return_to=/console/");
    await call("GET", "/v1/auth/oidc/callback?code=x&state=y");
    await call("GET", "/v1/me", { token: t });
    await call("GET", "/v1/me");

    // account: no account, create, conflict, read, update, aliases, refused and unlisted methods
    await call("GET", "/v1/account", { token: bare.token });
    await call("PATCH", "/v1/account", { token: bare.token, body: { name: "X" } });
    await call("POST", "/v1/account", { token: bare.token, body: { name: "", email: "x", address: {} } });
    await call("POST", "/v1/account", {
      token: bare.token,
      body: { name: "B", email: "b@example.com", address: { country: "NL" } },
    });
    await call("POST", "/v1/account", {
      token: bare.token,
      body: { name: "B", email: "b@example.com", address: { country: "NL" } },
    });
    await call("GET", "/v1/account", { token: t });
    await call("GET", "/v1/account");
    await call("GET", "/v1/account", { token: "forged" });
    await call("PATCH", "/v1/account", { token: reader.token, body: { name: "Read Only" } });
    await call("PATCH", "/v1/account", { token: t, body: { name: "Truth Co", address: { city: "Delft" } } });
    await call("PUT", "/v1/account", { token: t, body: { name: "Truth Co" } });
    await call("PUT", "/v1/account", { token: t, body: { address: { country: "XX" } } });
    await call("DELETE", "/v1/account", { token: t });
    await call("OPTIONS", "/v1/account", { token: t });
    await call("POST", "/v1/account", { token: t, rawBody: "{", headers: { "content-type": "application/json" } });
    await call("POST", "/v1/account", {
      token: t,
      rawBody: "a=b",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    await call("PATCH", "/v1/account", {
      token: t,
      rawBody: `{"name":"${"x".repeat(110 * 1024)}"}`,
      headers: { "content-type": "application/json" },
    });

    // payment methods and invoices
    const browser = emulatorSdk(h, h.api.publishableKey);
    const intent = await call("POST", "/v1/account/setup-intent", { token: t });
    await call("POST", "/v1/account/setup-intent", { token: bare.token });
    const pm = await browser.paymentMethods.create({ type: "card", card: testCard("4242424242424242") });
    await browser.setupIntents.confirm(intent.body.id, {
      payment_method: pm.id,
      client_secret: intent.body.client_secret,
    } as Stripe.SetupIntentConfirmParams);
    await call("POST", "/v1/account/tax", { token: t, body: { id: pm.id } });
    await call("POST", "/v1/account/tax", { token: t, body: { id: "not a pm" } });
    const second = await browser.paymentMethods.create({ type: "card", card: testCard("5555555555554444") });
    await call("POST", "/v1/account/payment-methods", { token: t, body: { id: second.id } });
    const declined = await browser.paymentMethods.create({ type: "card", card: testCard("4000000000000002") });
    await call("POST", "/v1/account/payment-methods", { token: t, body: { id: declined.id } });
    await call("GET", "/v1/account/payment-methods", { token: t });
    await call("GET", "/v1/account/payment-methods", { token: bare.token });
    await call("DELETE", `/v1/account/payment-methods/pm_unknown`, { token: t });
    await call("DELETE", `/v1/account/payment-methods/${second.id}`, { token: t });
    await call("DELETE", `/v1/account/payment-methods/${pm.id}`, { token: t });
    await call("PATCH", `/v1/account/payment-methods/${pm.id}`, { token: t });
    await call("GET", "/v1/account/invoices", { token: t });
    await call("GET", "/v1/account/invoices", { token: reader.token });

    // routers
    const nobody = await h.login();
    await call("POST", "/api/routers", { token: nobody.token, body: { name: "No Account" } });
    const enrolled = await call("POST", "/api/routers", { token: t, body: { name: "Truth" } });
    await call("POST", "/api/routers", { token: t, body: { name: 5 } });
    await call("POST", "/api/routers", { token: reader.token, body: {} });
    await call("POST", "/api/routers", { token: t, rawBody: "x", headers: { "content-type": "text/plain" } });
    await call("GET", "/api/routers", { token: t });
    await call("GET", "/api/routers?limit=1&q=truth&sort=last_seen&status=offline", { token: t });
    await call("GET", "/api/routers?limit=0", { token: t });
    await call("GET", "/api/routers");
    await call("PUT", "/api/routers", { token: t, body: {} });
    const id = enrolled.body.data.router.id as string;
    for (const suffix of ["", "/metadata", "/oem", "/metrics", "/faults", "/transient-forwarding"]) {
      await call("GET", `/api/routers/${id}${suffix}`, { token: t });
      await call("GET", `/api/routers/${UNKNOWN}${suffix}`, { token: t });
      await call("GET", `/api/routers/${id}${suffix}`);
    }
    await call("PATCH", `/api/routers/${id}/metadata`, { token: t, body: { name: "Renamed", rack: { row: 4 } } });
    await call("PATCH", `/api/routers/${id}/metadata`, { token: t, body: { lat: 200, model: "x" } });
    await call("PATCH", `/api/routers/${UNKNOWN}/metadata`, { token: t, body: { name: "x" } });
    await call("DELETE", `/api/routers/${id}/metadata`, { token: t });

    // forwards
    const withTunnel = await makeRouter(h.db, owner, { tunnelIp: "100.64.0.71" });
    const noTunnel = await makeRouter(h.db, owner, { tunnelIp: null });
    const forwardBody = {
      expire_after_minutes: 60,
      dst_port: 22,
      dst_address: "192.168.88.10",
      allow_from: "8.8.8.8",
    };
    const base = `/api/routers/${withTunnel.id}/transient-forwarding`;
    const created = await call("POST", base, { token: t, body: forwardBody });
    await call("POST", base, { token: t, body: { ...forwardBody, dst_port: 0 } });
    await call("POST", `/api/routers/${noTunnel.id}/transient-forwarding`, { token: t, body: forwardBody });
    await call("POST", `/api/routers/${UNKNOWN}/transient-forwarding`, { token: t, body: forwardBody });
    await call("GET", base, { token: t });
    await call("GET", `${base}/${created.body.id}`, { token: t });
    await call("GET", `${base}/${UNKNOWN}`, { token: t });
    await call("DELETE", `${base}/${created.body.id}`, { token: reader.token });
    await call("DELETE", `${base}/${created.body.id}`, { token: t });
    await call("PATCH", `${base}/${created.body.id}`, { token: t, body: {} });
    let capped = 0;
    for (let i = 0; i < 25 && capped === 0; i++) {
      const res = await call("POST", base, { token: t, body: forwardBody });
      if (res.status === 429) capped = i;
    }
    expect(capped).toBeGreaterThan(0);

    await call("POST", `/api/routers/${id}/adoption`, { token: t });
    await call("POST", `/api/routers/${UNKNOWN}/adoption`, { token: t });
    await call("POST", `/api/routers/${id}/adoption`, { token: reader.token });
    await call("DELETE", `/api/routers/${UNKNOWN}`, { token: t });
    await call("DELETE", `/api/routers/${id}`, { token: t });

    // API keys, the audit log and webhooks
    const key = await call("POST", "/v1/api-keys", { token: t, body: { name: "ci", scopes: ["routers:read"] } });
    await call("POST", "/v1/api-keys", { token: t, body: { name: "too much", scopes: ["nope:all"] } });
    await call("POST", "/v1/api-keys", { token: reader.token, body: { name: "ro", scopes: ["routers:read"] } });
    await call("GET", "/v1/api-keys", { token: t });
    await call("GET", "/api/routers", { token: key.body.key });
    await call("DELETE", `/v1/api-keys/${UNKNOWN}`, { token: t });
    await call("DELETE", `/v1/api-keys/${key.body.id}`, { token: t });
    await call("GET", "/api/routers", { token: key.body.key });
    await call("GET", "/api/audit-log", { token: t });
    await call("GET", "/api/audit-log?limit=2", { token: t });
    await call("GET", "/api/audit-log?limit=0", { token: t });
    await call("GET", "/api/audit-log");
    await call("GET", "/api/availability?from=2026-11-01&to=2026-11-02", { token: t });
    await call("GET", "/api/availability?format=csv", { token: t });
    await call("GET", "/api/availability?from=2026-11-02&to=2026-11-01", { token: t });
    await call("GET", "/api/availability", { token: reader.token, headers: { accept: "text/csv" } });
    await call("GET", "/api/availability");
    const watched = await makeRouter(h.db, owner);
    await call("GET", `/api/routers/${watched.id}/availability?granularity=month`, { token: t });
    await call("GET", `/api/routers/${watched.id}/availability?from=nope`, { token: t });
    await call("GET", `/api/routers/${UNKNOWN}/availability`, { token: t });
    const backed = await makeRouter(h.db, owner);
    const backups = `/api/routers/${backed.id}/backups`;
    await call("POST", backups, { token: t });
    await call("POST", backups, { token: reader.token });
    await call("POST", `/api/routers/${UNKNOWN}/backups`, { token: t });
    await call("POST", `/api/routers/${(await makeRouter(h.db, owner, { tunnelIp: null })).id}/backups`, {
      token: t,
    });
    const [version] = await h.db.query<{ id: string }>(
      `insert into router_config_backups (id, router_id, created_at, checked_at, sha256, bytes, lines, content)
       values (gen_random_uuid(), $1, now(), now(), repeat('a', 64), 14, 1, '/system identity') returning id`,
      [backed.id],
    );
    await call("GET", backups, { token: t });
    await call("GET", `${backups}?limit=0`, { token: t });
    await call("GET", `/api/routers/${UNKNOWN}/backups`, { token: t });
    await call("GET", `${backups}/${version?.id}`, { token: t });
    await call("GET", `${backups}/${UNKNOWN}`, { token: t });
    await call("GET", `${backups}/${version?.id}/diff`, { token: t });
    await call("GET", `${backups}/${version?.id}/diff?against=${UNKNOWN}`, { token: t });
    const accessBase = `/api/routers/${backed.id}/access`;
    const accessBody = { service: "ssh", level: "read", expire_after_minutes: 15, allow_from: "8.8.8.8" };
    const opened = await call("POST", accessBase, { token: t, body: accessBody });
    await call("POST", accessBase, { token: t, body: { ...accessBody, level: "root" } });
    await call("POST", accessBase, { token: reader.token, body: accessBody });
    await call("POST", `/api/routers/${UNKNOWN}/access`, { token: t, body: accessBody });
    await call("GET", accessBase, { token: t });
    await call("GET", `/api/routers/${UNKNOWN}/access`, { token: t });
    await call("GET", `${accessBase}/${opened.body.data?.id ?? UNKNOWN}`, { token: t });
    await call("GET", `${accessBase}/${UNKNOWN}`, { token: t });
    await call("DELETE", `${accessBase}/${UNKNOWN}`, { token: t });
    await call("DELETE", `${accessBase}/${opened.body.data?.id ?? UNKNOWN}`, { token: t });
    const hook = await call("POST", "/api/webhooks", {
      token: t,
      body: { url: "https://hooks.example.com/fleet", events: ["router.offline"] },
    });
    await call("POST", "/api/webhooks", { token: t, body: { url: "http://127.0.0.1/x", events: ["*"] } });
    await call("GET", "/api/webhooks", { token: t });
    await call("POST", `/api/webhooks/${hook.body.data?.id ?? UNKNOWN}/test`, { token: t });
    await call("POST", `/api/webhooks/${UNKNOWN}/test`, { token: t });
    await call("GET", `/api/webhooks/${hook.body.data?.id ?? UNKNOWN}/deliveries`, { token: t });
    await call("GET", `/api/webhooks/${UNKNOWN}/deliveries`, { token: t });
    await call("DELETE", `/api/webhooks/${UNKNOWN}`, { token: t });
    await call("DELETE", `/api/webhooks/${hook.body.data?.id ?? UNKNOWN}`, { token: t });

    // organizations, members, invitations and teams (a fresh credential: the owner's is near its limit)
    const msp = await h.login();
    const m = msp.token;
    const customer = await call("POST", "/v1/organizations", { token: m, body: { name: "Customer" } });
    await call("POST", "/v1/organizations", { token: m, body: { name: "" } });
    await call("POST", "/v1/organizations", { token: reader.token, body: { name: "x" } });
    await call("POST", "/v1/organizations", { token: m, body: { name: "x", parent_id: UNKNOWN } });
    await call("GET", "/v1/organizations", { token: m });
    await call("GET", "/v1/organizations");
    const cid = customer.body.id as string;
    await call("PATCH", `/v1/organizations/${cid}`, { token: m, body: { name: "Renamed" } });
    await call("PATCH", `/v1/organizations/${UNKNOWN}`, { token: m, body: { name: "x" } });
    await call("DELETE", `/v1/organizations/${msp.organizationId}`, { token: m });
    await call("GET", `/v1/organizations/${cid}/members`, { token: m });
    await call("GET", `/v1/organizations/${UNKNOWN}/members`, { token: m });
    await call("PATCH", `/v1/organizations/${msp.organizationId}/members/${msp.userId}`, {
      token: m,
      body: { role: "viewer" },
    });
    await call("PATCH", `/v1/organizations/${cid}/members/${msp.userId}`, { token: m, body: { role: "nope" } });
    await call("DELETE", `/v1/organizations/${cid}/members/${UNKNOWN}`, { token: m });
    await call("DELETE", `/v1/organizations/${msp.organizationId}/members/${msp.userId}`, { token: m });
    const invited = await call("POST", `/v1/organizations/${cid}/invitations`, {
      token: m,
      body: { email: "truth-invitee@example.com", role: "technician" },
    });
    await call("POST", `/v1/organizations/${cid}/invitations`, { token: m, body: { email: "x", role: "root" } });
    await call("GET", `/v1/organizations/${cid}/invitations`, { token: m });
    const invitee = await h.login("truth-invitee@example.com");
    const invitationToken = String(invited.body.url).split("/").pop();
    await call("POST", `/v1/invitations/${invitationToken}/accept`, { token: m });
    await call("POST", `/v1/invitations/${invitationToken}/accept`, { token: invitee.token });
    await call("POST", `/v1/invitations/${invitationToken}/accept`, { token: invitee.token });
    await call("POST", "/v1/invitations/unknown-token/accept", { token: invitee.token });
    await call("DELETE", `/v1/organizations/${cid}/invitations/${UNKNOWN}`, { token: m });
    const again = await call("POST", `/v1/organizations/${cid}/invitations`, {
      token: m,
      body: { email: "second@example.com", role: "viewer" },
    });
    await call("DELETE", `/v1/organizations/${cid}/invitations/${again.body.id}`, { token: m });
    const team = await call("POST", `/v1/organizations/${cid}/teams`, { token: m, body: { name: "Field" } });
    await call("POST", `/v1/organizations/${cid}/teams`, { token: m, body: { name: "" } });
    await call("GET", `/v1/organizations/${cid}/teams`, { token: m });
    await call("PATCH", `/v1/organizations/${cid}/teams/${team.body.id}`, { token: m, body: { name: "Field 2" } });
    await call("PATCH", `/v1/organizations/${cid}/teams/${UNKNOWN}`, { token: m, body: { name: "x" } });
    const defaultTeam = (await call("GET", `/v1/organizations/${cid}/teams`, { token: m })).body.data[0].id;
    await call("DELETE", `/v1/organizations/${cid}/teams/${defaultTeam}`, { token: m });
    await call("DELETE", `/v1/organizations/${cid}/teams/${team.body.id}`, { token: m });
    const ownTeam = await call("POST", `/v1/organizations/${msp.organizationId}/teams`, {
      token: m,
      body: { name: "B" },
    });
    const moved = await makeRouter(h.db, msp);
    await call("PATCH", `/api/routers/${moved.id}`, { token: m, body: { team_id: ownTeam.body.id } });
    await call("PATCH", `/api/routers/${moved.id}`, { token: m, body: { team_id: UNKNOWN } });
    await call("PATCH", `/api/routers/${UNKNOWN}`, { token: m, body: { team_id: ownTeam.body.id } });
    await call("DELETE", `/v1/organizations/${cid}`, { token: m });

    // router tags, notification channels, alert rules, maintenance windows (a fresh credential)
    const alerter = await h.login();
    const a = alerter.token;
    const tagged = (await makeRouter(h.db, alerter)).id;
    await call("PATCH", `/api/routers/${tagged}`, { token: a, body: { tags: ["core"] } });
    await call("PATCH", `/api/routers/${tagged}`, { token: a, body: { tags: [""] } });
    await call("PATCH", `/api/routers/${UNKNOWN}`, { token: a, body: { tags: [] } });
    const channel = await call("POST", "/api/notification-channels", {
      token: a,
      body: { name: "pd", type: "pagerduty", config: { routing_key: "K".repeat(32) } },
    });
    const channelId = channel.body.data?.id ?? UNKNOWN;
    await call("POST", "/api/notification-channels", { token: a, body: { name: "x", type: "sms", config: {} } });
    await call("GET", "/api/notification-channels", { token: a });
    await call("GET", `/api/notification-channels/${channelId}`, { token: a });
    await call("GET", `/api/notification-channels/${UNKNOWN}`, { token: a });
    await call("PATCH", `/api/notification-channels/${channelId}`, { token: a, body: { name: "pager" } });
    await call("PATCH", `/api/notification-channels/${channelId}`, {
      token: a,
      body: { config: { routing_key: "x" } },
    });
    await call("POST", `/api/notification-channels/${channelId}/test`, { token: a });
    await call("GET", `/api/notification-channels/${channelId}/deliveries`, { token: a });
    await call("GET", `/api/notification-channels/${channelId}/deliveries?limit=0`, { token: a });
    const rule = await call("POST", "/api/alert-rules", {
      token: a,
      body: { name: "down", events: ["router.offline"], channels: [channelId] },
    });
    const ruleId = rule.body.data?.id ?? UNKNOWN;
    await call("POST", "/api/alert-rules", { token: a, body: { name: "down", events: [], channels: [UNKNOWN] } });
    await call("POST", "/api/alert-rules", { token: a, body: { name: "down", events: ["*"], channels: [UNKNOWN] } });
    await call("GET", "/api/alert-rules", { token: a });
    await call("GET", `/api/alert-rules/${ruleId}`, { token: a });
    await call("PATCH", `/api/alert-rules/${ruleId}`, { token: a, body: { min_offline_seconds: 60 } });
    await call("PATCH", `/api/alert-rules/${UNKNOWN}`, { token: a, body: { min_offline_seconds: 60 } });
    await call("DELETE", `/api/alert-rules/${ruleId}`, { token: a });
    const window = await call("POST", "/api/maintenance-windows", {
      token: a,
      body: { name: "w", starts_at: "2026-12-01T22:00:00Z", ends_at: "2026-12-01T23:00:00Z" },
    });
    await call("POST", "/api/maintenance-windows", {
      token: a,
      body: { name: "w", starts_at: "2026-12-01T22:00:00Z", ends_at: "2026-12-01T21:00:00Z" },
    });
    await call("GET", "/api/maintenance-windows", { token: a });
    await call("GET", `/api/maintenance-windows/${window.body.data?.id ?? UNKNOWN}`, { token: a });
    await call("DELETE", `/api/maintenance-windows/${window.body.data?.id ?? UNKNOWN}`, { token: a });
    await call("DELETE", `/api/maintenance-windows/${UNKNOWN}`, { token: a });
    await call("DELETE", `/api/notification-channels/${channelId}`, { token: a });

    // fleet changes (the rules: features/changes/changes.service.test.ts)
    const change = await call("POST", "/api/changes", {
      token: a,
      body: {
        name: "c",
        kind: "script",
        script: ":put {{identity}}",
        routers: { router_ids: [tagged] },
        requires_approval: true,
      },
    });
    const changeId = change.body.data?.id ?? UNKNOWN;
    await call("POST", "/api/changes", {
      token: a,
      body: { name: "c", kind: "firmware", firmware: { channel: "beta" }, routers: {} },
    });
    await call("POST", "/api/changes", {
      token: a,
      body: { name: "c", kind: "script", script: ":put 1", routers: { router_ids: [UNKNOWN] } },
    });
    await call("GET", "/api/changes?limit=1", { token: a });
    await call("GET", `/api/changes/${changeId}`, { token: a });
    await call("GET", `/api/changes/${UNKNOWN}`, { token: a });
    await call("GET", `/api/changes/${changeId}/routers`, { token: a });
    await call("GET", `/api/changes/${changeId}/preview?router_id=${tagged}`, { token: a });
    await call("GET", `/api/changes/${changeId}/preview?router_id=${UNKNOWN}`, { token: a });
    await call("POST", `/api/changes/${changeId}/approve`, { token: a });
    await call("POST", `/api/changes/${changeId}/resume`, { token: a });
    await call("POST", `/api/changes/${changeId}/pause`, { token: a });
    await call("POST", `/api/changes/${changeId}/cancel`, { token: a });

    // health (the rules: features/routers/router-health.service.test.ts, features/health/*.test.ts)
    await call("GET", `/api/routers/${watched.id}/resources?step=1h`, { token: t });
    await call("GET", `/api/routers/${watched.id}/resources?from=2026-02-30`, { token: t });
    await call("GET", `/api/routers/${UNKNOWN}/resources`, { token: t });
    await call("GET", `/api/routers/${watched.id}/interfaces`, { token: t });
    await call("GET", `/api/routers/${watched.id}/interfaces/vlan%2F10/traffic`, { token: t });
    await call("GET", `/api/routers/${watched.id}/interfaces/%00/traffic`, { token: t });
    await call("GET", "/api/health-thresholds", { token: t });
    await call("PUT", "/api/health-thresholds", { token: t, body: { cpu: { above: 95, for_seconds: 60 } } });
    await call("PUT", "/api/health-thresholds", { token: t, body: { cpu: { above: 101, for_seconds: 60 } } });
    await call("GET", `/api/routers/${watched.id}/health-thresholds`, { token: t });
    await call("PUT", `/api/routers/${watched.id}/health-thresholds`, { token: t, body: { disk: null } });
    await call("PUT", `/api/routers/${UNKNOWN}/health-thresholds`, { token: t, body: { disk: null } });

    // the rate limit: a fresh credential up to the limit and one more
    const busy = await h.login();
    for (let i = 0; i <= RATE_LIMIT; i++) await call("GET", "/api/routers", { token: busy.token });
    await call("GET", "/v1/account", { token: busy.token });

    expect(problems).toEqual([]);
    // Every operation of the document was answered at least once.
    const doc = (await h.request("GET", "/openapi.json")).body;
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item as object).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.filter((key) => !checker.seen.has(key))).toEqual([]);
    // Some 300 requests: about 10 s alone, over 30 s on a busy CI machine.
  });

  it("unlisted methods answer 405 with Allow, in the shape of their prefix", async () => {
    const { token } = await h.login();
    const v1 = await h.request("OPTIONS", "/v1/account", { token });
    expect(v1.status).toBe(405);
    expect(v1.headers.get("allow")).toBe("GET, POST, PATCH, PUT");
    expect(v1.body).toEqual({
      message: expect.any(String),
      code: "method_not_allowed",
      request_id: expect.any(String),
    });
    const refused = await h.request("DELETE", "/v1/account", { token });
    expect(refused.status).toBe(405);
    expect(refused.body.message).toMatch(/support/);
    const api = await h.request("PUT", `/api/routers/${UNKNOWN}/metadata`, { token, body: {} });
    expect(api.status).toBe(405);
    expect(api.headers.get("allow")).toBe("GET, PATCH");
    expect(api.body).toEqual({
      status: "fail",
      message: expect.any(String),
      code: "method_not_allowed",
      request_id: expect.any(String),
    });
    const hook = await h.request("GET", "/v1/auth/login-hook");
    expect(hook.status).toBe(405);
  });

  it("security per operation: none for dev-login, the shared secret for login-hook, tokens elsewhere", async () => {
    const doc = (await h.request("GET", "/openapi.json")).body;
    expect(doc.paths["/v1/auth/dev-login"].post.security).toEqual([]);
    expect(doc.paths["/v1/auth/login-hook"].post.security).toEqual([{ LoginHookSecret: [] }]);
    expect(doc.paths["/v1/account"].get.security).toEqual([{ Authorization: [] }]);
    expect(doc.paths["/api/routers/{router_id}/metadata"].patch.requestBody).toBeDefined();
    const email = doc.paths["/v1/account"].post.requestBody.content["application/json"].schema.properties.email;
    expect(email.format).toBe("email");
  });

  it("login-hook checks its caller before the body", async () => {
    const res = await h.request("POST", "/v1/auth/login-hook", { body: { email: 42 } });
    expect(res.status).toBe(401);
  });
});
