import type { Query } from "../database.ts";
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
 * and neither exists without the other. Its group is the organization: the worker runs only a few
 * of one organization's deliveries at once, so its slow or dead receivers cannot hold every slot
 * (docs/api.md "Audit log and webhooks").
 */
export const queueWebhookDelivery = (
  engine: DeliveryEnqueuer,
  delivery: { id: string; organizationId: string },
  query: Query,
) =>
  engine.send(
    WEBHOOK_DELIVERY_QUEUE,
    { delivery_id: delivery.id },
    { executor: query, group: delivery.organizationId },
  );
