import {
  type Database,
  type EngineJob,
  FAIR_DELIVERY_CONCURRENCY,
  FAIR_DELIVERY_PER_ORGANIZATION,
  type JobEngine,
  NOTIFICATION_DELIVERY_QUEUE,
  NotificationsRepository,
  queryOf,
  workFairDeliveries,
} from "@fleet/db";
import type { Clock, TChannelType } from "@fleet/shared";
import type { Logger } from "pino";
import type { SecretBox } from "../webhooks/webhook-secret.ts";
import type { AlertMessage } from "./alert-message.ts";
import type { ChannelSender } from "./channel-sender.ts";

/** A failed send is retried for this long, then given up (docs/api.md "Alerts and maintenance windows"). */
export const NOTIFICATION_RETRY_FOR_MS = 24 * 3_600_000;
/**
 * Retries after the first attempt: with pg-boss's exponential backoff from 5 s capped at one hour,
 * they span a little over 24 hours, so the 24-hour rule decides, not the count.
 */
export const NOTIFICATION_RETRY_LIMIT = 34;
/** Sends in flight at once per API process, of which at most a few of one organization (fair-delivery-jobs.ts). */
export const NOTIFICATION_CONCURRENCY = FAIR_DELIVERY_CONCURRENCY;
export const NOTIFICATION_CONCURRENCY_PER_ORGANIZATION = FAIR_DELIVERY_PER_ORGANIZATION;

type WorkerEngine = Pick<JobEngine, "defineQueue" | "work" | "offWork">;

export interface NotificationWorkerDeps {
  db: Pick<Database, "query" | "transaction">;
  secrets: SecretBox;
  sender: ChannelSender;
  clock: Clock;
  logger: Logger;
  retryDelaySeconds?: number;
  pollingIntervalSeconds?: number;
  concurrency?: number;
  perOrganization?: number;
}

class SendFailed extends Error {}

/**
 * Sends queued notification deliveries (queue `notification.deliver`) off the request path. A
 * delivery already `sent` is never sent again (a job re-run after a crash between the send and
 * its record is the one duplicate at-least-once allows); a failed attempt throws so the queue
 * retries it with backoff, until 24 hours after the delivery was made.
 */
export class NotificationDeliveryWorker {
  readonly #d: Required<NotificationWorkerDeps>;
  #engine: WorkerEngine | undefined;

  constructor(deps: NotificationWorkerDeps) {
    this.#d = {
      retryDelaySeconds: 5,
      pollingIntervalSeconds: 2,
      concurrency: NOTIFICATION_CONCURRENCY,
      perOrganization: NOTIFICATION_CONCURRENCY_PER_ORGANIZATION,
      ...deps,
    };
  }

  async start(engine: WorkerEngine): Promise<void> {
    this.#engine = engine;
    await workFairDeliveries(
      engine,
      {
        name: NOTIFICATION_DELIVERY_QUEUE,
        retryLimit: NOTIFICATION_RETRY_LIMIT,
        retryDelaySeconds: this.#d.retryDelaySeconds,
        retryDelayMaxSeconds: 3_600,
        expireInSeconds: 60,
      },
      {
        concurrency: this.#d.concurrency,
        perOrganization: this.#d.perOrganization,
        pollingIntervalSeconds: this.#d.pollingIntervalSeconds,
      },
      (job) => this.#attempt(job),
    );
  }

  async close(): Promise<void> {
    await this.#engine?.offWork(NOTIFICATION_DELIVERY_QUEUE);
  }

  async #attempt(job: EngineJob<{ delivery_id?: string }>): Promise<void> {
    const repo = new NotificationsRepository(queryOf(this.#d.db));
    const found = await repo.delivery(String(job.data.delivery_id ?? ""));
    // The channel was deleted with its log, or this delivery was sent already.
    if (!found || found.delivery.status === "sent" || found.delivery.status === "suppressed") return;
    const { delivery, channel } = found;
    const secret = channel.secretCiphertext
      ? (JSON.parse(this.#d.secrets.open(channel.secretCiphertext)) as Record<string, string>)
      : {};
    const outcome = await this.#d.sender.send(
      channel.type as TChannelType,
      channel.config,
      secret,
      // Written by this feature from an AlertMessage (alert-engine.ts); read back as written.
      delivery.message as AlertMessage,
    );
    const at = this.#d.clock.now();
    const expired = at.getTime() - delivery.createdAt.getTime() >= NOTIFICATION_RETRY_FOR_MS;
    const last = expired || job.retryCount >= NOTIFICATION_RETRY_LIMIT;
    // A failed attempt reads `failed` at once (with its error), and `sent` if a retry succeeds.
    await repo.recordAttempt(delivery.id, { status: outcome.ok ? "sent" : "failed", error: outcome.error, at });
    if (outcome.ok || last) {
      if (!outcome.ok) this.#d.logger.warn({ deliveryId: delivery.id, channelId: channel.id }, "notification given up");
      return;
    }
    throw new SendFailed(outcome.error ?? "send failed");
  }
}
