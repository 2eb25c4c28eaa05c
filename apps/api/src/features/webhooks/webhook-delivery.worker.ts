import {
  type Database,
  type EngineJob,
  FAIR_DELIVERY_CONCURRENCY,
  FAIR_DELIVERY_PER_ORGANIZATION,
  insertAuditEntry,
  type JobEngine,
  queryOf,
  SYSTEM_ORIGIN,
  WEBHOOK_DELIVERY_QUEUE,
  WebhooksRepository,
  workFairDeliveries,
} from "@fleet/db";
import { type Clock, EVENT_LIMITS, formatIsoUtc } from "@fleet/shared";
import type { Logger } from "pino";
import { Webhook } from "standardwebhooks";
import type { SecretBox } from "./webhook-secret.ts";
import { sendWebhook, type WebhookRequest, type WebhookResult } from "./webhook-target.ts";
import { countWebhookDelivery } from "../../metrics/api-metrics.ts";

const DAY_MS = 86_400_000;
/** A webhook failing for this long is disabled (docs/api.md "Audit log and webhooks"). */
export const WEBHOOK_DISABLE_AFTER_MS = 3 * DAY_MS;
/**
 * Retries after the first attempt. With pg-boss's exponential backoff (with jitter) from 5 s,
 * capped at 6 h, they span more than three days, so the three-day rule decides, not the count.
 */
export const WEBHOOK_RETRY_LIMIT = 40;
/** Deliveries in flight at once per API process (docs/api.md "Audit log and webhooks"). */
export const WEBHOOK_CONCURRENCY = FAIR_DELIVERY_CONCURRENCY;
/** Of those, at most this many of one organization (fair-delivery-jobs.ts). */
export const WEBHOOK_CONCURRENCY_PER_ORGANIZATION = FAIR_DELIVERY_PER_ORGANIZATION;

type WorkerEngine = Pick<JobEngine, "defineQueue" | "work" | "offWork">;

export interface WebhookWorkerDeps {
  /** An attempt's record and a disable (with its audit entry) each run in one transaction. */
  db: Pick<Database, "query" | "transaction">;
  secrets: SecretBox;
  clock: Clock;
  logger: Logger;
  allowPrivate: boolean;
  send?: (request: WebhookRequest, options: { allowPrivate: boolean; timeoutMs: number }) => Promise<WebhookResult>;
  /** First retry delay in seconds, doubled per attempt by the queue (tests shrink it). */
  retryDelaySeconds?: number;
  /** Poll period of the queue when no notification arrives. */
  pollingIntervalSeconds?: number;
  /** Deliveries in flight at once in this process: a slow target holds one slot, never the API. */
  concurrency?: number;
  /**
   * Deliveries of one organization in flight at once in this process: however many slow or dead
   * receivers an organization has, the other slots stay free for the others.
   */
  perOrganization?: number;
  timeoutMs?: number;
}

class DeliveryFailed extends Error {}

/**
 * Sends queued deliveries (queue `webhook.deliver` of the job engine) in the API process, off the
 * request path. Each attempt signs the stored body anew per Standard Webhooks with the delivery's
 * fixed `webhook-id`; a failed attempt throws, so the queue retries it with backoff; a webhook
 * failing for three days is disabled and audited.
 */
export class WebhookDeliveryWorker {
  readonly #d: Required<WebhookWorkerDeps>;
  #engine: WorkerEngine | undefined;

