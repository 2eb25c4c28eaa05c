import {
  type AuditOrigin,
  type Database,
  type DeliveryEnqueuer,
  insertAuditEntry,
  queryOf,
  type WebhookRecord,
  WebhooksRepository,
} from "@fleet/db";
import {
  AppError,
  type Clock,
  EVENT_LIMITS,
  type TCreateWebhookInput,
  type TWebhook,
  type TWebhookDelivery,
} from "@fleet/shared";
import { queueDeliveries } from "./queue-deliveries.ts";
import { newWebhookSecret, type SecretBox } from "./webhook-secret.ts";
import { checkWebhookUrl } from "./webhook-target.ts";
import { renderEvent, toDeliveryResponse, toWebhookResponse } from "./webhooks.mapper.ts";

export interface WebhooksServiceDeps {
  /** Each use case that writes runs in one transaction of its own; repositories get its `query`. */
  db: Pick<Database, "query" | "transaction">;
  /** Queues the delivery job of `POST /webhooks/{id}/test` inside that transaction. */
  jobs: DeliveryEnqueuer;
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

/**
 * Outbound webhooks of an organization (docs/api.md "Audit log and webhooks"). Creating and
 * deleting are audited in their transaction (`webhook.created`, `webhook.deleted`); the cap of
 * {@link EVENT_LIMITS.webhooksPerOrganization} holds under parallel creates (the organization's row
 * is locked first).
 */
export class WebhooksService {
  readonly #d: WebhooksServiceDeps;
  constructor(deps: WebhooksServiceDeps) {
    this.#d = deps;
  }

  /** `teamId`: the creating credential's team, when it is bound to one; the webhook then belongs to it. */
  async create(
    organizationId: string,
    origin: AuditOrigin,
    input: TCreateWebhookInput,
    teamId?: string,
  ): Promise<TWebhook & { secret: string }> {
    const target = await (this.#d.checkUrl ?? checkWebhookUrl)(input.url, this.#d.allowPrivate);
    if (!target.ok) {
      throw new AppError("validation_failed", `The webhook URL is not allowed: it ${target.message}.`, {
        fields: { url: [target.message] },
      });
    }
    const secret = newWebhookSecret();
    const now = this.#d.clock.now();
    const max = EVENT_LIMITS.webhooksPerOrganization;
    const webhook = await this.#d.db.transaction(async (query): Promise<WebhookRecord | null> => {
      const webhooks = new WebhooksRepository(query);
      await webhooks.lockOrganization(organizationId);
      if ((await webhooks.countForOrganization(organizationId)) >= max) return null;
      const created = await webhooks.insert({
        organizationId,
        teamId: teamId ?? null,
        url: target.url.toString(),
        events: input.events.includes("*") ? ["*"] : [...new Set(input.events)],
        description: input.description ?? "",
        format: input.format ?? "standard",
        secretCiphertext: this.#d.secrets.seal(secret),
        createdAt: now,
      });
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: now,
        action: "webhook.created",
        actor: origin.actor,
        teamId: created.teamId,
        sourceIp: origin.sourceIp,
        target: { type: "webhook", id: created.id },
        details: { url: created.url, events: created.events, format: created.format },
      });
      return created;
    });
    if (!webhook) {
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

  /**
   * With `teamId` (a team-bound credential) every method below sees only that team's webhooks:
   * another's answers 404 as another organization's does.
   */
  async list(organizationId: string, teamId?: string): Promise<TWebhook[]> {
    return (await this.#read().list(organizationId, teamId)).map(toWebhookResponse);
  }

  async delete(organizationId: string, id: string, origin: AuditOrigin, teamId?: string): Promise<void> {
    const now = this.#d.clock.now();
    const deleted = await this.#d.db.transaction(async (query) => {
      const removed = await new WebhooksRepository(query).delete(organizationId, id, teamId);
      if (!removed) return false;
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: now,
        action: "webhook.deleted",
        actor: origin.actor,
        teamId: removed.teamId,
        sourceIp: origin.sourceIp,
        target: { type: "webhook", id },
        details: { url: removed.url },
      });
      return true;
    });
    if (!deleted) throw notFound();
    this.#d.onChange();
  }

  /** Queues a `webhook.test` event to this webhook only; answers the pending delivery. */
  async test(organizationId: string, id: string, teamId?: string): Promise<TWebhookDelivery> {
    const webhook = await this.#read().get(organizationId, id, teamId);
    if (!webhook) throw notFound();
    if (webhook.disabledAt) {
      throw new AppError(
        "conflict",
        "This webhook was disabled after three days of failed deliveries; create it anew.",
      );
    }
    const now = this.#d.clock.now();
    const body = renderEvent("webhook.test", now, { webhook_id: webhook.id, url: webhook.url }, webhook.format);
    // A lazily started job engine must be up before the transaction takes PGlite's only connection.
    await this.#d.jobs.ready?.();
    const delivery = await this.#d.db.transaction(async (query) => {
      const [queued] = await queueDeliveries(
        query,
        this.#d.jobs,
        [{ webhookId: webhook.id, organizationId, auditId: null, eventType: "webhook.test", body }],
        now,
      );
      // A delete between the read and this transaction takes the webhook and its log with it.
      return queued ? ((await new WebhooksRepository(query).delivery(queued))?.delivery ?? null) : null;
    });
    if (!delivery) throw notFound();
    this.#d.onChange();
    return toDeliveryResponse(delivery);
  }

  async deliveries(organizationId: string, id: string, teamId?: string): Promise<TWebhookDelivery[]> {
    const webhooks = this.#read();
    const webhook = await webhooks.get(organizationId, id, teamId);
    if (!webhook) throw notFound();
    return (await webhooks.deliveries(webhook.id, EVENT_LIMITS.deliveryPage)).map(toDeliveryResponse);
  }

  /** Reads outside a transaction. */
  #read(): WebhooksRepository {
    return new WebhooksRepository(queryOf(this.#d.db));
  }
}
