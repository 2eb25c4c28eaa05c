import { createHash, randomBytes } from "node:crypto";
import {
  type AuditOrigin,
  type InvitationRecord,
  InvitationsRepository,
  insertAuditEntry,
  type JobEngine,
  MembershipsRepository,
  OrganizationsRepository,
  queryOf,
} from "@fleet/db";
import {
  AppError,
  type Clock,
  formatIsoUtc,
  roleRank,
  type TAcceptedInvitation,
  type TCreateInvitationInput,
  type TCreatedInvitation,
  TENANCY_LIMITS,
  type TInvitation,
  type TInvitationList,
} from "@fleet/shared";
import type { Logger } from "pino";
import type { AuthClaims } from "../auth/token-verifier.ts";
import { type MembershipsService, teamOf } from "../members/memberships.service.ts";
import { chainInSubtree, type TenancyDb } from "../organizations/organization-scope.ts";
import type { SecretBox } from "../webhooks/webhook-secret.ts";
import { INVITATION_MAIL_QUEUE, type InvitationMailJob } from "./invitation-mail.ts";

export interface InvitationsServiceDeps {
  db: TenancyDb;
  clock: Clock;
  memberships: MembershipsService;
  /** The API's public base URL (`API_PUBLIC_URL`, else where it listens): links point there. */
  publicUrl(): string;
  /** Set when `SMTP_URL` is: the mail goes through the durable queue, sealed with `secrets`. */
  mail: { jobs: JobEngine; secrets: SecretBox } | undefined;
  /** Development without SMTP: the link is logged, so the flow works offline. */
  logLinks: boolean;
  logger: Logger;
}

const DAY_MS = 86_400_000;
/** A slot frees when an invitation is accepted, revoked or expires, which no clock promises. */
const PENDING_LIMIT_RETRY_AFTER_SECONDS = 60;

export const hashInvitationToken = (token: string): string => createHash("sha256").update(token).digest("hex");

const toInvitation = (record: InvitationRecord): TInvitation => ({
  id: record.id,
  email: record.email,
  role: record.role,
  team_id: record.teamId,
  expires_at: formatIsoUtc(record.expiresAt),
  created_at: formatIsoUtc(record.createdAt),
});

/** Invitations into an organization with a role (docs/api.md "Members and invitations"). */
export class InvitationsService {
  readonly #d: InvitationsServiceDeps;
  constructor(deps: InvitationsServiceDeps) {
    this.#d = deps;
  }

