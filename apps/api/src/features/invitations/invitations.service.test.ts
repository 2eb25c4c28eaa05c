import { createHash } from "node:crypto";
import { acquireJobEngine, type AuditOrigin, type JobEngine, MembershipsRepository, queryOf } from "@fleet/db";
import {
  createTestDatabase,
  databaseFingerprint,
  makeChildOrganization,
  makeUser,
  type TestDatabase,
} from "@fleet/db/testing";
import { ManualClock, TENANCY_LIMITS } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { closedPort, startSmtpSink } from "../../testing/smtp-sink.ts";
import { MembershipsService } from "../members/memberships.service.ts";
import { claimsOf, makeMember } from "../organizations/testing/tenancy-fixtures.ts";
import { SecretBox } from "../webhooks/webhook-secret.ts";
import { smtpMailer, workInvitationMail } from "./invitation-mail.ts";
import { InvitationsService } from "./invitations.service.ts";

// The service tier: invitations on a real database with the real job engine, mailed to a real SMTP
// server on loopback; invitation time is a ManualClock.

const DAY = 86_400_000;
let db: TestDatabase;
let jobs: JobEngine;
let sink: Awaited<ReturnType<typeof startSmtpSink>>;
const clock = new ManualClock(new Date("2026-11-29T10:00:00Z"));
const origin: AuditOrigin = { actor: { type: "user", id: null }, sourceIp: null };
const secrets = new SecretBox("invitation-test-key-material-of-some-length");
let memberships: MembershipsService;
let svc: InvitationsService;
const mailers: Array<{ close(): void }> = [];

const serviceWith = (mail: boolean) =>
  new InvitationsService({
    db,
    clock,
    memberships,
    publicUrl: () => "https://fleet.example.net",
    mail: mail ? { jobs, secrets } : undefined,
    logLinks: false,
    logger: pino({ level: "silent" }),
  });

beforeAll(async () => {
  db = await createTestDatabase();
  jobs = await acquireJobEngine(db, { instanceName: "invitations-test" });
  sink = await startSmtpSink();
  const mailer = smtpMailer(sink.url, "Fleet <fleet@example.net>");
  mailers.push(mailer);
  await workInvitationMail(
    jobs,
    { mailer, secrets, logger: pino({ level: "silent" }) },
    {
      retryDelaySeconds: 1,
      pollingIntervalSeconds: 0.5,
    },
  );
  memberships = new MembershipsService({ db, clock });
  svc = serviceWith(true);
});
afterAll(async () => {
  await jobs?.stop();
  for (const m of mailers) m.close();
  await sink?.close();
  await db?.close();
});

const tokenOf = (url: string) => url.split("/").pop() ?? "";

/** No mail job of an earlier test still changes rows (a "nothing changed" check compares all of them). */
const mailIdle = () =>
  eventually(async () => {
    const rows = await db.query<{ n: unknown }>(
      "select count(*) as n from pgboss.job where name = 'invitation.mail' and state not in ('completed', 'failed')",
    );
    return Number(rows[0]?.n) === 0;
  }, "the mail queue to be idle");

