import { makeRouter } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { startSmtpSink } from "../../testing/smtp-sink.ts";

// HTTP only (docs/contributing.md "Add a test"): shapes, status codes, auth, headers and the tRPC
// names of CONTRACT 18's organizations, members, invitations and teams. The rules are tested on the
// services.

let h: ApiHarness;
let sink: Awaited<ReturnType<typeof startSmtpSink>>;
const PUBLIC = "https://fleet.example.net";

beforeAll(async () => {
  sink = await startSmtpSink();
  h = await startApiHarness({ SMTP_URL: sink.url, MAIL_FROM: "Fleet <fleet@example.net>", API_PUBLIC_URL: PUBLIC });
});
afterAll(async () => {
  await h?.close();
  await sink?.close();
});

const UNKNOWN = "00000000-0000-4000-8000-000000000000";

describe("/v1/organizations over HTTP", () => {
  it("creates, lists, renames and deletes customers in the /v1 shapes", async () => {
    const msp = await h.login();
    const created = await h.request("POST", "/v1/organizations", { token: msp.token, body: { name: "Customer A" } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: "Customer A",
      parent_id: msp.organizationId,
      level: 2,
      billing_root_id: msp.organizationId,
      role: "owner",
      routers: 0,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/),
    });
    const listed = await h.request("GET", "/v1/organizations", { token: msp.token });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((o: { id: string }) => o.id)).toEqual([msp.organizationId, created.body.id]);
    const renamed = await h.request("PATCH", `/v1/organizations/${created.body.id}`, {
      token: msp.token,
      body: { name: "Customer B" },
    });
    expect([renamed.status, renamed.body.name]).toEqual([200, "Customer B"]);
    const deleted = await h.request("DELETE", `/v1/organizations/${created.body.id}`, { token: msp.token });
    expect([deleted.status, deleted.body]).toEqual([204, undefined]);
  });

  it("refuses without a token (401), without organizations:write (403), bad names (422), others' ids (404)", async () => {
    const msp = await h.login();
    expect((await h.refused("GET", "/v1/organizations")).status).toBe(401);
    const reader = await h.login(undefined, { scope: "routers:read" });
    const forbidden = await h.refused("POST", "/v1/organizations", { token: reader.token, body: { name: "x" } });
    expect([forbidden.status, typeof forbidden.body.message]).toEqual([403, "string"]);
    for (const name of ["", "x".repeat(101), "a\u0000b", 5]) {
      const res = await h.refused("POST", "/v1/organizations", { token: msp.token, body: { name } });
      expect([res.status, Object.keys(res.body.errors)]).toEqual([422, ["name"]]);
    }
    expect(
      (await h.request("POST", "/v1/organizations", { token: msp.token, body: { name: "x".repeat(100) } })).status,
    ).toBe(201);
    const stranger = await h.login();
    for (const [method, path, body] of [
      ["PATCH", `/v1/organizations/${msp.organizationId}`, { name: "x" }],
      ["DELETE", `/v1/organizations/${msp.organizationId}`, undefined],
      ["GET", `/v1/organizations/${msp.organizationId}/members`, undefined],
      ["GET", `/v1/organizations/${msp.organizationId}/teams`, undefined],
      ["POST", `/v1/organizations/${msp.organizationId}/invitations`, { email: "a@example.com", role: "viewer" }],
      ["POST", "/v1/organizations", { name: "x", parent_id: msp.organizationId }],
      ["PATCH", `/v1/organizations/${UNKNOWN}`, { name: "x" }],
    ] as const) {
      const res = await h.refused(method, path, { token: stranger.token, ...(body ? { body } : {}) });
      expect([method, path, res.status, typeof res.body.message]).toEqual([method, path, 404, "string"]);
    }
  });

  it("invites (no-store, mailed), accepts as the invited person, lists members, and removal takes effect", async () => {
    const msp = await h.login();
    const customer = (await h.request("POST", "/v1/organizations", { token: msp.token, body: { name: "Cust" } })).body;
    const email = `tech-${crypto.randomUUID()}@example.com`;
    const invited = await h.request("POST", `/v1/organizations/${customer.id}/invitations`, {
      token: msp.token,
      body: { email, role: "technician" },
    });
    expect(invited.status).toBe(201);
    expect(invited.headers.get("cache-control")).toBe("no-store");
    expect(invited.body).toEqual({
      id: expect.any(String),
      email,
      role: "technician",
      team_id: null,
      expires_at: expect.any(String),
      created_at: expect.any(String),
      url: expect.stringMatching(new RegExp(`^${PUBLIC}/console/invitations/[A-Za-z0-9_-]+$`)),
    });
    const mail = await eventually(() => sink.received.find((m) => m.to.includes(email)), "the invitation mail");
    expect(mail.text).toContain(invited.body.url);
    const pending = await h.request("GET", `/v1/organizations/${customer.id}/invitations`, { token: msp.token });
    expect(pending.body.data).toEqual([expect.not.objectContaining({ url: expect.anything() })]);

    const token = String(invited.body.url).split("/").pop();
    const other = await h.login();
    expect((await h.refused("POST", `/v1/invitations/${token}/accept`, { token: other.token })).status).toBe(403);
    const invitee = await h.login(email);
    const accepted = await h.request("POST", `/v1/invitations/${token}/accept`, { token: invitee.token });
    expect([accepted.status, accepted.body]).toEqual([200, { organization_id: customer.id, role: "technician" }]);
    expect((await h.refused("POST", `/v1/invitations/${token}/accept`, { token: invitee.token })).status).toBe(410);
    expect((await h.refused("POST", "/v1/invitations/nope/accept", { token: invitee.token })).status).toBe(404);

    const members = await h.request("GET", `/v1/organizations/${customer.id}/members`, { token: msp.token });
    expect(members.body.data).toEqual(
      expect.arrayContaining([
        {
          user_id: msp.userId,
          email: expect.any(String),
          role: "owner",
          team_id: null,
          organization_id: msp.organizationId,
          created_at: expect.any(String),
        },
        expect.objectContaining({ user_id: invitee.userId, email, role: "technician", organization_id: customer.id }),
      ]),
    );

    // The customer became the invitee's current organization: a new token acts there as a
    // technician, whatever scopes dev-login put in it, and sees nothing above.
    const tech = await h.login(email);
    expect(tech.organizationId).toBe(customer.id);
    expect((await h.request("GET", "/api/routers", { token: tech.token })).status).toBe(200);
    expect((await h.refused("POST", "/v1/organizations", { token: tech.token, body: { name: "x" } })).status).toBe(403);
    const seen = await h.request("GET", "/v1/organizations", { token: tech.token });
    expect(seen.body.data.map((o: { id: string; role: string }) => [o.id, o.role])).toEqual([
      [customer.id, "technician"],
    ]);

    const demoted = await h.request("PATCH", `/v1/organizations/${customer.id}/members/${invitee.userId}`, {
      token: msp.token,
      body: { role: "viewer" },
    });
    expect([demoted.status, demoted.body.role]).toEqual([200, "viewer"]);
    expect((await h.request("POST", "/api/routers", { token: tech.token, body: {} })).status).toBe(403);
    const removed = await h.request("DELETE", `/v1/organizations/${customer.id}/members/${invitee.userId}`, {
      token: msp.token,
    });
    expect(removed.status).toBe(204);
    expect((await h.request("GET", "/api/routers", { token: tech.token })).status).toBe(401);
  });

  it("teams: the /v1 shapes, and PATCH /api/routers/{id} moves a router (JSend)", async () => {
    const msp = await h.login();
    const created = await h.request("POST", `/v1/organizations/${msp.organizationId}/teams`, {
      token: msp.token,
      body: { name: "Field" },
    });
    expect([created.status, created.body]).toEqual([
      201,
      { id: expect.any(String), name: "Field", is_default: false, routers: 0, created_at: expect.any(String) },
    ]);
    const router = await makeRouter(h.db, msp);
    const moved = await h.request("PATCH", `/api/routers/${router.id}`, {
      token: msp.token,
      body: { team_id: created.body.id },
    });
    // The answer is the Router (routers.update, which also changes tags).
    expect([moved.status, moved.body.status, moved.body.data.id]).toEqual([200, "success", router.id]);
    const bad = await h.refused("PATCH", `/api/routers/${router.id}`, { token: msp.token, body: { team_id: UNKNOWN } });
    expect([bad.status, bad.body.status, Object.keys(bad.body.data)]).toEqual([422, "fail", ["team_id"]]);
    const teams = await h.request("GET", `/v1/organizations/${msp.organizationId}/teams`, { token: msp.token });
    expect(teams.body.data.map((t: { routers: number; is_default: boolean }) => [t.is_default, t.routers])).toEqual([
      [true, 0],
      [false, 1],
    ]);
    const busy = await h.refused("DELETE", `/v1/organizations/${msp.organizationId}/teams/${created.body.id}`, {
      token: msp.token,
    });
    expect([busy.status, busy.body.message]).toEqual([409, expect.stringContaining("1 router(s)")]);
  });

  it("an API key carries organizations:write only when its creator's role holds it (422 otherwise)", async () => {
    const owner = await h.login();
    const email = `billing-${crypto.randomUUID()}@example.com`;
    const person = await h.login(email);
    await h.db.query(
      "insert into organization_members (id, organization_id, user_id, role, created_at) values (gen_random_uuid(), $1, $2, 'billing', now())",
      [owner.organizationId, person.userId],
    );
    await h.db.query("update users set current_organization_id = $1 where id = $2", [
      owner.organizationId,
      person.userId,
    ]);
    // dev-login put every scope in the token; the billing role leaves account:* of them.
    const billing = await h.login(email);
    expect(billing.organizationId).toBe(owner.organizationId);
    const refused = await h.refused("POST", "/v1/api-keys", {
      token: billing.token,
      body: { name: "k", scopes: ["account:read", "organizations:write"] },
    });
    expect([refused.status, Object.keys(refused.body.errors)]).toEqual([422, ["scopes"]]);
    const made = await h.request("POST", "/v1/api-keys", {
      token: owner.token,
      body: { name: "k", scopes: ["organizations:write"] },
    });
    expect([made.status, made.body.scopes]).toEqual([201, ["organizations:write"]]);
  });

  it("answers the tRPC names of the contract", async () => {
    const msp = await h.login();
    const client = createClient({ url: h.api.url, token: msp.token });
    const made = await client.organizations.create.mutate({ name: "via tRPC" });
    expect((await client.organizations.list.query()).data.map((o) => o.id)).toContain(made.id);
    await client.organizations.update.mutate({ id: made.id, name: "renamed" });
    expect((await client.members.list.query({ id: made.id })).data).toHaveLength(1);
    const invitation = await client.invitations.create.mutate({ id: made.id, email: "t@example.com", role: "viewer" });
    expect((await client.invitations.list.query({ id: made.id })).data).toHaveLength(1);
    await client.invitations.revoke.mutate({ id: made.id, invitation_id: invitation.id });
    const team = await client.teams.create.mutate({ id: made.id, name: "T" });
    await client.teams.update.mutate({ id: made.id, team_id: team.id, name: "T2" });
    expect((await client.teams.list.query({ id: made.id })).data).toHaveLength(2);
    await client.teams.delete.mutate({ id: made.id, team_id: team.id });
    await expect(client.invitations.accept.mutate({ token: "unknown" })).rejects.toMatchObject({
      data: { httpStatus: 404 },
    });
    await expect(client.members.remove.mutate({ id: made.id, user_id: msp.userId })).rejects.toMatchObject({
      data: { httpStatus: 409 },
    });
    await expect(client.members.update.mutate({ id: made.id, user_id: UNKNOWN, role: "viewer" })).rejects.toMatchObject(
      {
        data: { httpStatus: 404 },
      },
    );
    await client.organizations.delete.mutate({ id: made.id });
  });
});
