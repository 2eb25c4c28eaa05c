import { z } from "zod";
import { queryCursor, queryLimit, successEnvelope } from "./common.schema.ts";
import { stringError, text, textRule } from "../rules/text-rules.ts";
import { ALL_SCOPES } from "./auth.schema.ts";

/** docs/api.md "Authentication" (API keys) and "Audit log and webhooks": limits tests probe at the edges. */
export const EVENT_LIMITS = {
  apiKeyExpiresInDays: { min: 1, max: 365 },
  apiKeyName: 100,
  auditPage: { min: 1, max: 200, default: 50 },
  webhookUrl: 2048,
  webhookDescription: 500,
  webhookEvents: 50,
  /** Webhooks one organization may hold, disabled ones included (the next: 429). */
  webhooksPerOrganization: 20,
  /** Bytes of a webhook target's answer kept in the delivery log. */
  responseBodyBytes: 1024,
  deliveryPage: 100,
} as const;

/** Every audited action (docs/api.md "Audit log and webhooks"). */
export const AUDIT_ACTIONS = [
  "router.enrolled",
  "router.removed",
  "router.offboarded",
  "router.offline",
  "router.online",
  "router.tunnel.up",
  "router.tunnel.down",
  "forward.created",
  "forward.revoked",
  "forward.expired",
  "forward.failed",
  "forward.connection.accepted",
  "forward.connection.denied",
  "api_key.created",
  "api_key.revoked",
  "webhook.created",
  "webhook.deleted",
  "webhook.disabled",
  "router.config.changed",
  "router.access.created",
  "router.access.revoked",
  "router.access.expired",
  "router.access.connection.accepted",
  "router.access.connection.denied",
  "organization.created",
  "organization.updated",
  "organization.deleted",
  "member.invited",
  "member.joined",
  "member.updated",
  "member.removed",
  "invitation.revoked",
  "maintenance.created",
  "maintenance.deleted",
  "change.created",
  "change.approved",
  "change.started",
  "change.paused",
  "change.resumed",
  "change.halted",
  "change.completed",
  "change.cancelled",
  "change.router.succeeded",
  "change.router.failed",
  "change.router.reverted",
  "change.router.skipped_offline",
  "router.resource",
] as const;
export type TAuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * The events a webhook or an alert rule may subscribe to, besides "*": every audited action. A new
 * action is added to {@link AUDIT_ACTIONS} and both accept it.
 */
export const SUBSCRIBABLE_EVENTS = AUDIT_ACTIONS;

/** One subscribed event name: "*" or one of {@link SUBSCRIBABLE_EVENTS}. */
export const ZSubscribedEvent = z.enum(["*", ...SUBSCRIBABLE_EVENTS], {
  error: `must be "*" or one of ${SUBSCRIBABLE_EVENTS.join(", ")}`,
});

const pathId = z
  .string({ error: "must be a string" })
  .min(1, { error: "is required" })
  .max(100, { error: "is not a valid id" });

export const ZIdPath = z.object({ id: pathId });

// ---- API keys ---------------------------------------------------------------------------------

export const ZCreateApiKeyInput = z.object({
  name: text({ min: 1, max: EVENT_LIMITS.apiKeyName, error: stringError }),
  scopes: z
    .array(z.enum(ALL_SCOPES, { error: `must be one of ${ALL_SCOPES.join(", ")}` }), { error: "must be an array" })
    .min(1, { error: "must name at least one scope" })
    .max(ALL_SCOPES.length, { error: `must name at most ${ALL_SCOPES.length} scopes` }),
  expires_in_days: z
    .number({ error: "must be an integer between 1 and 365" })
    .int({ error: "must be an integer between 1 and 365" })
    .min(EVENT_LIMITS.apiKeyExpiresInDays.min, { error: "must be an integer between 1 and 365" })
    .max(EVENT_LIMITS.apiKeyExpiresInDays.max, { error: "must be an integer between 1 and 365" })
    // A pipe keeps trpc-to-openapi from coercing strings into numbers (see forward.schema.ts).
    .transform((value) => value)
    .optional(),
});
export type TCreateApiKeyInput = z.infer<typeof ZCreateApiKeyInput>;

export const ZApiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string().meta({ description: "The key's first characters, to tell keys apart." }),
    scopes: z.array(z.string()),
    created_at: z.string().meta({ description: "ISO 8601, +00:00." }),
    expires_at: z.string().nullable(),
    last_used_at: z.string().nullable().meta({ description: "Updated at most once a minute." }),
  })
  .meta({ id: "ApiKey" });
export type TApiKey = z.infer<typeof ZApiKey>;

export const ZCreatedApiKey = ZApiKey.extend({
  key: z.string().meta({ description: "Shown only in this answer; send it as `Authorization: Bearer <key>`." }),
}).meta({ id: "CreatedApiKey" });
export type TCreatedApiKey = z.infer<typeof ZCreatedApiKey>;

// ---- Audit log --------------------------------------------------------------------------------

export const ZAuditLogQuery = z
  .object({
    limit: queryLimit(EVENT_LIMITS.auditPage).optional(),
    cursor: queryCursor().optional(),
    router_id: textRule(pathId).optional(),
    action: textRule(z.string().max(64, { error: "is not a known action" })).optional(),
  })
  // Every filter is optional: a typed client may call it with no input at all.
  .optional();
