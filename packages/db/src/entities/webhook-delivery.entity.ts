import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Webhook } from "./webhook.entity.ts";

/**
 * One event sent (or being sent) to one webhook: the delivery log of docs/api.md "Audit log and
 * webhooks". `messageId` is the `webhook-id` header, the same on every attempt; `body` is the exact
 * JSON text signed and sent each time. Answer bodies are kept to 1 KiB.
 */
export const WebhookDelivery = defineEntity({
  name: "WebhookDelivery",
  tableName: "webhook_deliveries",
  uniques: [
    // One delivery per (webhook, audit entry): a dispatcher that runs twice cannot send twice.
    { name: "webhook_deliveries_webhook_id_audit_id_unique", properties: ["webhook", "auditId"] },
  ],
  indexes: [{ name: "webhook_deliveries_webhook_id_created_at_index", properties: ["webhook", "createdAt", "id"] }],
  properties: {
    id: p.uuid().primary(),
    webhook: () => p.manyToOne(Webhook).deleteRule("cascade"),
    /** The audit entry delivered; null for `webhook.test`. No foreign key: retention prunes entries. */
    auditId: p.uuid().nullable(),
    messageId: p.string().length(64),
    eventType: p.string().length(64),
    body: p.text(),
    status: p.enum(["pending", "succeeded", "failed"] as const).default("pending"),
    attempts: p.integer().default(0),
    createdAt: p.datetime(),
    lastAttemptAt: p.datetime().nullable(),
    responseStatus: p.integer().nullable(),
    responseBody: p.string().length(1024).nullable(),
    lastError: p.string().length(500).nullable(),
  },
});
export type TWebhookDelivery = InferEntity<typeof WebhookDelivery>;
