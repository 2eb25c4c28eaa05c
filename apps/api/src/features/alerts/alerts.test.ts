import { createSecretKey } from "node:crypto";
import { makeRouter } from "@fleet/db/testing";
import { ALERT_LIMITS } from "@fleet/shared";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

// What is HTTP about alerts (docs/api.md "Alerts and maintenance windows"): status codes, JSend
// bodies, field errors, scopes and tRPC. The rules themselves are in alerts.service.test.ts.

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness({
    WEBHOOK_ALLOW_PRIVATE: "true",
    SMTP_URL: "smtp://127.0.0.1:9",
    MAIL_FROM: "fleet@example.net",
  });
});
afterAll(async () => {
  await h?.close();
});

const emails = (n: number) => Array.from({ length: n }, (_, i) => `noc${i}@example.net`);

describe("notification channels over HTTP", () => {
  it("creates (201, secrets masked), reads, patches with the mask kept, and deletes (204)", async () => {
    const user = await h.login();
    const res = await h.request("POST", "/api/notification-channels", {
      token: user.token,
      body: { name: "oncall", type: "pagerduty", config: { routing_key: `${"K".repeat(28)}abcd` } },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      status: "success",
      data: {
        id: expect.any(String),
        name: "oncall",
        type: "pagerduty",
        config: { routing_key: "****abcd" },
        created_at: expect.any(String),
      },
    });
    const id = res.body.data.id as string;
    const patched = await h.request("PATCH", `/api/notification-channels/${id}`, {
      token: user.token,
      body: { name: "pager", config: { routing_key: "****abcd" } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ name: "pager", config: { routing_key: "****abcd" } });
    const listed = await h.request("GET", "/api/notification-channels", { token: user.token });
    expect(listed.body.data).toHaveLength(1);
    const other = await h.login();
    for (const [method, path] of [
      ["GET", `/api/notification-channels/${id}`],
      ["PATCH", `/api/notification-channels/${id}`],
      ["DELETE", `/api/notification-channels/${id}`],
      ["POST", `/api/notification-channels/${id}/test`],
      ["GET", `/api/notification-channels/${id}/deliveries`],
    ] as const) {
      const refused = await h.refused(method, path, {
        token: other.token,
        ...(method === "PATCH" ? { body: { name: "x" } } : {}),
      });
      expect(refused.status).toBe(404);
    }
    expect((await h.request("DELETE", `/api/notification-channels/${id}`, { token: user.token })).status).toBe(204);
  });

  it("takes 20 recipients and refuses 21; a bad type, token or URL is 422 naming the field", async () => {
    const user = await h.login();
    const ok = await h.request("POST", "/api/notification-channels", {
      token: user.token,
      body: { name: "mail", type: "email", config: { to: emails(ALERT_LIMITS.recipients) } },
    });
    expect(ok.status).toBe(201);
    const cases: Array<[unknown, string]> = [
      [{ name: "mail", type: "email", config: { to: emails(ALERT_LIMITS.recipients + 1) } }, "config.to"],
      [{ name: "mail", type: "email", config: { to: ["not an address"] } }, "config.to.0"],
      [{ name: "x", type: "sms", config: {} }, "type"],
      [{ name: "t", type: "telegram", config: { bot_token: "nope", chat_id: 1 } }, "config.bot_token"],
      [{ name: "t", type: "telegram", config: { bot_token: "1:a/../x", chat_id: 1 } }, "config.bot_token"],
      [{ name: "p", type: "pagerduty", config: { routing_key: "key with spaces" } }, "config.routing_key"],
      [{ name: "s", type: "slack", config: { webhook_url: "ftp://example.net/x" } }, "config.webhook_url"],
      [{ name: "n\u0000", type: "slack", config: { webhook_url: "https://example.net/x" } }, "name"],
    ];
    for (const [body, field] of cases) {
      const res = await h.refused("POST", "/api/notification-channels", { token: user.token, body });
      expect(res.status).toBe(422);
      expect(res.body.status).toBe("fail");
      expect(res.body.data).toHaveProperty([field]);
    }
    // Short test credentials are taken as they are (the provider is who knows a real one).
    for (const body of [
      { name: "tg", type: "telegram", config: { bot_token: "123456:TEST", chat_id: "42" } },
      { name: "pd", type: "pagerduty", config: { routing_key: "test-routing-key" } },
    ]) {
      const res = await h.request("POST", "/api/notification-channels", { token: user.token, body });
      expect([body.type, res.status]).toEqual([body.type, 201]);
    }
    const reader = await h.login(undefined, { scope: "routers:read" });
    const denied = await h.refused("POST", "/api/notification-channels", {
      token: reader.token,
      body: { name: "mail", type: "email", config: { to: emails(1) } },
    });
    expect(denied.status).toBe(403);
    expect((await h.request("GET", "/api/notification-channels")).status).toBe(401);
  });
});

describe("alert rules and maintenance windows over HTTP", () => {
  it("validates time zones, clocks, min_offline_seconds at 86400 and 86401, and windows that end before they start", async () => {
    const user = await h.login();
    const channel = await h.request("POST", "/api/notification-channels", {
      token: user.token,
      body: { name: "mail", type: "email", config: { to: emails(1) } },
    });
    const channels = [channel.body.data.id as string];
    const created = await h.request("POST", "/api/alert-rules", {
      token: user.token,
      body: {
        name: "down",
        events: ["router.offline", "router.online"],
        channels,
        min_offline_seconds: ALERT_LIMITS.minOfflineSeconds,
        quiet_hours: { timezone: "Europe/Paris", from: "22:00", to: "07:00" },
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ channels, routers: {}, min_offline_seconds: 86_400 });
    const bad: Array<[unknown, string]> = [
      [{ name: "r", events: ["*"], channels, min_offline_seconds: 86_401 }, "min_offline_seconds"],
      // JSON numbers only: REST must not read "60" (or true) as a number.
      [{ name: "r", events: ["*"], channels, min_offline_seconds: "60" }, "min_offline_seconds"],
      [
        { name: "r", events: ["*"], channels, quiet_hours: { timezone: "Mars/Olympus", from: "22:00", to: "07:00" } },
        "quiet_hours.timezone",
      ],
      [
        { name: "r", events: ["*"], channels, quiet_hours: { timezone: "UTC", from: "24:00", to: "07:00" } },
        "quiet_hours.from",
      ],
      [{ name: "r", events: [], channels }, "events"],
      [{ name: "r", events: ["*"], channels: [] }, "channels"],
    ];
    for (const [body, field] of bad) {
      const res = await h.refused("POST", "/api/alert-rules", { token: user.token, body });
      expect(res.status).toBe(422);
      expect(res.body.data).toHaveProperty([field]);
    }
    const router = await makeRouter(h.db, user);
    const window = await h.request("POST", "/api/maintenance-windows", {
      token: user.token,
      body: {
        name: "upgrade",
        routers: { router_ids: [router.id] },
        starts_at: "2026-12-01T22:00:00Z",
        ends_at: "2026-12-01T23:30:00+01:00",
      },
    });
    expect(window.status).toBe(201);
    // Six digits of a second and an offset without its colon, as clients write them.
    const precise = await h.request("POST", "/api/maintenance-windows", {
      token: user.token,
      body: { name: "precise", starts_at: "2026-12-03T22:00:00.123456Z", ends_at: "2026-12-03T23:30:00+0100" },
    });
    expect(precise.status).toBe(201);
    const weekly = await h.request("POST", "/api/maintenance-windows", {
      token: user.token,
      body: {
        name: "sundays",
        weekly: { timezone: "America/New_York", days: ["sun"], from: "02:00", duration_minutes: 120 },
      },
    });
    expect(weekly.status).toBe(201);
    const badWindows: Array<[unknown, string]> = [
      [{ name: "w", starts_at: "2026-12-01T22:00:00Z", ends_at: "2026-12-01T22:00:00Z" }, "ends_at"],
      [{ name: "w", starts_at: "2026-12-01T22:00:00Z", ends_at: "2026-12-01T21:00:00Z" }, "ends_at"],
      [
        { name: "w", weekly: { timezone: "Europe/Atlantis", days: ["sun"], from: "02:00", duration_minutes: 60 } },
        "weekly.timezone",
      ],
      [
        { name: "w", weekly: { timezone: "UTC", days: ["sunday"], from: "02:00", duration_minutes: 60 } },
        "weekly.days.0",
      ],
      [
        { name: "w", weekly: { timezone: "UTC", days: ["sun"], from: "02:00", duration_minutes: 10_081 } },
        "weekly.duration_minutes",
      ],
      [
        { name: "w", weekly: { timezone: "UTC", days: ["sun"], from: "02:00", duration_minutes: "60" } },
        "weekly.duration_minutes",
      ],
      [{ name: "w", starts_at: "2026-12-01T22:00:00.1234567890Z", ends_at: "2026-12-01T23:00:00Z" }, "starts_at"],
      [{ name: "w" }, "starts_at"],
    ];
    for (const [body, field] of badWindows) {
      const res = await h.refused("POST", "/api/maintenance-windows", { token: user.token, body });
      expect(res.status).toBe(422);
      expect(res.body.data).toHaveProperty([field]);
    }
    const audit = await h.request("GET", "/api/audit-log?action=maintenance.created", { token: user.token });
    expect(audit.body.data).toHaveLength(3);
    expect(
      (await h.request("DELETE", `/api/maintenance-windows/${window.body.data.id}`, { token: user.token })).status,
    ).toBe(204);
  });

  it("a fault opened inside a maintenance window covering the router says maintenance", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    await h.request("PATCH", `/api/routers/${router.id}`, { token: user.token, body: { tags: ["core"] } });
    const created = await h.request("POST", "/api/maintenance-windows", {
      token: user.token,
      body: {
        name: "core",
        routers: { tags: ["core"] },
        starts_at: "2026-11-01T01:00:00Z",
        ends_at: "2026-11-01T03:00:00Z",
      },
    });
    expect(created.status).toBe(201);
    for (const [at, cause] of [
      ["2026-11-01T02:00:00Z", "inside"],
      ["2026-11-01T04:00:00Z", "outside"],
    ]) {
      await h.db.query(
        `insert into router_faults (id, router_id, type, severity, message, cause, status, created_at, resolved_at,
           duration_seconds)
         values (gen_random_uuid(), $1, 'site', 'error', 'Site Offline', $2, 'completed', $3::timestamptz,
           $3::timestamptz + interval '10 minutes', 600)`,
        [router.id, cause, at],
      );
    }
    const faults = await h.request("GET", `/api/routers/${router.id}/faults`, { token: user.token });
    const byCause = Object.fromEntries(
      (faults.body.data as Array<{ cause: string; maintenance?: boolean }>).map((f) => [f.cause, f.maintenance]),
    );
    expect(byCause).toEqual({ inside: true, outside: undefined });
  });

  it("serves notificationChannels.*, alertRules.* and maintenanceWindows.* over tRPC", async () => {
    const user = await h.login();
    const client = createClient({ url: h.api.url, token: user.token });
    const channel = await client.notificationChannels.create.mutate({
      name: "mail",
      type: "email",
      config: { to: ["a@example.net"] },
    });
    expect((await client.notificationChannels.list.query()).data.map((c) => c.id)).toEqual([channel.data.id]);
    const rule = await client.alertRules.create.mutate({ name: "r", events: ["*"], channels: [channel.data.id] });
    expect((await client.alertRules.get.query({ id: rule.data.id })).data.name).toBe("r");
    expect((await client.maintenanceWindows.list.query()).data).toEqual([]);
  });
});

describe("team-bound credentials over HTTP", () => {
  it("see only their team's channels, rules and windows; another team's id is a JSend 404 (REST and tRPC)", async () => {
    const user = await h.login();
    const second = crypto.randomUUID();
    await h.db.query(
      "insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, 'Second', false, now())",
      [second, user.organizationId],
    );
    const teamToken = await new SignJWT({
      sub: user.userId,
      id: user.organizationId,
      team: second,
      scope: "routers:read routers:write",
    })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("5m")
      .sign(createSecretKey(Buffer.from(h.config.auth.jwtSecret ?? "")));
    const otherRouter = await makeRouter(h.db, user);
    const slack = { type: "slack", config: { webhook_url: "http://127.0.0.1:9/hook" } };
    const orgChannel = await h.request("POST", "/api/notification-channels", {
      token: user.token,
      body: { name: "org", ...slack },
    });
    const teamChannel = await h.request("POST", "/api/notification-channels", {
      token: teamToken,
      body: { name: "team", ...slack },
    });
    expect(teamChannel.status).toBe(201);
    const listed = await h.request("GET", "/api/notification-channels", { token: teamToken });
    expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([teamChannel.body.data.id]);
    const hidden = await h.request("GET", `/api/notification-channels/${orgChannel.body.data.id}`, {
      token: teamToken,
    });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toMatchObject({ status: "fail", message: expect.any(String) });
    const trpc = await h.request("POST", "/trpc/notificationChannels.delete", {
      token: teamToken,
      body: { id: orgChannel.body.data.id },
    });
    expect(trpc.status).toBe(404);

    const foreign = await h.refused("POST", "/api/alert-rules", {
      token: teamToken,
      body: {
        name: "r",
        events: ["*"],
        channels: [teamChannel.body.data.id],
        routers: { router_ids: [otherRouter.id] },
      },
    });
    expect(foreign.status).toBe(404);
    const rule = await h.request("POST", "/api/alert-rules", {
      token: teamToken,
      body: { name: "r", events: ["*"], channels: [teamChannel.body.data.id] },
    });
    expect(rule.status).toBe(201);
    expect(rule.body.data.routers).toEqual({ team_id: second });
    const window = await h.request("POST", "/api/maintenance-windows", {
      token: teamToken,
      body: { name: "w", starts_at: "2026-12-01T22:00:00Z", ends_at: "2026-12-01T23:00:00Z" },
    });
    expect(window.status).toBe(201);
    expect((await h.request("GET", "/api/maintenance-windows", { token: user.token })).body.data).toHaveLength(1);
    expect(
      (await h.request("GET", `/api/alert-rules/${rule.body.data.id}`, { token: user.token })).body.data.routers,
    ).toEqual({ team_id: second });
  });
});
