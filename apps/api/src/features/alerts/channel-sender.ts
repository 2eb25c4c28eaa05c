import type { TChannelType } from "@fleet/shared";
import nodemailer from "nodemailer";
import { sendWebhook, type WebhookRequest, type WebhookResult } from "../webhooks/webhook-target.ts";
import {
  type AlertMessage,
  renderEmail,
  renderPagerDuty,
  renderSlack,
  renderTeams,
  renderTelegram,
} from "./alert-message.ts";

export interface ChannelSenderOptions {
  /** `WEBHOOK_ALLOW_PRIVATE`: Slack and Teams URLs may reach loopback/private addresses. */
  allowPrivate: boolean;
  /** `SMTP_URL`; unset: email channels cannot be created and their sends fail. */
  smtpUrl: string | undefined;
  /** `MAIL_FROM`. */
  mailFrom: string;
  /** `TELEGRAM_API_BASE` (operator configuration, so trusted like any other it sets). */
  telegramApiBase: string;
  /** `PAGERDUTY_EVENTS_URL`. */
  pagerdutyEventsUrl: string;
  /** One attempt's deadline (connect, send, answer). */
  timeoutMs: number;
  /** The HTTP POST (tests may wrap it); the default checks the address again at send time. */
  post?: (request: WebhookRequest, options: { allowPrivate: boolean; timeoutMs: number }) => Promise<WebhookResult>;
}

export interface SendOutcome {
  ok: boolean;
  /** Why it failed, never holding a secret (no URL path, token or key). */
  error: string | null;
}

/**
 * Sends one rendered message to one channel. Slack and Teams URLs are judged again at send time on
 * the address the socket really uses (`sendWebhook`'s lookup), so DNS that changed since the
 * channel was made cannot reach a private address (docs/api.md "Audit log and webhooks").
 */
export class ChannelSender {
  readonly #o: ChannelSenderOptions;
  #mailer: nodemailer.Transporter | undefined;

  constructor(options: ChannelSenderOptions) {
    this.#o = options;
  }

  async send(
    type: TChannelType,
    config: Record<string, unknown>,
    secret: Record<string, string>,
    message: AlertMessage,
  ): Promise<SendOutcome> {
    switch (type) {
      case "email":
        return this.#email(config.to as string[], message);
      case "slack":
        return this.#post(String(secret.webhook_url), renderSlack(message), this.#o.allowPrivate);
      case "teams":
        return this.#post(String(secret.webhook_url), renderTeams(message), this.#o.allowPrivate);
      case "telegram":
        return this.#post(
          `${this.#o.telegramApiBase.replace(/\/+$/, "")}/bot${secret.bot_token}/sendMessage`,
          renderTelegram(message, String(config.chat_id)),
          true,
        );
      case "pagerduty":
        return this.#post(this.#o.pagerdutyEventsUrl, renderPagerDuty(message, String(secret.routing_key)), true);
    }
  }

  close(): void {
    this.#mailer?.close();
  }

  async #post(url: string, body: unknown, allowPrivate: boolean): Promise<SendOutcome> {
    const post = this.#o.post ?? sendWebhook;
    const result = await post(
      {
        url,
        headers: { "content-type": "application/json", "user-agent": "fleet-alerts/1" },
        body: JSON.stringify(body),
      },
      { allowPrivate, timeoutMs: this.#o.timeoutMs },
    );
    if (result.status !== null && result.status >= 200 && result.status < 300) return { ok: true, error: null };
    // The URL itself is secret (a path, a bot token): only the status or the transport's reason.
    return {
      ok: false,
      error:
        result.status !== null
          ? `answered HTTP ${result.status}`
          : (result.error ?? "no answer").replaceAll(url, "<url>").replace(/bot\d+:[A-Za-z0-9_-]+/g, "bot<token>"),
    };
  }

  async #email(to: string[], message: AlertMessage): Promise<SendOutcome> {
    if (!this.#o.smtpUrl) return { ok: false, error: "SMTP_URL is not set" };
    this.#mailer ??= nodemailer.createTransport({
      url: this.#o.smtpUrl,
      connectionTimeout: this.#o.timeoutMs,
      greetingTimeout: this.#o.timeoutMs,
      socketTimeout: this.#o.timeoutMs,
    });
    const rendered = renderEmail(message);
    try {
      await this.#mailer.sendMail({ from: this.#o.mailFrom, to, ...rendered });
      return { ok: true, error: null };
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      return { ok: false, error: `SMTP: ${text.replace(/\/\/[^@/]*@/g, "//")}`.slice(0, 300) };
    }
  }
}
