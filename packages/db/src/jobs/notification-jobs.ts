import type { Query } from "../database.ts";
import type { DeliveryEnqueuer } from "./webhook-jobs.ts";

/** The job engine queue of notification deliveries; a job's data is `{ delivery_id }`. */
export const NOTIFICATION_DELIVERY_QUEUE = "notification.deliver";

/**
 * Queues one notification delivery's job in the caller's transaction (it commits with the row).
 * Its group is the organization, as webhook deliveries: the worker runs only a few of one
 * organization's sends at once (docs/api.md "Alerts and maintenance windows").
 */
export const queueNotificationDelivery = (
  engine: DeliveryEnqueuer,
  delivery: { id: string; organizationId: string },
  query: Query,
) =>
  engine.send(
    NOTIFICATION_DELIVERY_QUEUE,
    { delivery_id: delivery.id },
    { executor: query, group: delivery.organizationId },
  );
