import type { Query } from "../database.ts";
import { queueFairDelivery } from "./fair-delivery-jobs.ts";
import type { DeliveryEnqueuer } from "./webhook-jobs.ts";

/** The job engine queue of notification deliveries; a job's data is `{ delivery_id }`. */
export const NOTIFICATION_DELIVERY_QUEUE = "notification.deliver";

/**
 * Queues one notification delivery's job in the caller's transaction (it commits with the row),
 * grouped by organization as webhook deliveries (fair-delivery-jobs.ts; docs/api.md "Alerts and
 * maintenance windows").
 */
export const queueNotificationDelivery = (
  engine: DeliveryEnqueuer,
  delivery: { id: string; organizationId: string },
  query: Query,
) => queueFairDelivery(engine, NOTIFICATION_DELIVERY_QUEUE, delivery, query);
