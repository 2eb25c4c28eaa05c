import { z } from "zod";
import { isKnownTimeZone } from "../rules/date-format.ts";
import { stringError, text } from "../rules/text-rules.ts";
import { queryCursor, queryLimit, successEnvelope } from "./common.schema.ts";
import { parseClock, WEEKDAYS } from "../rules/zoned-time.ts";
import { ZRouterTag } from "./router.schema.ts";
import { ZSubscribedEvent } from "./events.schema.ts";

/** docs/api.md "Alerts and maintenance windows": limits tests probe at the edges. */
export const ALERT_LIMITS = {
  name: 100,
  /** Channels of one organization (the 51st: 429). */
  channelsPerOrganization: 50,
  /** Alert rules of one organization (the 101st: 429). */
  rulesPerOrganization: 100,
  /** Maintenance windows of one organization (the 101st: 429). */
  windowsPerOrganization: 100,
  /** Recipients of one email channel. */
  recipients: 20,
  url: 2048,
  ruleEvents: 50,
  ruleChannels: 50,
  selectorRouterIds: 500,
  selectorTags: 20,
  minOfflineSeconds: 86_400,
  /** A weekly window lasts at most a week. */
  windowMinutes: 10_080,
  deliveryPage: { min: 1, max: 100, default: 50 },
} as const;

export const CHANNEL_TYPES = ["email", "slack", "teams", "telegram", "pagerduty"] as const;
export type TChannelType = (typeof CHANNEL_TYPES)[number];

