import type { AlertRuleRecord, ChannelRecord, MaintenanceWindowRecord, NotificationDeliveryRecord } from "@fleet/db";
import {
  formatIsoUtc,
  type TAlertRule,
  type TChannel,
  type TChannelType,
  type TMaintenanceWindow,
  type TNotificationDelivery,
} from "@fleet/shared";
import { maskedConfig } from "./channel-config.ts";

export const toChannelResponse = (channel: ChannelRecord, secret: Record<string, string> | null): TChannel => ({
  id: channel.id,
  name: channel.name,
  type: channel.type as TChannelType,
  config: maskedConfig(channel.type as TChannelType, channel.config, secret),
  created_at: formatIsoUtc(channel.createdAt),
});

/** Only attempted or suppressed deliveries are listed (the repository leaves queued ones out). */
export const toNotificationDelivery = (d: NotificationDeliveryRecord): TNotificationDelivery => ({
  id: d.id,
  event: d.event,
  router_id: d.routerId,
  status: d.status === "pending" ? "failed" : d.status,
  attempts: d.attempts,
  error: d.error,
  created_at: formatIsoUtc(d.createdAt),
});

export const toAlertRuleResponse = (rule: AlertRuleRecord): TAlertRule => ({
  id: rule.id,
  name: rule.name,
  events: rule.events,
  routers: rule.routers,
  channels: rule.channelIds,
  min_offline_seconds: rule.minOfflineSeconds,
  quiet_hours: rule.quietHours,
  created_at: formatIsoUtc(rule.createdAt),
});

export const toMaintenanceWindowResponse = (w: MaintenanceWindowRecord): TMaintenanceWindow => ({
  id: w.id,
  name: w.name,
  routers: w.routers,
  starts_at: w.startsAt ? formatIsoUtc(w.startsAt) : null,
  ends_at: w.endsAt ? formatIsoUtc(w.endsAt) : null,
  weekly: w.weekly,
  created_at: formatIsoUtc(w.createdAt),
});

/** The position after a delivery: opaque to clients. */
export const encodeDeliveryCursor = (d: NotificationDeliveryRecord): string =>
  Buffer.from(`${d.createdAt.getTime()}:${d.id}`).toString("base64url");

const CURSOR = /^(\d{1,15}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export const decodeDeliveryCursor = (cursor: string): { createdAt: Date; id: string } | null => {
  const match = CURSOR.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match?.[1] || !match[2]) return null;
  return { createdAt: new Date(Number(match[1])), id: match[2] };
};
