import type { Query } from "../database.ts";
import { queueFairDelivery } from "./fair-delivery-jobs.ts";
import type { JobEngine } from "./job-engine.ts";

/** The job engine queue of webhook deliveries; a job's data is `{ delivery_id }`. */
export const WEBHOOK_DELIVERY_QUEUE = "webhook.deliver";

/**
 * Enqueues through the job engine inside the caller's transaction. `ready` (if given) is awaited
 * before the transaction opens: a lazily started engine must not start while a PGlite
 * transaction holds the only connection.
 */
export type DeliveryEnqueuer = Pick<JobEngine, "send"> & { ready?(): Promise<unknown> };

/**
 * Queues one delivery's job in the caller's transaction, so the job commits with the delivery row
 * and neither exists without the other; grouped by organization for fairness (fair-delivery-jobs.ts).
 */
export const queueWebhookDelivery = (
  engine: DeliveryEnqueuer,
  delivery: { id: string; organizationId: string },
  query: Query,
) => queueFairDelivery(engine, WEBHOOK_DELIVERY_QUEUE, delivery, query);