const required = (what: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? "is required" : what),
});
const anId = text({ min: 1, max: 100, error: stringError });
const url = text({ min: 1, max: ALERT_LIMITS.url, error: "is required and must be a URL" });
/** An address as SMTP takes it: no spaces, one @, a dotted domain (the server has the last word). */
const emailAddress = text({ min: 3, max: 254, error: stringError }).refine(
  (v) => /^[^\s@<>(),;:"\\[\]]+@[^\s@<>(),;:"\\[\]]+\.[^\s@<>(),;:"\\[\]]+$/.test(v),
  { error: "must be an email address" },
);

/** `config` of each channel type (docs/api.md "Alerts and maintenance windows"). */
export const CHANNEL_CONFIGS = {
  email: z.object({
    to: z
      .array(emailAddress, required("must be an array of email addresses"))
      .min(1, { error: "must name at least one recipient" })
      .max(ALERT_LIMITS.recipients, { error: `must name at most ${ALERT_LIMITS.recipients} recipients` }),
  }),
  slack: z.object({ webhook_url: url }),
  teams: z.object({ webhook_url: url }),
  telegram: z.object({
    bot_token: text({ min: 1, max: 200, error: stringError }).refine(
      // It goes into the API's path: digits, a colon and URL-safe characters only.
      (v) => /^\d{1,20}:[A-Za-z0-9_-]{1,100}$/.test(v),
      {
        error: "must be a bot token (<digits>:<key>)",
      },
    ),
    chat_id: z
      .union([z.string(), z.number().int()], required("must be a chat id or @channel name"))
      .transform((v) => String(v))
      .refine((v) => /^(-?\d{1,20}|@[A-Za-z0-9_]{4,64})$/.test(v), { error: "must be a chat id or @channel name" }),
  }),
  pagerduty: z.object({
    routing_key: text({ min: 1, max: 64, error: stringError }).refine((v) => /^[A-Za-z0-9_-]{1,64}$/.test(v), {
      error: "must be an Events API v2 integration key (letters, digits, - and _)",
    }),
  }),
} as const;
export type TChannelConfig = {
  [K in TChannelType]: { type: K; config: z.output<(typeof CHANNEL_CONFIGS)[K]> };
}[TChannelType];

const channelName = text({ min: 1, max: ALERT_LIMITS.name, error: stringError });

/** Checks `config` against the schema of `type`, reporting under `config.<field>`. */
const refineConfig = (
  type: TChannelType,
  config: unknown,
  ctx: z.RefinementCtx,
): Record<string, unknown> | undefined => {
  const parsed = CHANNEL_CONFIGS[type].safeParse(config);
  if (parsed.success) return parsed.data as Record<string, unknown>;
  for (const issue of parsed.error.issues) {
    ctx.addIssue({ code: "custom", path: ["config", ...issue.path.map(String)], message: issue.message });
  }
  return undefined;
};

export const ZCreateChannelInput = z
  .object({
    name: channelName,
    type: z.enum(CHANNEL_TYPES, { error: `must be one of ${CHANNEL_TYPES.join(", ")}` }),
    config: z.record(z.string(), z.unknown(), { error: "must be an object" }),
  })
  .superRefine((input, ctx) => {
    refineConfig(input.type, input.config, ctx);
  })
  .transform(
    (input) =>
      ({ ...input, config: CHANNEL_CONFIGS[input.type].parse(input.config) }) as { name: string } & TChannelConfig,
  );
export type TCreateChannelInput = z.output<typeof ZCreateChannelInput>;

/** PATCH: `name`, and `config` replaced whole (a secret field sent back as its mask keeps its value). */
export const ZUpdateChannelBody = z.object({
  name: channelName.optional(),
  config: z.record(z.string(), z.unknown(), { error: "must be an object" }).optional(),
});
export const ZUpdateChannelInput = ZUpdateChannelBody.extend({ id: anId });
export type TUpdateChannelInput = z.infer<typeof ZUpdateChannelInput>;

/** Validates a PATCH's whole config against the channel's type (the type comes from the stored channel). */
export const parseChannelConfig = (
  type: TChannelType,
  config: unknown,
): { ok: true; config: Record<string, unknown> } | { ok: false; errors: Record<string, string[]> } => {
  const parsed = CHANNEL_CONFIGS[type].safeParse(config);
  if (parsed.success) return { ok: true, config: parsed.data as Record<string, unknown> };
  const errors: Record<string, string[]> = {};
  for (const issue of parsed.error.issues) {
    const key = ["config", ...issue.path.map(String)].join(".");
    errors[key] = [...(errors[key] ?? []), issue.message];
  }
  return { ok: false, errors };
};

export const ZChannel = z
  .object({
    id: z.string(),
    name: z.string(),
    type: z.enum(CHANNEL_TYPES),
    config: z
      .record(z.string(), z.unknown())
      .meta({ description: "Secrets (bot_token, routing_key, webhook URL paths) masked." }),
    created_at: z.string().meta({ description: "ISO 8601, +00:00." }),
  })
  .meta({ id: "NotificationChannel" });
export type TChannel = z.infer<typeof ZChannel>;

/**
 * What the delivery log shows (docs/api.md "Alerts and maintenance windows"): a queued delivery
 * appears after its first attempt; while it is retried it reads `failed` with its attempts and last
 * error, and `sent` once a retry gets through.
 */
export const DELIVERY_STATUSES = ["sent", "failed", "suppressed"] as const;

export const ZNotificationDelivery = z
  .object({
    id: z.string(),
    event: z.string(),
    router_id: z.string().nullable(),
    status: z
      .enum(DELIVERY_STATUSES)
      .meta({ description: "failed: the last attempt failed; it is retried for 24 hours and may turn sent." }),
    attempts: z.number().int(),
    error: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: "NotificationDelivery" });
export type TNotificationDelivery = z.infer<typeof ZNotificationDelivery>;

/** `POST .../test`: the test message is queued; its delivery shows in the log after its attempt. */
export const ZQueuedNotification = z
  .object({ id: z.string(), event: z.string(), created_at: z.string() })
  .meta({ id: "QueuedNotification" });
export type TQueuedNotification = z.infer<typeof ZQueuedNotification>;

export const ZDeliveriesQuery = z.object({
  id: anId,
  limit: queryLimit(ALERT_LIMITS.deliveryPage).optional(),
  cursor: queryCursor().optional(),
});
export type TDeliveriesQuery = z.infer<typeof ZDeliveriesQuery>;

export const ZDeliveriesPage = successEnvelope(z.array(ZNotificationDelivery))
  .extend({
    next_cursor: z.string().nullable().meta({ description: "Pass as ?cursor= for the next (older) page." }),
  })
  .meta({ id: "NotificationDeliveriesPage" });
export type TDeliveriesPage = z.infer<typeof ZDeliveriesPage>;

// ---- Router selection (rules and windows) ------------------------------------------------------

export const ZRouterSelector = z
  .object({
    team_id: anId.optional(),
    tags: z
      .array(ZRouterTag, { error: "must be an array of strings" })
      .max(ALERT_LIMITS.selectorTags, { error: `must hold at most ${ALERT_LIMITS.selectorTags} tags` })
      .optional(),
    router_ids: z
      .array(anId, { error: "must be an array of router ids" })
      .max(ALERT_LIMITS.selectorRouterIds, { error: `must hold at most ${ALERT_LIMITS.selectorRouterIds} ids` })
      .optional(),
  })
  .meta({
    id: "RouterSelector",
    description: "Every condition given must hold (tags: any of them); none: every router of the organization.",
  });
export type TRouterSelector = z.infer<typeof ZRouterSelector>;

const clock = z
  .string(required('must be a time "HH:MM"'))
  .refine((v) => parseClock(v) !== null, { error: 'must be a time "HH:MM"' });
const timezone = z
  .string(required("must be an IANA time zone"))
  .max(64, { error: "must be an IANA time zone" })
  .refine((v) => isKnownTimeZone(v), { error: "must be an IANA time zone such as Europe/Paris" });

export const ZQuietHours = z.object({ timezone, from: clock, to: clock }).meta({ id: "QuietHours" });

// ---- Alert rules --------------------------------------------------------------------------------

const ruleFields = {
  name: text({ min: 1, max: ALERT_LIMITS.name, error: stringError }),
  events: z
    .array(ZSubscribedEvent, required("must be an array of event names"))
    .min(1, { error: "must name at least one event" })
    .max(ALERT_LIMITS.ruleEvents, { error: `must name at most ${ALERT_LIMITS.ruleEvents} events` }),
  routers: ZRouterSelector.optional(),
  channels: z
    .array(anId, required("must be an array of channel ids"))
    .min(1, { error: "must name at least one channel" })
    .max(ALERT_LIMITS.ruleChannels, { error: `must name at most ${ALERT_LIMITS.ruleChannels} channels` }),
  min_offline_seconds: z
    .number({ error: "must be an integer between 0 and 86400" })
    .int({ error: "must be an integer between 0 and 86400" })
    .min(0, { error: "must be an integer between 0 and 86400" })
    .max(ALERT_LIMITS.minOfflineSeconds, { error: "must be an integer between 0 and 86400" })
    // A pipe keeps trpc-to-openapi from coercing "60" or true into a number (see forward.schema.ts).
    .transform((value) => value)
    .optional(),
  quiet_hours: ZQuietHours.nullable().optional(),
};

export const ZCreateAlertRuleInput = z.object(ruleFields);
export type TCreateAlertRuleInput = z.infer<typeof ZCreateAlertRuleInput>;

export const ZUpdateAlertRuleBody = z.object({
  name: ruleFields.name.optional(),
  events: ruleFields.events.optional(),
  routers: ZRouterSelector.optional(),
  channels: ruleFields.channels.optional(),
  min_offline_seconds: ruleFields.min_offline_seconds,
  quiet_hours: ruleFields.quiet_hours,
});
export const ZUpdateAlertRuleInput = ZUpdateAlertRuleBody.extend({ id: anId });
export type TUpdateAlertRuleInput = z.infer<typeof ZUpdateAlertRuleInput>;

export const ZAlertRule = z
  .object({
    id: z.string(),
    name: z.string(),
    events: z.array(z.string()),
    routers: ZRouterSelector,
    channels: z.array(z.string()),
    min_offline_seconds: z.number().int(),
    quiet_hours: ZQuietHours.nullable(),
    created_at: z.string(),
  })
  .meta({ id: "AlertRule" });
export type TAlertRule = z.infer<typeof ZAlertRule>;

// ---- Maintenance windows ------------------------------------------------------------------------

const instant = z
  .string(required("must be an ISO 8601 date-time"))
  .max(40, { error: "must be an ISO 8601 date-time" })
  .refine(
    (v) => /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,9})?)?(Z|[+-]\d\d:?\d\d)$/.test(v) && !Number.isNaN(Date.parse(v)),
    {
      error: "must be an ISO 8601 date-time with an offset, such as 2026-12-01T22:00:00Z",
    },
  );

