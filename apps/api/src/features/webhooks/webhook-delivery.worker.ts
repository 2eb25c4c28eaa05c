import type { JobRecord, JobsRepository, WebhooksRepository } from "@fleet/db";
import { WEBHOOK_DELIVERY_JOB } from "@fleet/db";
import { type Clock, coalescingRunner, EVENT_LIMITS } from "@fleet/shared";
import type { Logger } from "pino";
import { Webhook } from "standardwebhooks";
import type { SecretBox } from "./webhook-secret.ts";
import { sendWebhook, type WebhookRequest, type WebhookResult } from "./webhook-target.ts";

const DAY_MS = 86_400_000;
/** A webhook failing for this long is disabled (docs/api.md "Audit log and webhooks"). */
export const WEBHOOK_DISABLE_AFTER_MS = 3 * DAY_MS;
const MAX_DELAY_MS = 6 * 3_600_000;

/** Exponential backoff with jitter: base * 2^(attempt-1), capped at 6 h, then a random 50-100 % of it. */
export const retryDelayMs = (attempt: number, baseMs: number, random: () => number = Math.random): number => {
  const ceiling = Math.min(MAX_DELAY_MS, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling * (0.5 + random() * 0.5));
};

export interface WebhookWorkerDeps {
  jobs: Pick<JobsRepository, "claim" | "complete" | "fail" | "release">;
  webhooks: Pick<WebhooksRepository, "delivery" | "recordAttempt" | "abandon" | "disable">;
  secrets: SecretBox;
  clock: Clock;
  logger: Logger;
  allowPrivate: boolean;
  send?: (request: WebhookRequest, options: { allowPrivate: boolean; timeoutMs: number }) => Promise<WebhookResult>;
  /** First retry delay; doubles per attempt (tests shrink it). */
  retryBaseMs?: number;
  pollMs?: number;
  /** Deliveries in flight at once: a slow target holds one slot, never the API. */
  concurrency?: number;
  timeoutMs?: number;
}

/**
 * Sends queued deliveries (jobs of kind `webhook.deliver`) in the API process, off the request
 * path. Each attempt signs the stored body anew per Standard Webhooks with the delivery's fixed
 * `webhook-id`; failures go back to the durable queue with backoff; a webhook failing for three
 * days is disabled and audited.
 */
export class WebhookDeliveryWorker {
  readonly #d: Required<WebhookWorkerDeps>;
  readonly workerId = `webhooks-${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
  readonly #timer: NodeJS.Timeout;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #runner = coalescingRunner(() => this.#fill());
  #stopped = false;

  constructor(deps: WebhookWorkerDeps) {
    this.#d = {
      send: sendWebhook,
      retryBaseMs: 5_000,
      pollMs: 1_000,
      concurrency: 8,
      timeoutMs: 10_000,
      ...deps,
    };
    this.#timer = setInterval(() => this.wake(), this.#d.pollMs);
    this.#timer.unref();
  }

  wake(): void {
    if (!this.#stopped) void this.#runner.run();
  }

  /** Stops claiming and waits for the attempts in flight (each bounded by the timeout). */
  async close(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#runner.current();
    await Promise.allSettled([...this.#inFlight]);
  }

  async #fill(): Promise<void> {
    while (!this.#stopped && this.#inFlight.size < this.#d.concurrency) {
      let job: JobRecord | null;
      try {
        job = await this.#d.jobs.claim(this.workerId, this.#d.clock.now(), this.#d.timeoutMs * 3, [
          WEBHOOK_DELIVERY_JOB,
        ]);
      } catch (error) {
        this.#d.logger.warn({ err: error }, "claiming webhook deliveries failed");
        return;
      }
      if (!job) return;
      const running: Promise<void> = this.#attempt(job)
        .catch((error) => this.#d.logger.error({ err: error, jobId: job?.id }, "webhook delivery crashed"))
        .finally(() => {
          this.#inFlight.delete(running);
          this.wake();
        });
      this.#inFlight.add(running);
    }
  }

  async #attempt(job: JobRecord): Promise<void> {
    const { jobs, webhooks, clock } = this.#d;
    const found = await webhooks.delivery(String(job.payload.delivery_id ?? ""));
    if (!found) {
      // The webhook was deleted with its log: nothing left to send.
      await jobs.complete(job.id, this.workerId, clock.now());
      return;
    }
    const { delivery, webhook } = found;
    if (webhook.disabledAt) {
      await webhooks.abandon(delivery.id, "the webhook is disabled");
      await jobs.complete(job.id, this.workerId, clock.now());
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
    const outOfAttempts = job.attempts >= job.maxAttempts;
    const failingSince = await webhooks.recordAttempt(delivery.id, webhook.id, {
      at,
      ok,
      responseStatus: result.status,
      responseBody: result.body === null ? null : result.body.slice(0, EVENT_LIMITS.responseBodyBytes),
      error,
      final: ok || outOfAttempts,
    });
    const now = clock.now();
    if (ok) {
      await jobs.complete(job.id, this.workerId, now);
      return;
    }
    if (failingSince && at.getTime() - failingSince.getTime() >= WEBHOOK_DISABLE_AFTER_MS) {
      if (await webhooks.disable(webhook.id, at, `deliveries failed for three days (last: ${error})`)) {
        this.#d.logger.warn({ webhookId: webhook.id }, "webhook disabled after three days of failures");
      }
      await webhooks.abandon(delivery.id, "the webhook was disabled after three days of failures");
      await jobs.fail(job.id, this.workerId, now, error ?? "failed", { retryInMs: 0, permanent: true });
      return;
    }
    await jobs.fail(job.id, this.workerId, now, error ?? "failed", {
      retryInMs: retryDelayMs(job.attempts, this.#d.retryBaseMs),
    });
  }
}