export type TAuditLogQuery = NonNullable<z.infer<typeof ZAuditLogQuery>>;

export const ZAuditEntry = z
  .object({
    id: z.string(),
    occurred_at: z.string().meta({ description: "ISO 8601, +00:00." }),
    action: z.string(),
    actor: z.object({ type: z.enum(["user", "api_key", "router", "system"]), id: z.string().nullable() }),
    target: z.object({ type: z.string(), id: z.string() }),
    router_id: z.string().optional(),
    source_ip: z.string().optional(),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "AuditEntry" });
export type TAuditEntry = z.infer<typeof ZAuditEntry>;

export const ZAuditLogPage = successEnvelope(z.array(ZAuditEntry))
  .extend({
    next_cursor: z.string().nullable().meta({ description: "Pass as ?cursor= for the next (older) page." }),
  })
  .meta({ id: "AuditLogPage" });
export type TAuditLogPage = z.infer<typeof ZAuditLogPage>;

// ---- Webhooks ---------------------------------------------------------------------------------

export const ZCreateWebhookInput = z.object({
  url: text({ min: 1, max: EVENT_LIMITS.webhookUrl, error: "is required and must be a URL" }),
  events: z
    .array(ZSubscribedEvent, { error: "must be an array of actions" })
    .min(1, { error: 'must name at least one action (or "*")' })
    .max(EVENT_LIMITS.webhookEvents, { error: `must name at most ${EVENT_LIMITS.webhookEvents} actions` }),
  description: text({ max: EVENT_LIMITS.webhookDescription }).optional(),
  format: z.enum(["standard", "slack"], { error: 'must be "standard" or "slack"' }).optional(),
});
export type TCreateWebhookInput = z.infer<typeof ZCreateWebhookInput>;

export const ZWebhook = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string(),
    format: z.enum(["standard", "slack"]),
    created_at: z.string(),
    disabled_at: z.string().nullable().meta({ description: "Set after three days of failed deliveries." }),
  })
  .meta({ id: "Webhook" });
export type TWebhook = z.infer<typeof ZWebhook>;

export const ZCreatedWebhook = ZWebhook.extend({
  secret: z.string().meta({ description: "`whsec_` + base64; shown only in this answer." }),
}).meta({ id: "CreatedWebhook" });

export const ZWebhookDelivery = z
  .object({
    id: z.string(),
    webhook_id: z.string(),
    message_id: z.string().meta({ description: "The `webhook-id` header, the same on every attempt." }),
    event_type: z.string(),
    status: z.enum(["pending", "succeeded", "failed"]),
    attempts: z.number().int(),
    created_at: z.string(),
    last_attempt_at: z.string().nullable(),
    response_status: z.number().int().nullable(),
    response_body: z.string().nullable().meta({ description: "At most 1 KiB of the answer." }),
    error: z.string().nullable(),
  })
  .meta({ id: "WebhookDelivery" });
export type TWebhookDelivery = z.infer<typeof ZWebhookDelivery>;

// ---- Configuration backups ----------------------------------------------------------------------

/** docs/api.md "Configuration backups": limits tests probe at the edges. */
export const BACKUP_LIMITS = { page: { min: 1, max: 200, default: 50 } } as const;

const routerIdField = pathId;

export const ZTakeBackupInput = z.object({ router_id: routerIdField });
export type TTakeBackupInput = z.infer<typeof ZTakeBackupInput>;

export const ZBackupJob = successEnvelope(z.object({ job_id: z.string() })).meta({ id: "BackupJob" });
export type TBackupJob = z.infer<typeof ZBackupJob>;

export const ZListBackupsInput = z.object({
  router_id: routerIdField,
  limit: queryLimit(BACKUP_LIMITS.page).optional(),
  cursor: queryCursor().optional(),
});
export type TListBackupsInput = z.infer<typeof ZListBackupsInput>;

export const ZBackup = z
  .object({
    id: z.string(),
    created_at: z.string().meta({ description: "When this configuration was first read, ISO 8601 +00:00." }),
    checked_at: z.string().meta({ description: "When it was last read unchanged." }),
    sha256: z.string().meta({ description: "SHA-256 (hex) of the export as `GET .../backups/{id}` serves it." }),
    bytes: z.number().int(),
    lines: z.number().int(),
  })
  .meta({ id: "Backup" });
export type TBackup = z.infer<typeof ZBackup>;

export const ZBackupsPage = successEnvelope(z.array(ZBackup))
  .extend({
    next_cursor: z.string().nullable().meta({ description: "Pass as ?cursor= for the next (older) page." }),
    last_failure: z
      .object({ failed_at: z.string(), reason: z.string() })
      .nullable()
      .meta({ description: "The last backup that failed for good since the last success; null when none." }),
  })
  .meta({ id: "BackupsPage" });
export type TBackupsPage = z.infer<typeof ZBackupsPage>;

export const ZGetBackupInput = z.object({ router_id: routerIdField, id: pathId });
export type TGetBackupInput = z.infer<typeof ZGetBackupInput>;

export const ZDiffBackupInput = z.object({
  router_id: routerIdField,
  id: pathId,
  against: pathId.optional(),
});
export type TDiffBackupInput = z.infer<typeof ZDiffBackupInput>;