export const ZWeeklySchedule = z
  .object({
    timezone,
    days: z
      .array(z.enum(WEEKDAYS, { error: `must be one of ${WEEKDAYS.join(", ")}` }), required("must be an array of days"))
      .min(1, { error: "must name at least one day" })
      .max(7, { error: "must name at most 7 days" }),
    from: clock,
    duration_minutes: z
      .number({ error: `must be an integer between 1 and ${ALERT_LIMITS.windowMinutes}` })
      .int({ error: `must be an integer between 1 and ${ALERT_LIMITS.windowMinutes}` })
      .min(1, { error: `must be an integer between 1 and ${ALERT_LIMITS.windowMinutes}` })
      .max(ALERT_LIMITS.windowMinutes, { error: `must be an integer between 1 and ${ALERT_LIMITS.windowMinutes}` }),
  })
  .meta({ id: "WeeklySchedule" });

export const ZCreateMaintenanceWindowInput = z
  .object({
    name: text({ min: 1, max: ALERT_LIMITS.name, error: stringError }),
    routers: ZRouterSelector.optional(),
    starts_at: instant.optional(),
    ends_at: instant.optional(),
    // As answered, but a JSON number only (the answer's schema may hold no pipe; see forward.schema.ts).
    weekly: ZWeeklySchedule.extend({ duration_minutes: ZWeeklySchedule.shape.duration_minutes.transform((v) => v) })
      .meta({ id: "WeeklyScheduleInput" })
      .optional(),
  })
  .superRefine((input, ctx) => {
    if (input.weekly) {
      for (const key of ["starts_at", "ends_at"] as const) {
        if (input[key] !== undefined)
          ctx.addIssue({ code: "custom", path: [key], message: "must be left out with weekly" });
      }
      return;
    }
    if (input.starts_at === undefined)
      ctx.addIssue({ code: "custom", path: ["starts_at"], message: "is required (or weekly)" });
    if (input.ends_at === undefined)
      ctx.addIssue({ code: "custom", path: ["ends_at"], message: "is required (or weekly)" });
    if (input.starts_at && input.ends_at && Date.parse(input.ends_at) <= Date.parse(input.starts_at)) {
      ctx.addIssue({ code: "custom", path: ["ends_at"], message: "must be after starts_at" });
    }
  });
export type TCreateMaintenanceWindowInput = z.infer<typeof ZCreateMaintenanceWindowInput>;

export const ZMaintenanceWindow = z
  .object({
    id: z.string(),
    name: z.string(),
    routers: ZRouterSelector,
    starts_at: z.string().nullable(),
    ends_at: z.string().nullable(),
    weekly: ZWeeklySchedule.nullable(),
    created_at: z.string(),
  })
  .meta({ id: "MaintenanceWindow" });
export type TMaintenanceWindow = z.infer<typeof ZMaintenanceWindow>;