  async create(auth: AuthClaims, origin: AuditOrigin, input: TCreateInvitationInput): Promise<TCreatedInvitation> {
    const organizationId = input.id;
    await chainInSubtree(queryOf(this.#d.db), auth.organizationId, organizationId);
    const mine = await this.#d.memberships.requireManager(auth, organizationId);
    this.#d.memberships.assertMayGrant(mine, input.role);
    const token = randomBytes(32).toString("base64url");
    const url = `${this.#d.publicUrl()}/console/invitations/${token}`;
    const now = this.#d.clock.now();
    // As written (answered and mailed so); accepting compares it case-insensitively.
    const email = input.email;
    const { record, organizationName } = await this.#d.db.transaction(async (query) => {
      const chain = await chainInSubtree(query, auth.organizationId, organizationId);
      // Locked first, so parallel invitations cannot all see room for one more.
      await new OrganizationsRepository(query).lock(organizationId);
      const teamId = input.team_id === undefined ? null : await teamOf(query, organizationId, input.team_id, "team_id");
      const invitations = new InvitationsRepository(query);
      if ((await invitations.countPending(organizationId, now)) >= TENANCY_LIMITS.pendingInvitations) {
        throw new AppError(
          "rate_limited",
          `This organization already has ${TENANCY_LIMITS.pendingInvitations} pending invitations: revoke one first.`,
          { extra: { limit: TENANCY_LIMITS.pendingInvitations }, retryAfterSeconds: PENDING_LIMIT_RETRY_AFTER_SECONDS },
        );
      }
      const record = await invitations.insert({
        id: crypto.randomUUID(),
        organizationId,
        email,
        role: input.role,
        teamId,
        tokenHash: hashInvitationToken(token),
        invitedBy: auth.userId,
        createdAt: now,
        expiresAt: new Date(now.getTime() + TENANCY_LIMITS.invitationDays * DAY_MS),
      });
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: now,
        action: "member.invited",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "invitation", id: record.id },
        details: { email, role: input.role, team_id: teamId, expires_at: formatIsoUtc(record.expiresAt) },
      });
      const organizationName = chain[0]?.name ?? "";
      const mail = this.#d.mail;
      if (mail) {
        // Queued in this transaction: the invitation never exists without its mail on the way.
        const inviter = await new MembershipsRepository(query).email(auth.userId);
        const job: InvitationMailJob = {
          invitationId: record.id,
          to: email,
          organizationName,
          inviterEmail: inviter ?? "An administrator",
          sealedUrl: mail.secrets.seal(url),
        };
        await mail.jobs.send(INVITATION_MAIL_QUEUE, job, { executor: query });
      }
      return { record, organizationName };
    });
    if (!this.#d.mail && this.#d.logLinks) {
      this.#d.logger.info(
        { invitation_id: record.id, organization: organizationName, email, url },
        "invitation link (no SMTP_URL: not mailed)",
      );
    }
    return { ...toInvitation(record), url };
  }

  async list(auth: AuthClaims, organizationId: string): Promise<TInvitationList> {
    const query = queryOf(this.#d.db);
    await chainInSubtree(query, auth.organizationId, organizationId);
    await this.#d.memberships.requireManager(auth, organizationId);
    const pending = await new InvitationsRepository(query).listPending(organizationId, this.#d.clock.now());
    return { data: pending.map(toInvitation) };
  }

  async revoke(auth: AuthClaims, origin: AuditOrigin, organizationId: string, invitationId: string): Promise<void> {
    await chainInSubtree(queryOf(this.#d.db), auth.organizationId, organizationId);
    const mine = await this.#d.memberships.requireManager(auth, organizationId);
    const now = this.#d.clock.now();
    await this.#d.db.transaction(async (query) => {
      const invitations = new InvitationsRepository(query);
      const invitation = await invitations.find(organizationId, invitationId);
      if (!invitation || invitation.acceptedAt || invitation.revokedAt || invitation.expiresAt <= now) {
        throw new AppError("not_found", "Invitation not found (or no longer pending).");
      }
      if (roleRank(invitation.role) > roleRank(mine)) {
        throw new AppError("forbidden", "Only an owner revokes an invitation to become an owner.");
      }
      await invitations.revoke(invitation.id, now);
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: now,
        action: "invitation.revoked",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "invitation", id: invitation.id },
        details: { email: invitation.email, role: invitation.role },
      });
    });
  }

  /**
   * Accepts with the credential of the invited person (their email, case-insensitive): the
   * membership exists and the organization becomes their current one. Once.
   */
  async accept(auth: AuthClaims, origin: AuditOrigin, token: string): Promise<TAcceptedInvitation> {
    const now = this.#d.clock.now();
    const result = await this.#d.db.transaction(async (query) => {
      const invitations = new InvitationsRepository(query);
      const invitation = await invitations.findByHashForUpdate(hashInvitationToken(token));
      if (!invitation) throw new AppError("not_found", "Invitation not found.");
      const members = new MembershipsRepository(query);
      const email = auth.credential.type === "token" ? await members.email(auth.userId) : null;
      if (!email || email.toLowerCase() !== invitation.email.toLowerCase()) {
        throw new AppError("forbidden", "This invitation is for another email address: sign in as the invited person.");
      }
      if (invitation.acceptedAt) throw new AppError("gone", "This invitation has already been used.");
      if (invitation.revokedAt) throw new AppError("gone", "This invitation has been revoked.");
      if (invitation.expiresAt <= now) throw new AppError("gone", "This invitation has expired.");
      const existing = await members.find(invitation.organizationId, auth.userId);
      // An invitation never lowers a role the person already holds there.
      const keep = existing !== null && roleRank(existing.role) > roleRank(invitation.role);
      const role = keep && existing ? existing.role : invitation.role;
      const teamId = keep && existing ? existing.teamId : invitation.teamId;
      await members.upsert({
        organizationId: invitation.organizationId,
        userId: auth.userId,
        role,
        teamId,
        createdAt: now,
      });
      await invitations.accept(invitation.id, auth.userId, now);
      await members.setCurrentOrganization(auth.userId, invitation.organizationId);
      await insertAuditEntry(query, {
        organizationId: invitation.organizationId,
        occurredAt: now,
        action: "member.joined",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "user", id: auth.userId },
        details: { email: invitation.email, role, team_id: teamId, invitation_id: invitation.id },
      });
      return { organization_id: invitation.organizationId, role };
    });
    this.#d.memberships.forget(auth.userId);
    return result;
  }
}
