import { isUuid } from "@fleet/shared";
import { sql } from "kysely";
import type { Query, Row } from "../database.ts";
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

const WEBHOOK_COLUMNS = [
  "id",
  "organization_id",
  "team_id",
  "url",
  "events",
  "description",
  "format",
  "secret_ciphertext",
  "created_at",
  "failing_since",
  "disabled_at",
] as const;

const DELIVERY_COLUMNS = [
  "id",
  "webhook_id",
  "audit_id",
  "message_id",
  "event_type",
  "body",
  "status",
  "attempts",
  "created_at",
  "last_attempt_at",
  "response_status",
  "response_body",
  "last_error",
] as const;

const webhookFromRow = (row: Row<"webhooks">): WebhookRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  teamId: row.team_id,
  url: row.url,
  events: row.events,
  description: row.description,
  format: row.format,
  secretCiphertext: row.secret_ciphertext,
  createdAt: row.created_at,
  failingSince: row.failing_since,
  disabledAt: row.disabled_at,
});

const deliveryFromRow = (row: Row<"webhook_deliveries">): DeliveryRecord => ({
  id: row.id,
  webhookId: row.webhook_id,
  auditId: row.audit_id,
  messageId: row.message_id,
  eventType: row.event_type,
  body: row.body,
  status: row.status,
  attempts: row.attempts,
  createdAt: row.created_at,
  lastAttemptAt: row.last_attempt_at,
  responseStatus: row.response_status,
  responseBody: row.response_body,
  lastError: row.last_error,
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
    await this.#query.kysely
      .selectFrom("organizations")
      .select("id")
      .where("id", "=", organizationId)
      .forUpdate()
      .execute();
  }

  async countForOrganization(organizationId: string): Promise<number> {
    const held = await this.#query.kysely
      .selectFrom("webhooks")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("organization_id", "=", organizationId)
      .executeTakeFirstOrThrow();
    return toNumber(held.n);
  }

  async insert(input: NewWebhook): Promise<WebhookRecord> {
    const row = await this.#query.kysely
      .insertInto("webhooks")
      .values({
        id: crypto.randomUUID(),
        organization_id: input.organizationId,
        url: input.url,
        events: [...input.events],
        description: input.description,
        format: input.format,
        secret_ciphertext: input.secretCiphertext,
        created_at: input.createdAt,
        team_id: input.teamId,
      })
      .returning(WEBHOOK_COLUMNS)
      .executeTakeFirstOrThrow();
    return webhookFromRow(row);
  }

  /** Whether any enabled webhook exists (a process starts its delivery worker only then). */
  async anyEnabled(): Promise<boolean> {
    const row = await this.#query.kysely
      .selectFrom("webhooks")
      .select("id")
      .where("disabled_at", "is", null)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** The organization's webhooks; with `teamId`, only that team's (a team-bound credential's view). */
  async list(organizationId: string, teamId?: string): Promise<WebhookRecord[]> {
    const rows = await this.#query.kysely
      .selectFrom("webhooks")
      .select(WEBHOOK_COLUMNS)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map(webhookFromRow);
  }

  /** One webhook of the organization (with `teamId`: of that team); null otherwise. */
  async get(organizationId: string, id: string, teamId?: string): Promise<WebhookRecord | null> {
    if (!isUuid(id)) return null;
    const row = await this.#query.kysely
      .selectFrom("webhooks")
      .select(WEBHOOK_COLUMNS)
      .where("id", "=", id)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .executeTakeFirst();
    return row ? webhookFromRow(row) : null;
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
    const row = await this.#query.kysely
      .deleteFrom("webhooks")
      .where("id", "=", id)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .returning(["url", "team_id"])
      .executeTakeFirst();
    return row ? { url: row.url, teamId: row.team_id } : null;
  }

  /** Enabled webhooks of these organizations (the dispatcher's fan-out). */
  async enabledOf(organizationIds: readonly string[]): Promise<WebhookRecord[]> {
    const rows = await this.#query.kysely
      .selectFrom("webhooks")
      .select(WEBHOOK_COLUMNS)
      .where("organization_id", "=", (eb) => eb.fn.any(eb.val([...organizationIds])))
      .where("disabled_at", "is", null)
      .execute();
    return rows.map(webhookFromRow);
  }

  /**
   * Stores deliveries, skipping any an earlier pass stored already (one per webhook and audit
   * entry). Returns the ids actually inserted.
   */
  async insertDeliveries(rows: readonly NewDelivery[], now: Date): Promise<string[]> {
    if (rows.length === 0) return [];
    // Raw: one statement text for any batch, its columns as arrays through unnest.
    const { rows: inserted } = await sql<{ id: string }>`
      with v as (
        select * from unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.webhookId)}::uuid[],
          ${rows.map((r) => r.auditId)}::uuid[], ${rows.map((r) => messageIdOf(r.id))}::text[],
          ${rows.map((r) => r.eventType)}::text[], ${rows.map((r) => r.body)}::text[])
          as v(id, webhook_id, audit_id, message_id, event_type, body)
      )
      insert into webhook_deliveries (id, webhook_id, audit_id, message_id, event_type, body, status, attempts, created_at)
      select v.id, v.webhook_id, v.audit_id, v.message_id, v.event_type, v.body, 'pending', 0,
        to_timestamp(${now.getTime()}::float8 / 1000.0)
      from v
      on conflict (webhook_id, audit_id) do nothing
      returning id`.execute(this.#query.kysely);
    return inserted.map((r) => r.id);
  }

  /** Whether the outbox holds anything (a cheap look before a transaction). */
  async hasUndispatched(): Promise<boolean> {
    const row = await this.#query.kysely
      .selectFrom("audit_log")
      .select("id")
      .where("dispatched_at", "is", null)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Up to `limit` undispatched audit entries, oldest first, locked (SKIP LOCKED: processes share the work). */
  async takeUndispatched(limit: number): Promise<AuditRecord[]> {
    const rows = await this.#query.kysely
      .selectFrom("audit_log")
      .select(AUDIT_COLUMNS)
      .where("dispatched_at", "is", null)
      .orderBy("occurred_at")
      .limit(limit)
      .forUpdate()
      .skipLocked()
      .execute();
    return rows.map(auditFromRow);
  }

  async markDispatched(auditIds: readonly string[], now: Date): Promise<void> {
    await this.#query.kysely
      .updateTable("audit_log")
      .set({ dispatched_at: now })
      .where("id", "=", (eb) => eb.fn.any(eb.val([...auditIds])))
      .execute();
  }

  /** A delivery with its webhook, for the worker (null when the webhook was deleted). */
  async delivery(id: string): Promise<{ delivery: DeliveryRecord; webhook: WebhookRecord } | null> {
    if (!isUuid(id)) return null;
    const delivery = await this.#query.kysely
      .selectFrom("webhook_deliveries")
      .select(DELIVERY_COLUMNS)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!delivery) return null;
    // Deleting the webhook deletes its deliveries: no webhook here means it went in between.
    const webhook = await this.#query.kysely
      .selectFrom("webhooks")
      .select(WEBHOOK_COLUMNS)
      .where("id", "=", delivery.webhook_id)
      .executeTakeFirst();
    return webhook ? { delivery: deliveryFromRow(delivery), webhook: webhookFromRow(webhook) } : null;
  }

  /** The delivery log of one webhook, newest first. */
  async deliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    const rows = await this.#query.kysely
      .selectFrom("webhook_deliveries")
      .select(DELIVERY_COLUMNS)
      .where("webhook_id", "=", webhookId)
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    return rows.map(deliveryFromRow);
  }

  /** Records an attempt on the delivery row (its error cut to the column's 500 characters). */
  async updateDelivery(deliveryId: string, attempt: DeliveryAttemptRow): Promise<void> {
    await this.#query.kysely
      .updateTable("webhook_deliveries")
      .set((eb) => ({
        status: attempt.status,
        attempts: eb("attempts", "+", 1),
        last_attempt_at: attempt.at,
        response_status: attempt.responseStatus,
        response_body: attempt.responseBody,
        last_error: attempt.error === null ? null : attempt.error.slice(0, 500),
      }))
      .where("id", "=", deliveryId)
      .execute();
  }

  /**
   * The webhook's run of failures: cleared by a success, started by the first failure. Returns
   * `failingSince` afterwards.
   */
  async updateFailingSince(webhookId: string, ok: boolean, at: Date): Promise<Date | null> {
    const row = await this.#query.kysely
      .updateTable("webhooks")
      .set((eb) => ({ failing_since: ok ? null : eb.fn.coalesce("failing_since", eb.val(at)) }))
      .where("id", "=", webhookId)
      .returning("failing_since")
      .executeTakeFirst();
    return row?.failing_since ?? null;
  }

  /** Marks a delivery failed without an attempt (its webhook is disabled). */
  async abandon(deliveryId: string, reason: string): Promise<void> {
    await this.#query.kysely
      .updateTable("webhook_deliveries")
      .set({ status: "failed", last_error: reason })
      .where("id", "=", deliveryId)
      .where("status", "=", "pending")
      .execute();
  }

  /** Disables an enabled webhook; null when it was gone or disabled already. */
  async disable(
    webhookId: string,
    now: Date,
  ): Promise<{ organizationId: string; teamId: string | null; url: string; failingSince: Date | null } | null> {
    const row = await this.#query.kysely
      .updateTable("webhooks")
      .set({ disabled_at: now })
      .where("id", "=", webhookId)
      .where("disabled_at", "is", null)
      .returning(["organization_id", "team_id", "url", "failing_since"])
      .executeTakeFirst();
    if (!row) return null;
    return { organizationId: row.organization_id, teamId: row.team_id, url: row.url, failingSince: row.failing_since };
  }
}
