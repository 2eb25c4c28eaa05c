import { dataDirSecret } from "@fleet/runtime";
import {
  INVITATION_MAIL_QUEUE,
  type Mailer,
  type MailQueueTiming,
  smtpMailer,
  workInvitationMail,
} from "../features/invitations/invitation-mail.ts";
import { InvitationsService } from "../features/invitations/invitations.service.ts";
import type { MembershipsService } from "../features/members/memberships.service.ts";
import { OrganizationsService } from "../features/organizations/organizations.service.ts";
import { TeamsService } from "../features/teams/teams.service.ts";
import { SecretBox } from "../features/webhooks/webhook-secret.ts";
import type { Wired, WiringContext } from "./wiring.ts";

export interface TenancyServices {
  organizationTree: OrganizationsService;
  invitations: InvitationsService;
  teamAdmin: TeamsService;
}

export interface TenancyOptions {
  memberships: MembershipsService;
  /** The API's public base URL (`API_PUBLIC_URL`, else where it listens). */
  publicUrl(): string;
  /** Mail retry timing (tests shrink it). */
  mailTiming?: MailQueueTiming;
}

/** The organization tree, invitations (and their mail) and teams (docs/api.md "Organizations, members and invitations"). */
export const wireTenancy = async (
  { config, db, jobs, logger, clock }: WiringContext,
  options: TenancyOptions,
): Promise<Wired<TenancyServices>> => {
  const { memberships } = options;
  let mailer: Mailer | undefined;
  let mail: { jobs: typeof jobs; secrets: SecretBox } | undefined;
  if (config.mail.smtpUrl && config.mail.from) {
    mailer = smtpMailer(config.mail.smtpUrl, config.mail.from);
    // The link in a queued mail is sealed with the key of webhook secrets at rest: a dump of the
    // job table alone opens no invitation.
    const secrets = new SecretBox(
      config.events.webhookEncryptionKey ?? dataDirSecret(config.dataDir, "webhookEncryption"),
    );
    await workInvitationMail(
      jobs,
      { mailer, secrets, logger: logger.child({ part: "invitation-mail" }) },
      options.mailTiming,
    );
    mail = { jobs, secrets };
  }
  return {
    services: {
      organizationTree: new OrganizationsService({ db, clock, memberships }),
      invitations: new InvitationsService({
        db,
        clock,
        memberships,
        publicUrl: options.publicUrl,
        mail,
        logLinks: config.development,
        logger: logger.child({ feature: "invitations" }),
      }),
      teamAdmin: new TeamsService({ db, clock, memberships }),
    },
    schedules: [],
    close: async () => {
      if (mailer) {
        await jobs.offWork(INVITATION_MAIL_QUEUE);
        mailer.close();
      }
    },
  };
};