describe("invitations (service tier)", () => {
  it("makes a 7-day invitation whose link is shown once, stored as a hash, and mailed through SMTP", async () => {
    const owner = await makeUser(db);
    const email = `Invitee-${crypto.randomUUID()}@Example.com`;
    const created = await svc.create(claimsOf(owner.userId, owner.organizationId), origin, {
      id: owner.organizationId,
      email,
      role: "technician",
    });
    expect(created).toMatchObject({
      email,
      role: "technician",
      team_id: null,
      expires_at: "2026-12-06T10:00:00+00:00",
    });
    expect(created.url).toMatch(/^https:\/\/fleet\.example\.net\/console\/invitations\/[A-Za-z0-9_-]{43}$/);
    const token = tokenOf(created.url);
    const stored = await db.query<{ token_hash: string }>("select token_hash from invitations where id = $1", [
      created.id,
    ]);
    expect(stored[0]?.token_hash).toBe(createHash("sha256").update(token).digest("hex"));
    // Nowhere in the database (the mail job's link is sealed).
    expect(await db.query("select 1 from pgboss.job where data::text like $1", [`%${token}%`])).toEqual([]);
    const listed = await svc.list(claimsOf(owner.userId, owner.organizationId), owner.organizationId);
    expect(listed.data.map((i) => i.id)).toEqual([created.id]);
    expect(JSON.stringify(listed)).not.toContain(token);

    const mail = await eventually(
      () => sink.received.find((m) => m.to.some((to) => to.toLowerCase() === email.toLowerCase())),
      "the mail",
    );
    expect(mail.from).toBe("fleet@example.net");
    expect(mail.text).toContain(created.url);
    const owners = await db.query<{ email: string; name: string }>(
      "select u.email, o.name from users u join organizations o on o.id = $2 where u.id = $1",
      [owner.userId, owner.organizationId],
    );
    expect(mail.text).toContain(owners[0]?.email);
    expect(mail.text).toContain(owners[0]?.name);
    const audit = await db.query<{ action: string }>("select action from audit_log where target_id = $1", [created.id]);
    expect(audit.map((a) => a.action)).toEqual(["member.invited"]);
  });

  it("with the mail server down, the invitation still exists, its link is returned, and the mail is retried", async () => {
    const port = await closedPort();
    const downMailer = smtpMailer(`smtp://127.0.0.1:${port}`, "fleet@example.net");
    mailers.push(downMailer);
    const queueDb = await createTestDatabase();
    const queueJobs = await acquireJobEngine(queueDb, { instanceName: "down" });
    try {
      await workInvitationMail(
        queueJobs,
        { mailer: downMailer, secrets, logger: pino({ level: "silent" }) },
        {
          retryDelaySeconds: 1,
          pollingIntervalSeconds: 0.5,
        },
      );
      const down = new InvitationsService({
        db: queueDb,
        clock,
        memberships: new MembershipsService({ db: queueDb, clock }),
        publicUrl: () => "http://127.0.0.1:1",
        mail: { jobs: queueJobs, secrets },
        logLinks: false,
        logger: pino({ level: "silent" }),
      });
      const owner = await makeUser(queueDb);
      const email = `down-${crypto.randomUUID()}@example.com`;
      const created = await down.create(claimsOf(owner.userId, owner.organizationId), origin, {
        id: owner.organizationId,
        email,
        role: "viewer",
      });
      expect(created.url).toContain("/console/invitations/");
      expect(await queueDb.query("select 1 from invitations where id = $1", [created.id])).toHaveLength(1);
      // The first attempt fails against the closed port; the server comes up; a retry delivers.
      await eventually(async () => {
        const rows = await queueDb.query<{ retry_count: number }>(
          "select retry_count from pgboss.job where name = 'invitation.mail'",
        );
        return rows.some((r) => r.retry_count >= 1);
      }, "a failed first attempt");
      const late = await startSmtpSink(port);
      try {
        const mail = await eventually(
          () => late.received.find((m) => m.to.includes(email)),
          "the retried mail",
          30_000,
        );
        expect(mail.text).toContain(created.url);
      } finally {
        await late.close();
      }
    } finally {
      await queueJobs.stop();
      await queueDb.close();
    }
  });

  it("refuses escalation: an admin inviting an owner (422 naming role), a technician inviting anyone (403)", async () => {
    const owner = await makeUser(db);
    const admin = await makeMember(db, owner.organizationId, "admin");
    const tech = await makeMember(db, owner.organizationId, "technician");
    const stranger = await makeUser(db);
    await mailIdle();
    const before = await databaseFingerprint(db);
    const asAdmin = claimsOf(admin.userId, owner.organizationId);
    let error = await rejection(
      svc.create(asAdmin, origin, { id: owner.organizationId, email: "x@example.com", role: "owner" }),
    );
    expect([error.status, Object.keys(error.fields ?? {})]).toEqual([422, ["role"]]);
    error = await rejection(
      svc.create(claimsOf(tech.userId, owner.organizationId), origin, {
        id: owner.organizationId,
        email: "x@example.com",
        role: "viewer",
      }),
    );
    expect(error.status).toBe(403);
    // An organization outside the token's subtree: 404.
    error = await rejection(
      svc.create(asAdmin, origin, { id: stranger.organizationId, email: "x@example.com", role: "viewer" }),
    );
    expect(error.status).toBe(404);
    // A team of another organization: 422 naming team_id.
    error = await rejection(
      svc.create(asAdmin, origin, {
        id: owner.organizationId,
        email: "x@example.com",
        role: "viewer",
        team_id: stranger.teamId,
      }),
    );
    expect([error.status, Object.keys(error.fields ?? {})]).toEqual([422, ["team_id"]]);
    expect(await databaseFingerprint(db)).toBe(before);
    const ok = await svc.create(asAdmin, origin, { id: owner.organizationId, email: "y@example.com", role: "admin" });
    expect(ok.role).toBe("admin");
  });

  it("holds 100 pending invitations and refuses the 101st with 429; spent ones do not count", async () => {
    const owner = await makeUser(db);
    const plain = serviceWith(false);
    const auth = claimsOf(owner.userId, owner.organizationId);
    const made = [];
    for (let i = 0; i < TENANCY_LIMITS.pendingInvitations; i++) {
      made.push(
        await plain.create(auth, origin, { id: owner.organizationId, email: `p${i}@example.com`, role: "viewer" }),
      );
    }
    await mailIdle();
    const before = await databaseFingerprint(db);
    const error = await rejection(
      plain.create(auth, origin, { id: owner.organizationId, email: "over@example.com", role: "viewer" }),
    );
    expect(error.status).toBe(429);
    expect(error.retryAfterSeconds).toBeGreaterThan(0);
    expect(await databaseFingerprint(db)).toBe(before);
    await plain.revoke(auth, origin, owner.organizationId, made[0]?.id ?? "");
    await plain.create(auth, origin, { id: owner.organizationId, email: "room@example.com", role: "viewer" });
  });

  it("accepts only by the invited email, once: another email 403, twice 410, revoked 410, expired 410, unknown 404", async () => {
    const owner = await makeUser(db);
    const plain = serviceWith(false);
    const auth = claimsOf(owner.userId, owner.organizationId);
    const child = (await makeChildOrganization(db, owner.organizationId)).organizationId;
    const invitee = await makeUser(db);
    const inviteeEmail = (await new MembershipsRepository(queryOf(db)).email(invitee.userId)) ?? "";
    const invite = (role: "technician" | "viewer" = "technician") =>
      plain.create(auth, origin, { id: child, email: inviteeEmail.toUpperCase(), role });

    const first = await invite();
    const other = await makeUser(db);
    await mailIdle();
    const before = await databaseFingerprint(db);
    let error = await rejection(plain.accept(claimsOf(other.userId, other.organizationId), origin, tokenOf(first.url)));
    expect(error.status).toBe(403);
    error = await rejection(plain.accept(claimsOf(invitee.userId, invitee.organizationId), origin, "no-such-token"));
    expect(error.status).toBe(404);
    expect(await databaseFingerprint(db)).toBe(before);

    const accepted = await plain.accept(claimsOf(invitee.userId, invitee.organizationId), origin, tokenOf(first.url));
    expect(accepted).toEqual({ organization_id: child, role: "technician" });
    expect(await memberships.effectiveRole(invitee.userId, child)).toEqual({
      role: "technician",
      teamId: null,
      sourceOrganizationId: child,
    });
    const current = await db.query<{ current_organization_id: string }>(
      "select current_organization_id from users where id = $1",
      [invitee.userId],
    );
    expect(current[0]?.current_organization_id).toBe(child);
    error = await rejection(plain.accept(claimsOf(invitee.userId, child), origin, tokenOf(first.url)));
    expect(error.status).toBe(410);

    const revoked = await invite("viewer");
    await plain.revoke(auth, origin, child, revoked.id);
    expect((await rejection(plain.accept(claimsOf(invitee.userId, child), origin, tokenOf(revoked.url)))).status).toBe(
      410,
    );
    expect((await rejection(plain.revoke(auth, origin, child, revoked.id))).status).toBe(404);

    const expiring = await invite("viewer");
    clock.advance(7 * DAY - 1);
    expect((await plain.list(auth, child)).data.map((i) => i.id)).toContain(expiring.id);
    clock.advance(1);
    expect((await rejection(plain.accept(claimsOf(invitee.userId, child), origin, tokenOf(expiring.url)))).status).toBe(
      410,
    );
    expect((await plain.list(auth, child)).data.map((i) => i.id)).not.toContain(expiring.id);

    const actions = await db.query<{ action: string }>(
      "select action from audit_log where organization_id = $1 and action in ('member.joined', 'invitation.revoked') order by action",
      [child],
    );
    expect(actions.map((a) => a.action)).toEqual(["invitation.revoked", "member.joined"]);
  });

  it("without SMTP in development, logs the link (and only then)", async () => {
    const owner = await makeUser(db);
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const dev = new InvitationsService({
      db,
      clock,
      memberships,
      publicUrl: () => "http://localhost:3000",
      mail: undefined,
      logLinks: true,
      logger,
    });
    const created = await dev.create(claimsOf(owner.userId, owner.organizationId), origin, {
      id: owner.organizationId,
      email: "dev@example.com",
      role: "viewer",
    });
    expect(lines.some((line) => line.includes(created.url))).toBe(true);
    lines.length = 0;
    const quiet = new InvitationsService({
      ...{ db, clock, memberships },
      publicUrl: () => "x",
      mail: undefined,
      logLinks: false,
      logger,
    });
    await quiet.create(claimsOf(owner.userId, owner.organizationId), origin, {
      id: owner.organizationId,
      email: "prod@example.com",
      role: "viewer",
    });
    expect(lines).toEqual([]);
  });

  it("binds the membership to the invitation's team", async () => {
    const owner = await makeUser(db);
    const plain = serviceWith(false);
    const team = crypto.randomUUID();
    await db.query(
      "insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, 'Field', false, now())",
      [team, owner.organizationId],
    );
    const invitee = await makeUser(db);
    const email = (await new MembershipsRepository(queryOf(db)).email(invitee.userId)) ?? "";
    const created = await plain.create(claimsOf(owner.userId, owner.organizationId), origin, {
      id: owner.organizationId,
      email,
      role: "technician",
      team_id: team,
    });
    expect(created.team_id).toBe(team);
    await plain.accept(claimsOf(invitee.userId, invitee.organizationId), origin, tokenOf(created.url));
    expect(await memberships.effectiveRole(invitee.userId, owner.organizationId)).toMatchObject({ teamId: team });
  });
});