  constructor(deps: WebhookWorkerDeps) {
    this.#d = {
      send: sendWebhook,
      retryDelaySeconds: 5,
      pollingIntervalSeconds: 2,
      concurrency: WEBHOOK_CONCURRENCY,
      perOrganization: WEBHOOK_CONCURRENCY_PER_ORGANIZATION,
      timeoutMs: 10_000,
      ...deps,
    };
  }

  async start(engine: WorkerEngine): Promise<void> {
    this.#engine = engine;
    await workFairDeliveries(
      engine,
      {
        name: WEBHOOK_DELIVERY_QUEUE,
        retryLimit: WEBHOOK_RETRY_LIMIT,
        retryDelaySeconds: this.#d.retryDelaySeconds,
        retryDelayMaxSeconds: 6 * 3_600,
        // An attempt lasts at most the timeout; one still "active" long after died with its process.
        expireInSeconds: Math.ceil((this.#d.timeoutMs * 3) / 1000),
      },
      {
        concurrency: this.#d.concurrency,
        perOrganization: this.#d.perOrganization,
        pollingIntervalSeconds: this.#d.pollingIntervalSeconds,
      },
      (job) => this.#attempt(job),
    );
  }

  /** Stops taking deliveries and waits for the attempts in flight (each bounded by the timeout). */
  async close(): Promise<void> {
    await this.#engine?.offWork(WEBHOOK_DELIVERY_QUEUE);
  }

  async #attempt(job: EngineJob<{ delivery_id?: string }>): Promise<void> {
    const { clock } = this.#d;
    const webhooks = new WebhooksRepository(queryOf(this.#d.db));
    const found = await webhooks.delivery(String(job.data.delivery_id ?? ""));
    // The webhook was deleted with its log: nothing left to send.
    if (!found) return;
    const { delivery, webhook } = found;
    if (webhook.disabledAt) {
      await webhooks.abandon(delivery.id, "the webhook is disabled");
      return;
    }
    const at = clock.now();
    const signature = new Webhook(this.#d.secrets.open(webhook.secretCiphertext)).sign(
      delivery.messageId,
      at,
      delivery.body,
    );
    const result = await this.#d.send(
      {
        url: webhook.url,
        headers: {
          "content-type": "application/json",
          "user-agent": "fleet-webhooks/1",
          "webhook-id": delivery.messageId,
          "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
          "webhook-signature": signature,
        },
        body: delivery.body,
      },
      { allowPrivate: this.#d.allowPrivate, timeoutMs: this.#d.timeoutMs },
    );
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    const error = ok ? null : (result.error ?? `answered HTTP ${result.status}`);
    const lastAttempt = job.retryCount >= WEBHOOK_RETRY_LIMIT;
    // The delivery's state and the webhook's run of failures (cleared by a success, started by
    // the first failure) change together. The webhook's row first: a DELETE of the webhook locks
    // it before the delivery rows it cascades to, and the other order deadlocks with it.
    const failingSince = await this.#d.db.transaction(async (query) => {
      const tx = new WebhooksRepository(query);
      const since = await tx.updateFailingSince(webhook.id, ok, at);
      await tx.updateDelivery(delivery.id, {
        at,
        status: ok ? "succeeded" : lastAttempt ? "failed" : "pending",
        responseStatus: result.status,
        responseBody: result.body === null ? null : result.body.slice(0, EVENT_LIMITS.responseBodyBytes),
        error,
      });
      return since;
    });
    // docs/operations.md "Metrics and probes": every attempt counts once, by how it ended.
    if (ok) {
      countWebhookDelivery("delivered");
      return;
    }
    if (failingSince && at.getTime() - failingSince.getTime() >= WEBHOOK_DISABLE_AFTER_MS) {
      if (await this.#disable(webhook.id, delivery.id, at, `deliveries failed for three days (last: ${error})`)) {
        this.#d.logger.warn({ webhookId: webhook.id }, "webhook disabled after three days of failures");
      }
      countWebhookDelivery("dead");
      return;
    }
    countWebhookDelivery(lastAttempt ? "dead" : "failed");
    throw new DeliveryFailed(error ?? "delivery failed");
  }

  /**
   * Disables a webhook after its failures ran too long, audited once (`webhook.disabled`), and
   * fails the delivery that found it out in the same transaction: nobody sees a disabled webhook
   * whose last delivery still looks pending.
   */
  #disable(webhookId: string, deliveryId: string, now: Date, reason: string): Promise<boolean> {
    return this.#d.db.transaction(async (query) => {
      const webhooks = new WebhooksRepository(query);
      const disabled = await webhooks.disable(webhookId, now);
      await webhooks.abandon(deliveryId, "the webhook was disabled after three days of failures");
      if (!disabled) return false;
      await insertAuditEntry(query, {
        organizationId: disabled.organizationId,
        occurredAt: now,
        action: "webhook.disabled",
        actor: SYSTEM_ORIGIN.actor,
        teamId: disabled.teamId,
        target: { type: "webhook", id: webhookId },
        details: {
          url: disabled.url,
          reason,
          failing_since: disabled.failingSince ? formatIsoUtc(disabled.failingSince) : null,
        },
      });
      return true;
    });
  }
}
