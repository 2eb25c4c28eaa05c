import type { AuditRecord, DeliveryRecord, TWebhookFormat, WebhookRecord } from "@fleet/db";
import { formatIsoUtc, type TWebhook, type TWebhookDelivery } from "@fleet/shared";
import { toAuditEntry } from "../audit-log/audit-log.mapper.ts";

export const toWebhookResponse = (webhook: WebhookRecord): TWebhook => ({
  id: webhook.id,
  url: webhook.url,
  events: webhook.events,
  description: webhook.description,
  format: webhook.format,
  created_at: formatIsoUtc(webhook.createdAt),
  disabled_at: webhook.disabledAt ? formatIsoUtc(webhook.disabledAt) : null,
});

export const toDeliveryResponse = (delivery: DeliveryRecord): TWebhookDelivery => ({
  id: delivery.id,
  webhook_id: delivery.webhookId,
  message_id: delivery.messageId,
  event_type: delivery.eventType,
  status: delivery.status,
  attempts: delivery.attempts,
  created_at: formatIsoUtc(delivery.createdAt),
  last_attempt_at: delivery.lastAttemptAt ? formatIsoUtc(delivery.lastAttemptAt) : null,
  response_status: delivery.responseStatus,
  response_body: delivery.responseBody,
  error: delivery.lastError,
});

/** A Slack incoming-webhook message: one line of text. */
const slackText = (type: string, data: Record<string, unknown>, timestamp: string): string => {
  const target = data.target as { type?: string; id?: string } | undefined;
  const actor = data.actor as { type?: string; id?: string | null } | undefined;
  const parts = [`*${type}*`];
  if (target?.type) parts.push(`${target.type} \`${target.id}\``);
  if (typeof data.router_id === "string" && target?.type !== "router") parts.push(`router \`${data.router_id}\``);
  if (actor?.type) parts.push(`by ${actor.type}${actor.id ? ` \`${actor.id}\`` : ""}`);
  if (typeof data.source_ip === "string") parts.push(`from ${data.source_ip}`);
  parts.push(`at ${timestamp}`);
  return parts.join(" ");
};

/**
 * The body sent for an event: `{"type", "timestamp", "data"}` (docs/api.md "Audit log and
 * webhooks"), or `{"text"}` for `"format": "slack"`.
 */
export const renderEvent = (type: string, at: Date, data: Record<string, unknown>, format: TWebhookFormat): string => {
  const timestamp = formatIsoUtc(at);
  if (format === "slack") return JSON.stringify({ text: slackText(type, data, timestamp) });
  return JSON.stringify({ type, timestamp, data });
};

export const renderAuditEntry = (entry: AuditRecord, format: TWebhookFormat): string =>
  renderEvent(entry.action, entry.occurredAt, toAuditEntry(entry), format);
