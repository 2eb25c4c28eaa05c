import {
  type DeliveryEnqueuer,
  type NewDelivery,
  type Query,
  queueWebhookDelivery,
  WebhooksRepository,
} from "@fleet/db";

/**
 * Stores deliveries and queues a job for each one actually stored, all in the caller's
 * transaction, so a delivery row never exists without its job. Used by the dispatcher's fan-out
 * and by `POST /webhooks/{id}/test`. Returns the ids stored.
 */
export const queueDeliveries = async (
  query: Query,
  jobs: DeliveryEnqueuer,
  rows: ReadonlyArray<Omit<NewDelivery, "id"> & { organizationId: string }>,
  now: Date,
): Promise<string[]> => {
  if (rows.length === 0) return [];
  const withIds = rows.map((row) => ({ ...row, id: crypto.randomUUID() }));
  const stored = new Set(await new WebhooksRepository(query).insertDeliveries(withIds, now));
  for (const row of withIds) {
    if (stored.has(row.id)) await queueWebhookDelivery(jobs, row, query);
  }
  return withIds.filter((row) => stored.has(row.id)).map((row) => row.id);
};
