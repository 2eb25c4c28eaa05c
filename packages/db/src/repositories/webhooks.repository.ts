import { formatIsoUtc, isUuid } from "@fleet/shared";
import type { Database } from "../database.ts";
import type { JobEngine } from "../jobs/job-engine.ts";
import type { Query } from "../database.ts";
import {
  AUDIT_COLUMNS,
  type AuditOrigin,
  type AuditRecord,
  auditFromRow,
  insertAuditEntry,
  SYSTEM_ORIGIN,
} from "./audit-log.repository.ts";
import { toNumber } from "./sql-values.ts";

export type TWebhookFormat = "standard" | "slack";
export type TDeliveryStatus = "pending" | "succeeded" | "failed";

export interface WebhookRecord {
  id: string;
  organizationId: string;
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

/** What one attempt produced. */
export interface DeliveryAttempt {
  at: Date;
  ok: boolean;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
  /** After this attempt the delivery is over (succeeded, out of attempts, webhook disabled). */
  final: boolean;
}

/** The job engine queue of webhook deliveries; a job's data is `{ delivery_id }`. */
export const WEBHOOK_DELIVERY_QUEUE = "webhook.deliver";

/**
 * Enqueues through the job engine inside the caller's transaction. `ready` (if given) is awaited
 * before the transaction opens: a lazily started engine must not start while a PGlite
 * transaction holds the only connection.
 */
export type DeliveryEnqueuer = Pick<JobEngine, "send"> & { ready?(): Promise<unknown> };

type Row = Record<string, unknown>;

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const dateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toNumber(value));
const textOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

const WEBHOOK_COLUMNS = `w.id, w.organization_id, w.url, w.events, w.description, w.format, w.secret_ciphertext,
  ${ms("w.created_at", "created_ms")}, ${ms("w.failing_since", "failing_ms")}, ${ms("w.disabled_at", "disabled_ms")}`;

const DELIVERY_COLUMNS = `d.id, d.webhook_id, d.audit_id, d.message_id, d.event_type, d.body, d.status, d.attempts,
  ${ms("d.created_at", "created_ms")}, ${ms("d.last_attempt_at", "last_attempt_ms")}, d.response_status,
  d.response_body, d.last_error`;

