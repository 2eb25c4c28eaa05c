import type { Query } from "../database.ts";
import type { EngineJob, JobEngine } from "./job-engine.ts";
import type { DeliveryEnqueuer } from "./webhook-jobs.ts";

/**
 * Fair delivery to outside receivers, shared by webhook deliveries and notification deliveries
 * (docs/api.md "Audit log and webhooks"; "Alerts and maintenance windows"): each job's group is
 * its organization, and a process runs at most {@link FAIR_DELIVERY_CONCURRENCY} sends at once, of
 * which at most {@link FAIR_DELIVERY_PER_ORGANIZATION} of one organization. One organization's
 * slow or dead receivers hold at most their share of the slots for a timeout each; the rest serve
 * everyone else. Counted per process and exactly (pg-boss's in-memory group count; a job fetched
 * past it goes straight back to the queue), not cluster-wide, where two fetches racing could both
 * pass a database count.
 */
export const FAIR_DELIVERY_CONCURRENCY = 16;
export const FAIR_DELIVERY_PER_ORGANIZATION = 4;

/** A delivery job's data: the row it sends. */
export interface FairDeliveryJob {
  delivery_id?: string;
}

/** How one delivery queue retries; the fairness is the same for every one. */
export interface FairDeliveryQueue {
  name: string;
  /** Attempts after the first; the queue's time rule (not this count) should decide. */
  retryLimit: number;
  /** First retry delay, doubled per attempt (with jitter) up to `retryDelayMaxSeconds`. */
  retryDelaySeconds: number;
  retryDelayMaxSeconds: number;
  /** An attempt still active after this died with its process and is retried. */
  expireInSeconds: number;
}

export interface FairDeliveryWork {
  /** Sends in flight at once in this process. */
  concurrency?: number;
  /** Sends of one organization in flight at once in this process. */
  perOrganization?: number;
  /** Poll period when no notification arrives. */
  pollingIntervalSeconds: number;
}

/**
 * Queues one delivery's job in the caller's transaction (it commits with the delivery row, and
 * neither exists without the other), grouped by its organization.
 */
export const queueFairDelivery = (
  engine: DeliveryEnqueuer,
  queue: string,
  delivery: { id: string; organizationId: string },
  query: Query,
) =>
  engine.send(queue, { delivery_id: delivery.id } satisfies FairDeliveryJob, {
    executor: query,
    group: delivery.organizationId,
  });

/**
 * Defines the queue (retries with backoff, a dead-letter queue, finished jobs kept a week) and
 * works it fairly between organizations with `attempt`, which throws to have a job retried.
 */
export const workFairDeliveries = async (
  engine: Pick<JobEngine, "defineQueue" | "work">,
  queue: FairDeliveryQueue,
  work: FairDeliveryWork,
  attempt: (job: EngineJob<FairDeliveryJob>) => Promise<void>,
): Promise<void> => {
  await engine.defineQueue({
    name: queue.name,
    retryLimit: queue.retryLimit,
    retryDelaySeconds: queue.retryDelaySeconds,
    retryBackoff: true,
    retryDelayMaxSeconds: queue.retryDelayMaxSeconds,
    expireInSeconds: queue.expireInSeconds,
    deadLetter: `${queue.name}.dead`,
    deleteAfterSeconds: 7 * 86_400,
  });
  const concurrency = work.concurrency ?? FAIR_DELIVERY_CONCURRENCY;
  await engine.work<FairDeliveryJob>(
    queue.name,
    {
      localConcurrency: concurrency,
      localGroupConcurrency: Math.min(work.perOrganization ?? FAIR_DELIVERY_PER_ORGANIZATION, concurrency),
      pollingIntervalSeconds: work.pollingIntervalSeconds,
    },
    attempt,
  );
};
