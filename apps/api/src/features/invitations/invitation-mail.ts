import type { JobEngine } from "@fleet/db";
import nodemailer from "nodemailer";
import type { Logger } from "pino";
import type { SecretBox } from "../webhooks/webhook-secret.ts";

/** The durable queue invitation mail goes through: a mail server that is down is retried from here. */
export const INVITATION_MAIL_QUEUE = "invitation.mail";

/** A job's data: the link is sealed, so the queue's table never holds a usable invitation. */
export interface InvitationMailJob {
  invitationId: string;
  to: string;
  organizationName: string;
  inviterEmail: string;
  /** The invitation URL, sealed with the API's SecretBox. */
  sealedUrl: string;
}

export interface InvitationMail {
  to: string;
  subject: string;
  text: string;
}

/** Sends one mail; throws when the server refused or could not be reached (the job is retried). */
export interface Mailer {
  send(mail: InvitationMail): Promise<void>;
  close(): void;
}

/** SMTP through nodemailer (`SMTP_URL`, `MAIL_FROM`). */
export const smtpMailer = (smtpUrl: string, from: string): Mailer => {
  const transport = nodemailer.createTransport(smtpUrl, {
    from,
    // A server that does not answer fails the attempt soon; the queue retries it later.
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  });
  return {
    send: async (mail) => {
      await transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
    close: () => transport.close(),
  };
};

/** The text mail of docs/api.md "Members and invitations": the link, the organization, the inviter. */
export const invitationMail = (job: Omit<InvitationMailJob, "sealedUrl">, url: string): InvitationMail => ({
  to: job.to,
  subject: `You are invited to ${job.organizationName}`,
  text: [
    `${job.inviterEmail} invited you to the organization "${job.organizationName}".`,
    "",
    "Accept the invitation (valid for 7 days, once):",
    url,
    "",
    "If you did not expect this, ignore this mail.",
    "",
  ].join("\n"),
});

export interface MailQueueTiming {
  /** First retry delay in seconds (doubled per attempt). */
  retryDelaySeconds?: number;
  pollingIntervalSeconds?: number;
}

/** Defines the queue and works it in this process: each job opens its link and sends the mail. */
export const workInvitationMail = async (
  jobs: JobEngine,
  deps: { mailer: Mailer; secrets: SecretBox; logger: Logger },
  timing: MailQueueTiming = {},
): Promise<void> => {
  await jobs.defineQueue({
    name: INVITATION_MAIL_QUEUE,
    retryLimit: 12,
    retryDelaySeconds: timing.retryDelaySeconds ?? 30,
    retryBackoff: true,
    retryDelayMaxSeconds: 3600,
    expireInSeconds: 120,
    deadLetter: `${INVITATION_MAIL_QUEUE}.failed`,
  });
  await jobs.work<InvitationMailJob>(
    INVITATION_MAIL_QUEUE,
    { pollingIntervalSeconds: timing.pollingIntervalSeconds ?? 2, localConcurrency: 2 },
    async (job) => {
      const { sealedUrl, ...rest } = job.data;
      try {
        await deps.mailer.send(invitationMail(rest, deps.secrets.open(sealedUrl)));
      } catch (error) {
        // The error names the server's answer, never the link.
        deps.logger.warn(
          {
            invitation_id: rest.invitationId,
            attempt: job.retryCount + 1,
            err: { message: String((error as Error).message) },
          },
          "invitation mail not sent; retried from the queue",
        );
        throw error;
      }
      deps.logger.info({ invitation_id: rest.invitationId }, "invitation mail sent");
    },
  );
};
