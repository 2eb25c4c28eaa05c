import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import { AUDIT_COLUMNS, type AuditRecord, auditFromRow } from "./audit-log.repository.ts";
import { toNumber } from "./sql-values.ts";

export type TWebhookFormat = "standard" | "slack";
export type TDeliveryStatus = "pending" | "succeeded" | "failed";

export interface WebhookRecord {
  id: string;
  organizationId: string;
  /** Set when a team-bound credential made it: it receives only that team's events. */
  teamId: string | null;
  url: string;
  events: string[];
  description: string;
  format: TWebhookFormat;
  secretCiphertext: string;
  createdAt: Date;
  failingSince: Date | null;
  disabledAt: Date | null;
}

export interface NewWebhook {
  organizationId: string;
  teamId: string | null;
  url: string;
  events: readonly string[];
  description: string;
  format: TWebhookFormat;
  secretCiphertext: string;
  createdAt: Date;
}

export interface DeliveryRecord {
  id: string;
  webhookId: string;
  auditId: string | null;
  messageId: string;
  eventType: string;
  body: string;
  status: TDeliveryStatus;
  attempts: number;
  createdAt: Date;
  lastAttemptAt: Date | null;
  responseStatus: number | null;
  responseBody: string | null;
  lastError: string | null;
}

/** What one attempt did to its delivery row. */
export interface DeliveryAttemptRow {
  at: Date;
  status: TDeliveryStatus;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
}

/** A delivery to store: an audit entry's (or a test's, `auditId` null) body for one webhook. */
export interface NewDelivery {
  id: string;
  webhookId: string;
  auditId: string | null;
  eventType: string;
  body: string;
}

type Row = Record<string, unknown>;

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const dateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toNumber(value));
const textOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

const WEBHOOK_COLUMNS = `w.id, w.organization_id, w.team_id, w.url, w.events, w.description, w.format, w.secret_ciphertext,
  ${ms("w.created_at", "created_ms")}, ${ms("w.failing_since", "failing_ms")}, ${ms("w.disabled_at", "disabled_ms")}`;

const DELIVERY_COLUMNS = `d.id, d.webhook_id, d.audit_id, d.message_id, d.event_type, d.body, d.status, d.attempts,
  ${ms("d.created_at", "created_ms")}, ${ms("d.last_attempt_at", "last_attempt_ms")}, d.response_status,
  d.response_body, d.last_error`;

const webhookFromRow = (row: Row): WebhookRecord => ({
  id: String(row.id),
  organizationId: String(row.organization_id),
  teamId: textOrNull(row.team_id),
  url: String(row.url),
  events: (typeof row.events === "string" ? JSON.parse(row.events) : row.events) as string[],
  description: String(row.description),
  format: row.format === "slack" ? "slack" : "standard",
  secretCiphertext: String(row.secret_ciphertext),
  createdAt: new Date(toNumber(row.created_ms)),
  failingSince: dateOrNull(row.failing_ms),
  disabledAt: dateOrNull(row.disabled_ms),
});

const deliveryFromRow = (row: Row): DeliveryRecord => ({
  id: String(row.id),
  webhookId: String(row.webhook_id),
  auditId: textOrNull(row.audit_id),
  messageId: String(row.message_id),
  eventType: String(row.event_type),
  body: String(row.body),
  status: String(row.status) as TDeliveryStatus,
  attempts: toNumber(row.attempts),
  createdAt: new Date(toNumber(row.created_ms)),
  lastAttemptAt: dateOrNull(row.last_attempt_ms),
  responseStatus:
    row.response_status === null || row.response_status === undefined ? null : toNumber(row.response_status),
  responseBody: textOrNull(row.response_body),
  lastError: textOrNull(row.last_error),
});

/** Standard Webhooks message id: stable per delivery, so every retry carries the same one. */
const messageIdOf = (deliveryId: string) => `msg_${deliveryId.replaceAll("-", "")}`;

/**
 * The `webhooks` and `webhook_deliveries` tables and the audit log's outbox column (docs/api.md
 * "Audit log and webhooks"): reads and writes only. Built on the `query` of the caller's
 * transaction (or `queryOf(db)`); the caps, audit entries and delivery jobs are the API's
 * decisions (`WebhooksService`, `WebhookDispatcher`, `WebhookDeliveryWorker`).
 */
