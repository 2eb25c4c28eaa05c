import type { AuditOrigin, WebhooksRepository } from "@fleet/db";
import {
  AppError,
  type Clock,
  EVENT_LIMITS,
  type TCreateWebhookInput,
  type TWebhook,
  type TWebhookDelivery,
} from "@fleet/shared";
import { newWebhookSecret, type SecretBox } from "./webhook-secret.ts";
import { checkWebhookUrl } from "./webhook-target.ts";
import { renderEvent, toDeliveryResponse, toWebhookResponse } from "./webhooks.mapper.ts";

export interface WebhooksServiceDeps {
  webhooks: Pick<WebhooksRepository, "create" | "list" | "get" | "delete" | "queueTest" | "deliveries">;
  secrets: SecretBox;
  clock: Clock;
  /** `WEBHOOK_ALLOW_PRIVATE`. */
  allowPrivate: boolean;
  /** Something was queued or audited: dispatcher and worker need not wait for their poll. */
  onChange: () => void;
  checkUrl?: typeof checkWebhookUrl;
}

const notFound = () => new AppError("not_found", "Webhook not found.");

/** A cap that frees only when the organization deletes a webhook: a retry in a minute is a guess. */
const WEBHOOK_CAP_RETRY_AFTER_SECONDS = 60;

/** Outbound webhooks of an organization (docs/api.md "Audit log and webhooks"). */
export class WebhooksService {
  readonly #d: WebhooksServiceDeps;
  constructor(deps: WebhooksServiceDeps) {
    this.#d = deps;
  }

  async create(
    organizationId: string,
    origin: AuditOrigin,
    input: TCreateWebhookInput,
  ): Promise<TWebhook & { secret: string }> {
    const target = await (this.#d.checkUrl ?? checkWebhookUrl)(input.url, this.#d.allowPrivate);
    if (!target.ok) {
      throw new AppError("validation_failed", `The webhook URL is not allowed: it ${target.message}.`, {
        fields: { url: [target.message] },
      });
    }
    const secret = newWebhookSecret();
    const webhook = await this.#d.webhooks.create(
      {
        organizationId,
        url: target.url.toString(),
        events: input.events.includes("*") ? ["*"] : [...new Set(input.events)],
        description: input.description ?? "",
        format: input.format ?? "standard",
        secretCiphertext: this.#d.secrets.seal(secret),
        createdAt: this.#d.clock.now(),
      },
      origin,
      EVENT_LIMITS.webhooksPerOrganization,
    );
    if (!webhook) {
      const max = EVENT_LIMITS.webhooksPerOrganization;
      throw new AppError(
        "rate_limited",
        `This organization already has ${max} webhooks, the most allowed. Delete one to create another.`,
        {
          extra: { limit: max, retry_after_seconds: WEBHOOK_CAP_RETRY_AFTER_SECONDS },
          retryAfterSeconds: WEBHOOK_CAP_RETRY_AFTER_SECONDS,
        },
      );
    }
    this.#d.onChange();
    return { ...toWebhookResponse(webhook), secret };
  }

  async list(organizationId: string): Promise<TWebhook[]> {
    return (await this.#d.webhooks.list(organizationId)).map(toWebhookResponse);
  }

  async delete(organizationId: string, id: string, origin: AuditOrigin): Promise<void> {
    if (!(await this.#d.webhooks.delete(organizationId, id, this.#d.clock.now(), origin))) throw notFound();
    this.#d.onChange();
  }

  /** Queues a `webhook.test` event to this webhook only; answers the pending delivery. */
  async test(organizationId: string, id: string): Promise<TWebhookDelivery> {
    const webhook = await this.#d.webhooks.get(organizationId, id);
    if (!webhook) throw notFound();
    if (webhook.disabledAt) {
      throw new AppError(
        "conflict",
        "This webhook was disabled after three days of failed deliveries; create it anew.",
      );
    }
    const now = this.#d.clock.now();
    const body = renderEvent("webhook.test", now, { webhook_id: webhook.id, url: webhook.url }, webhook.format);
    const delivery = await this.#d.webhooks.queueTest(webhook.id, "webhook.test", body, now);
    this.#d.onChange();
    return toDeliveryResponse(delivery);
  }

  async deliveries(organizationId: string, id: string): Promise<TWebhookDelivery[]> {
    const webhook = await this.#d.webhooks.get(organizationId, id);
    if (!webhook) throw notFound();
    return (await this.#d.webhooks.deliveries(webhook.id, EVENT_LIMITS.deliveryPage)).map(toDeliveryResponse);
  }
}