const webhookFromRow = (row: Row): WebhookRecord => ({
  id: String(row.id),
  organizationId: String(row.organization_id),
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

/** Queues deliveries and their jobs in the caller's transaction. */
const queueDeliveries = async (
  engine: DeliveryEnqueuer,
  query: Query,
  rows: ReadonlyArray<{
    webhookId: string;
    organizationId: string;
    auditId: string | null;
    eventType: string;
    body: string;
  }>,
  now: Date,
): Promise<string[]> => {
  if (rows.length === 0) return [];
  const ids = rows.map(() => crypto.randomUUID());
  const inserted = await query<{ id: string }>(
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
      ids,
      rows.map((r) => r.webhookId),
      rows.map((r) => r.auditId),
      ids.map(messageIdOf),
      rows.map((r) => r.eventType),
      rows.map((r) => r.body),
      now.getTime(),
    ],
  );
  const queued = new Set(inserted.map((r) => String(r.id)));
  // The job commits with the delivery row (same transaction), so neither exists without the other.
  // Its group is the organization: the worker runs only a few of one organization's deliveries at
  // once, so its slow or dead receivers cannot hold every slot (docs/api.md "Audit log and webhooks").
  for (const [i, id] of ids.entries()) {
    if (!queued.has(id)) continue;
    const group = rows[i]?.organizationId;
    await engine.send(
      WEBHOOK_DELIVERY_QUEUE,
      { delivery_id: id },
      { executor: query, ...(group === undefined ? {} : { group }) },
    );
  }
  return [...queued];
};

/**
 * Outbound webhooks and their delivery log (docs/api.md "Audit log and webhooks"). Creating and
 * deleting are audited in their transaction; the dispatcher turns undispatched audit entries (the
 * outbox) into deliveries and durable jobs in one transaction.
 */
export class WebhooksRepository {
  readonly #db: Database;
  readonly #engine: DeliveryEnqueuer;
  constructor(db: Database, engine: DeliveryEnqueuer) {
    this.#db = db;
    this.#engine = engine;
  }

  /**
   * Stores a webhook unless its organization already holds `maxPerOrganization` (then null). The
   * organization row is locked first, so parallel creates cannot pass the cap together.
   */
  async create(input: NewWebhook, origin: AuditOrigin, maxPerOrganization: number): Promise<WebhookRecord | null> {
    return this.#db.transaction(async (query) => {
      await query("select id from organizations where id = $1 for update", [input.organizationId]);
      const [held] = await query<Row>("select count(*)::int as n from webhooks where organization_id = $1", [
        input.organizationId,
      ]);
      if (toNumber(held?.n ?? 0) >= maxPerOrganization) return null;
      const rows = await query<Row>(
        `insert into webhooks as w (id, organization_id, url, events, description, format, secret_ciphertext, created_at)
         values (gen_random_uuid(), $1, $2, $3::jsonb, $4, $5, $6, to_timestamp($7::float8 / 1000.0))
         returning ${WEBHOOK_COLUMNS}`,
        [
          input.organizationId,
          input.url,
          JSON.stringify(input.events),
          input.description,
          input.format,
          input.secretCiphertext,
          input.createdAt.getTime(),
        ],
      );
      const row = rows[0];
      if (!row) throw new Error("webhook insert returned no row");
      const webhook = webhookFromRow(row);
      await insertAuditEntry(query, {
        organizationId: webhook.organizationId,
        occurredAt: input.createdAt,
        action: "webhook.created",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "webhook", id: webhook.id },
        details: { url: webhook.url, events: webhook.events, format: webhook.format },
      });
      return webhook;
    });
  }

  /** Whether any enabled webhook exists (a process starts its delivery worker only then). */
  async anyEnabled(): Promise<boolean> {
    return (await this.#db.query("select 1 from webhooks where disabled_at is null limit 1")).length > 0;
  }

  async list(organizationId: string): Promise<WebhookRecord[]> {
    const rows = await this.#db.query<Row>(
      `select ${WEBHOOK_COLUMNS} from webhooks w where w.organization_id = $1 order by w.created_at, w.id`,
      [organizationId],
    );
    return rows.map(webhookFromRow);
  }

  async get(organizationId: string, id: string): Promise<WebhookRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#db.query<Row>(
      `select ${WEBHOOK_COLUMNS} from webhooks w where w.id = $1 and w.organization_id = $2`,
      [id, organizationId],
    );
    return rows[0] ? webhookFromRow(rows[0]) : null;
  }

  /** Deletes the webhook and its delivery log; false when it is not the organization's. */
  async delete(organizationId: string, id: string, now: Date, origin: AuditOrigin): Promise<boolean> {
    if (!isUuid(id)) return false;
    return this.#db.transaction(async (query) => {
      const rows = await query<Row>("delete from webhooks where id = $1 and organization_id = $2 returning url", [
        id,
        organizationId,
      ]);
      if (!rows[0]) return false;
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: now,
        action: "webhook.deleted",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "webhook", id },
        details: { url: String(rows[0].url) },
      });
      return true;
    });
  }

  /** A delivery outside the audit log (`webhook.test`), queued at once. */
  async queueTest(webhookId: string, eventType: string, body: string, now: Date): Promise<DeliveryRecord> {
    await this.#engine.ready?.();
    const [id] = await this.#db.transaction(async (query) => {
      const [hook] = await query<Row>("select organization_id from webhooks where id = $1", [webhookId]);
      if (!hook) return [];
      const organizationId = String(hook.organization_id);
      return queueDeliveries(this.#engine, query, [{ webhookId, organizationId, auditId: null, eventType, body }], now);
    });
    const delivery = id ? await this.delivery(id) : null;
    if (!delivery) throw new Error("test delivery was not stored");
    return delivery.delivery;
  }

  /**
   * One dispatcher pass: takes up to `limit` undispatched audit entries (SKIP LOCKED, so API
   * processes share the work), queues a delivery for every enabled webhook of the entry's
   * organization that subscribes to its action, and marks the entries dispatched: all in one
   * transaction, so an entry is either fully handed to the queue or still in the outbox.
   * `render` builds the body for a webhook's format. Returns how many entries it took.
   */
  async dispatch(
    limit: number,
    now: Date,
    render: (entry: AuditRecord, format: TWebhookFormat) => string,
  ): Promise<number> {
    // A cheap look first: the outbox is empty most of the time (entries of organizations without
    // webhooks are born dispatched), and an entry here means a webhook exists to deliver to.
    if ((await this.#db.query("select 1 from audit_log where dispatched_at is null limit 1")).length === 0) return 0;
    await this.#engine.ready?.();
    return this.#db.transaction(async (query) => {
      const entries = (
        await query<Row>(
          `select ${AUDIT_COLUMNS} from audit_log a where a.dispatched_at is null
           order by a.occurred_at limit $1::int for update skip locked`,
          [limit],
        )
      ).map(auditFromRow);
      if (entries.length === 0) return 0;
      const organizations = [...new Set(entries.map((e) => e.organizationId))];
      const hooks = (
        await query<Row>(
          `select ${WEBHOOK_COLUMNS} from webhooks w where w.organization_id = any($1::uuid[]) and w.disabled_at is null`,
          [organizations],
        )
      ).map(webhookFromRow);
      const rows: Array<{
        webhookId: string;
        organizationId: string;
        auditId: string;
        eventType: string;
        body: string;
      }> = [];
      for (const entry of entries) {
        for (const hook of hooks) {
          if (hook.organizationId !== entry.organizationId) continue;
          if (!hook.events.includes("*") && !hook.events.includes(entry.action)) continue;
          rows.push({
            webhookId: hook.id,
            organizationId: hook.organizationId,
            auditId: entry.id,
            eventType: entry.action,
            body: render(entry, hook.format),
          });
        }
      }
      await queueDeliveries(this.#engine, query, rows, now);
      await query("update audit_log set dispatched_at = to_timestamp($2::float8 / 1000.0) where id = any($1::uuid[])", [
        entries.map((e) => e.id),
        now.getTime(),
      ]);
      return entries.length;
    });
  }

  /** A delivery with its webhook, for the worker (null when the webhook was deleted). */
  async delivery(id: string): Promise<{ delivery: DeliveryRecord; webhook: WebhookRecord } | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#db.query<Row>(
      `select ${DELIVERY_COLUMNS}, w.id as w_id, w.organization_id as w_organization_id, w.url as w_url,
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
    const rows = await this.#db.query<Row>(
      `select ${DELIVERY_COLUMNS} from webhook_deliveries d where d.webhook_id = $1
       order by d.created_at desc, d.id desc limit $2::int`,
      [webhookId, limit],
    );
    return rows.map(deliveryFromRow);
  }

  /**
   * Records an attempt: the delivery's state, and the webhook's run of failures (cleared by a
   * success, started by the first failure). Returns the webhook's `failingSince` afterwards.
   */
  async recordAttempt(deliveryId: string, webhookId: string, attempt: DeliveryAttempt): Promise<Date | null> {
    return this.#db.transaction(async (query) => {
      const status = attempt.ok ? "succeeded" : attempt.final ? "failed" : "pending";
      // The webhook's row first, then its delivery's: the order a webhook's DELETE takes them (the
      // row, then its deliveries by cascade). The other order deadlocked with a DELETE on
      // PostgreSQL, and PostgreSQL aborted one of them: the API then answered 500.
      const rows = await query<Row>(
        `update webhooks set failing_since = case when $2::boolean then null
           else coalesce(failing_since, to_timestamp($3::float8 / 1000.0)) end
         where id = $1 returning ${ms("failing_since", "failing_ms")}`,
        [webhookId, attempt.ok, attempt.at.getTime()],
      );
      await query(
        `update webhook_deliveries set status = $2, attempts = attempts + 1, last_attempt_at = to_timestamp($3::float8 / 1000.0),
           response_status = $4, response_body = $5, last_error = $6
         where id = $1`,
        [
          deliveryId,
          status,
          attempt.at.getTime(),
          attempt.responseStatus,
          attempt.responseBody,
          attempt.error === null ? null : attempt.error.slice(0, 500),
        ],
      );
      return dateOrNull(rows[0]?.failing_ms);
    });
  }

  /** Marks a delivery failed without an attempt (its webhook is disabled). */
  async abandon(deliveryId: string, reason: string): Promise<void> {
    await this.#db.query(
      "update webhook_deliveries set status = 'failed', last_error = $2 where id = $1 and status = 'pending'",
      [deliveryId, reason],
    );
  }

  /** Disables a webhook after its failures ran too long, audited once (`webhook.disabled`). */
  async disable(webhookId: string, now: Date, reason: string): Promise<boolean> {
    return this.#db.transaction(async (query) => {
      const rows = await query<Row>(
        `update webhooks set disabled_at = to_timestamp($2::float8 / 1000.0)
         where id = $1 and disabled_at is null returning organization_id, url, ${ms("failing_since", "failing_ms")}`,
        [webhookId, now.getTime()],
      );
      const row = rows[0];
      if (!row) return false;
      const failingSince = dateOrNull(row.failing_ms);
      await insertAuditEntry(query, {
        organizationId: String(row.organization_id),
        occurredAt: now,
        action: "webhook.disabled",
        actor: SYSTEM_ORIGIN.actor,
        target: { type: "webhook", id: webhookId },
        details: { url: String(row.url), reason, failing_since: failingSince ? formatIsoUtc(failingSince) : null },
      });
      return true;
    });
  }
}