export class WebhooksRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /** Locks the organization's row, so parallel creates cannot pass its cap together. */
  async lockOrganization(organizationId: string): Promise<void> {
    await this.#query("select id from organizations where id = $1 for update", [organizationId]);
  }

  async countForOrganization(organizationId: string): Promise<number> {
    const [held] = await this.#query<Row>("select count(*)::int as n from webhooks where organization_id = $1", [
      organizationId,
    ]);
    return toNumber(held?.n ?? 0);
  }

  async insert(input: NewWebhook): Promise<WebhookRecord> {
    const rows = await this.#query<Row>(
      `insert into webhooks as w (id, organization_id, url, events, description, format, secret_ciphertext, created_at,
         team_id)
       values (gen_random_uuid(), $1, $2, $3::jsonb, $4, $5, $6, to_timestamp($7::float8 / 1000.0), $8::uuid)
       returning ${WEBHOOK_COLUMNS}`,
      [
        input.organizationId,
        input.url,
        JSON.stringify(input.events),
        input.description,
        input.format,
        input.secretCiphertext,
        input.createdAt.getTime(),
        input.teamId,
      ],
    );
    const row = rows[0];
    if (!row) throw new Error("webhook insert returned no row");
    return webhookFromRow(row);
  }

  /** Whether any enabled webhook exists (a process starts its delivery worker only then). */
  async anyEnabled(): Promise<boolean> {
    return (await this.#query("select 1 from webhooks where disabled_at is null limit 1")).length > 0;
  }

  /** The organization's webhooks; with `teamId`, only that team's (a team-bound credential's view). */
  async list(organizationId: string, teamId?: string): Promise<WebhookRecord[]> {
    const rows = await this.#query<Row>(
      `select ${WEBHOOK_COLUMNS} from webhooks w where w.organization_id = $1
         and ($2::uuid is null or w.team_id = $2::uuid) order by w.created_at, w.id`,
      [organizationId, teamId ?? null],
    );
    return rows.map(webhookFromRow);
  }

  /** One webhook of the organization (with `teamId`: of that team); null otherwise. */
  async get(organizationId: string, id: string, teamId?: string): Promise<WebhookRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      `select ${WEBHOOK_COLUMNS} from webhooks w where w.id = $1 and w.organization_id = $2
         and ($3::uuid is null or w.team_id = $3::uuid)`,
      [id, organizationId, teamId ?? null],
    );
    return rows[0] ? webhookFromRow(rows[0]) : null;
  }

  /**
   * Deletes the webhook and (by cascade) its delivery log; null when it is not the organization's
   * (with `teamId`: not that team's).
   */
  async delete(
    organizationId: string,
    id: string,
    teamId?: string,
  ): Promise<{ url: string; teamId: string | null } | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      `delete from webhooks where id = $1 and organization_id = $2 and ($3::uuid is null or team_id = $3::uuid)
       returning url, team_id`,
      [id, organizationId, teamId ?? null],
    );
    return rows[0] ? { url: String(rows[0].url), teamId: textOrNull(rows[0].team_id) } : null;
  }

  /** Enabled webhooks of these organizations (the dispatcher's fan-out). */
  async enabledOf(organizationIds: readonly string[]): Promise<WebhookRecord[]> {
    const rows = await this.#query<Row>(
      `select ${WEBHOOK_COLUMNS} from webhooks w where w.organization_id = any($1::uuid[]) and w.disabled_at is null`,
      [organizationIds],
    );
    return rows.map(webhookFromRow);
  }

  /**
   * Stores deliveries, skipping any an earlier pass stored already (one per webhook and audit
   * entry). Returns the ids actually inserted.
   */
  async insertDeliveries(rows: readonly NewDelivery[], now: Date): Promise<string[]> {
    if (rows.length === 0) return [];
    const inserted = await this.#query<{ id: string }>(
      `with v as (
         select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[])
           as v(id, webhook_id, audit_id, message_id, event_type, body)
       )
       insert into webhook_deliveries (id, webhook_id, audit_id, message_id, event_type, body, status, attempts, created_at)
       select v.id, v.webhook_id, v.audit_id, v.message_id, v.event_type, v.body, 'pending', 0, to_timestamp($7::float8 / 1000.0)
       from v
       on conflict (webhook_id, audit_id) do nothing
       returning id`,
      [
        rows.map((r) => r.id),
        rows.map((r) => r.webhookId),
        rows.map((r) => r.auditId),
        rows.map((r) => messageIdOf(r.id)),
        rows.map((r) => r.eventType),
        rows.map((r) => r.body),
        now.getTime(),
      ],
    );
    return inserted.map((r) => String(r.id));
  }

  /** Whether the outbox holds anything (a cheap look before a transaction). */
  async hasUndispatched(): Promise<boolean> {
    return (await this.#query("select 1 from audit_log where dispatched_at is null limit 1")).length > 0;
  }

  /** Up to `limit` undispatched audit entries, oldest first, locked (SKIP LOCKED: processes share the work). */
  async takeUndispatched(limit: number): Promise<AuditRecord[]> {
    const rows = await this.#query<Row>(
      `select ${AUDIT_COLUMNS} from audit_log a where a.dispatched_at is null
       order by a.occurred_at limit $1::int for update skip locked`,
      [limit],
    );
    return rows.map(auditFromRow);
  }

  async markDispatched(auditIds: readonly string[], now: Date): Promise<void> {
    await this.#query(
      "update audit_log set dispatched_at = to_timestamp($2::float8 / 1000.0) where id = any($1::uuid[])",
      [auditIds, now.getTime()],
    );
  }

  /** A delivery with its webhook, for the worker (null when the webhook was deleted). */
  async delivery(id: string): Promise<{ delivery: DeliveryRecord; webhook: WebhookRecord } | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      `select ${DELIVERY_COLUMNS}, w.id as w_id, w.organization_id as w_organization_id, w.team_id as w_team_id,
         w.url as w_url,
         w.events as w_events, w.description as w_description, w.format as w_format,
         w.secret_ciphertext as w_secret_ciphertext, ${ms("w.created_at", "w_created_ms")},
         ${ms("w.failing_since", "w_failing_ms")}, ${ms("w.disabled_at", "w_disabled_ms")}
       from webhook_deliveries d join webhooks w on w.id = d.webhook_id where d.id = $1`,
      [id],
    );
    const row = rows[0];
    if (!row) return null;
    const hook: Row = {};
    for (const [key, value] of Object.entries(row)) if (key.startsWith("w_")) hook[key.slice(2)] = value;
    return { delivery: deliveryFromRow(row), webhook: webhookFromRow(hook) };
  }

  /** The delivery log of one webhook, newest first. */
  async deliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    const rows = await this.#query<Row>(
      `select ${DELIVERY_COLUMNS} from webhook_deliveries d where d.webhook_id = $1
       order by d.created_at desc, d.id desc limit $2::int`,
      [webhookId, limit],
    );
    return rows.map(deliveryFromRow);
  }

  /** Records an attempt on the delivery row (its error cut to the column's 500 characters). */
  async updateDelivery(deliveryId: string, attempt: DeliveryAttemptRow): Promise<void> {
    await this.#query(
      `update webhook_deliveries set status = $2, attempts = attempts + 1, last_attempt_at = to_timestamp($3::float8 / 1000.0),
         response_status = $4, response_body = $5, last_error = $6
       where id = $1`,
      [
        deliveryId,
        attempt.status,
        attempt.at.getTime(),
        attempt.responseStatus,
        attempt.responseBody,
        attempt.error === null ? null : attempt.error.slice(0, 500),
      ],
    );
  }

  /**
   * The webhook's run of failures: cleared by a success, started by the first failure. Returns
   * `failingSince` afterwards.
   */
  async updateFailingSince(webhookId: string, ok: boolean, at: Date): Promise<Date | null> {
    const rows = await this.#query<Row>(
      `update webhooks set failing_since = case when $2::boolean then null
         else coalesce(failing_since, to_timestamp($3::float8 / 1000.0)) end
       where id = $1 returning ${ms("failing_since", "failing_ms")}`,
      [webhookId, ok, at.getTime()],
    );
    return dateOrNull(rows[0]?.failing_ms);
  }

  /** Marks a delivery failed without an attempt (its webhook is disabled). */
  async abandon(deliveryId: string, reason: string): Promise<void> {
    await this.#query(
      "update webhook_deliveries set status = 'failed', last_error = $2 where id = $1 and status = 'pending'",
      [deliveryId, reason],
    );
  }

  /** Disables an enabled webhook; null when it was gone or disabled already. */
  async disable(
    webhookId: string,
    now: Date,
  ): Promise<{ organizationId: string; teamId: string | null; url: string; failingSince: Date | null } | null> {
    const rows = await this.#query<Row>(
      `update webhooks set disabled_at = to_timestamp($2::float8 / 1000.0)
       where id = $1 and disabled_at is null returning organization_id, team_id, url, ${ms("failing_since", "failing_ms")}`,
      [webhookId, now.getTime()],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      organizationId: String(row.organization_id),
      teamId: textOrNull(row.team_id),
      url: String(row.url),
      failingSince: dateOrNull(row.failing_ms),
    };
  }
}
