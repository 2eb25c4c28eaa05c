import { isUuid } from "@fleet/shared";
import { sql } from "kysely";
import type { Query } from "../database.ts";
import { toNumber } from "./sql-values.ts";

export type TNotificationDeliveryStatus = "pending" | "sent" | "failed" | "suppressed";

export interface ChannelRecord {
  id: string;
  organizationId: string;
  /** Set when a team-bound credential made it: only that team (and the organization) sees it. */
  teamId: string | null;
  name: string;
  type: string;
  /** The parts of the configuration that are not secret. */
  config: Record<string, unknown>;
  /** Sealed JSON of the secret parts (webhook URL, bot token, routing key). */
  secretCiphertext: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface NotificationDeliveryRecord {
  id: string;
  channelId: string;
  organizationId: string;
  event: string;
  routerId: string | null;
  status: TNotificationDeliveryStatus;
  attempts: number;
  error: string | null;
  /** The message as stored (JSON); its shape is the alerts feature's. */
  message: unknown;
  createdAt: Date;
  sentAt: Date | null;
}

export interface NewNotificationDelivery {
  id: string;
  channelId: string;
  organizationId: string;
  event: string;
  routerId: string | null;
  status: "pending" | "suppressed";
  /** Any JSON object: stored as written. */
  message: object;
  /** One delivery per channel and key: a pass that runs twice stores (and sends) it once. */
  idempotencyKey: string | null;
}

const CHANNEL_COLUMNS = [
  "c.id",
  "c.organization_id",
  "c.team_id",
  "c.name",
  "c.type",
  "c.config",
  "c.secret_ciphertext",
  "c.created_at",
  "c.updated_at",
] as const;
// The same columns unqualified: an insert's or update's returning (MikroORM converts only those).
const CHANNEL_FIELDS = [
  "id",
  "organization_id",
  "team_id",
  "name",
  "type",
  "config",
  "secret_ciphertext",
  "created_at",
  "updated_at",
] as const;
// Aliased `d_...`: a delivery is read joined with its channel, whose columns share these names.
const DELIVERY_COLUMNS = [
  "d.id as d_id",
  "d.channel_id as d_channel_id",
  "d.organization_id as d_organization_id",
  "d.event",
  "d.router_id",
  "d.status",
  "d.attempts",
  "d.error",
  "d.message",
  "d.created_at as d_created_at",
  "d.sent_at",
] as const;

const selectChannels = (query: Query) => query.kysely.selectFrom("notification_channels as c").select(CHANNEL_COLUMNS);
const selectDeliveries = (query: Query) =>
  query.kysely.selectFrom("notification_deliveries as d").select(DELIVERY_COLUMNS);

type ChannelRow = Awaited<ReturnType<ReturnType<typeof selectChannels>["executeTakeFirstOrThrow"]>>;
type DeliveryRow = Awaited<ReturnType<ReturnType<typeof selectDeliveries>["executeTakeFirstOrThrow"]>>;

const channelFromRow = (row: ChannelRow): ChannelRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  teamId: row.team_id,
  name: row.name,
  type: row.type,
  config: row.config,
  secretCiphertext: row.secret_ciphertext,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const deliveryFromRow = (row: DeliveryRow): NotificationDeliveryRecord => ({
  id: row.d_id,
  channelId: row.d_channel_id,
  organizationId: row.d_organization_id,
  event: row.event,
  routerId: row.router_id,
  status: row.status as TNotificationDeliveryStatus,
  attempts: row.attempts,
  error: row.error,
  message: row.message,
  createdAt: row.d_created_at,
  sentAt: row.sent_at,
});

/**
 * `notification_channels` and their delivery log `notification_deliveries` (docs/api.md "Alerts and
 * maintenance windows"): reads and writes only, on the caller's `query`.
 */
export class NotificationsRepository {
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

  /** Whether any channel exists (a process starts its delivery worker only then). */
  async anyChannel(): Promise<boolean> {
    const row = await this.#query.kysely.selectFrom("notification_channels").select("id").limit(1).executeTakeFirst();
    return row !== undefined;
  }

  async countChannels(organizationId: string): Promise<number> {
    const row = await this.#query.kysely
      .selectFrom("notification_channels")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("organization_id", "=", organizationId)
      .executeTakeFirstOrThrow();
    return toNumber(row.n);
  }

  async insertChannel(input: Omit<ChannelRecord, "id" | "updatedAt">): Promise<ChannelRecord> {
    const row = await this.#query.kysely
      .insertInto("notification_channels")
      .values({
        id: crypto.randomUUID(),
        organization_id: input.organizationId,
        name: input.name,
        type: input.type,
        config: input.config,
        secret_ciphertext: input.secretCiphertext,
        created_at: input.createdAt,
        updated_at: input.createdAt,
        team_id: input.teamId,
      })
      .returning(CHANNEL_FIELDS)
      .executeTakeFirstOrThrow();
    return channelFromRow(row);
  }

  /** With `teamId` (a team-bound credential) here and below: only that team's channels. */
  async listChannels(organizationId: string, teamId?: string): Promise<ChannelRecord[]> {
    const rows = await selectChannels(this.#query)
      .where("c.organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("c.team_id", "=", teamId ?? null))
      .orderBy("c.created_at")
      .orderBy("c.id")
      .execute();
    return rows.map(channelFromRow);
  }

  async getChannel(organizationId: string, id: string, teamId?: string): Promise<ChannelRecord | null> {
    if (!isUuid(id)) return null;
    const row = await selectChannels(this.#query)
      .where("c.id", "=", id)
      .where("c.organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("c.team_id", "=", teamId ?? null))
      .executeTakeFirst();
    return row ? channelFromRow(row) : null;
  }

  /** The organization's channels among `ids` (a rule's channels; unknown and foreign ids are left out). */
  async channelsIn(organizationId: string, ids: readonly string[], teamId?: string): Promise<ChannelRecord[]> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return [];
    const rows = await selectChannels(this.#query)
      .where("c.organization_id", "=", organizationId)
      .where("c.id", "=", (eb) => eb.fn.any(eb.val(valid)))
      .$if(teamId !== undefined, (qb) => qb.where("c.team_id", "=", teamId ?? null))
      .execute();
    return rows.map(channelFromRow);
  }

  async updateChannel(
    organizationId: string,
    id: string,
    change: { name: string; config: Record<string, unknown>; secretCiphertext: string | null; updatedAt: Date },
    teamId?: string,
  ): Promise<ChannelRecord | null> {
    if (!isUuid(id)) return null;
    const row = await this.#query.kysely
      .updateTable("notification_channels")
      .set({
        name: change.name,
        config: change.config,
        secret_ciphertext: change.secretCiphertext,
        updated_at: change.updatedAt,
      })
      .where("id", "=", id)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .returning(CHANNEL_FIELDS)
      .executeTakeFirst();
    return row ? channelFromRow(row) : null;
  }

  /** Deletes the channel, its delivery log and its place in rules (cascade). */
  async deleteChannel(organizationId: string, id: string, teamId?: string): Promise<boolean> {
    if (!isUuid(id)) return false;
    const row = await this.#query.kysely
      .deleteFrom("notification_channels")
      .where("id", "=", id)
      .where("organization_id", "=", organizationId)
      .$if(teamId !== undefined, (qb) => qb.where("team_id", "=", teamId ?? null))
      .returning("id")
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Stores deliveries, skipping those whose (channel, idempotency key) exists; returns the ids stored. */
  async insertDeliveries(rows: readonly NewNotificationDelivery[], now: Date): Promise<string[]> {
    if (rows.length === 0) return [];
    // Raw: one statement text for any batch, its columns as arrays through unnest.
    const inserted = await sql<{ id: string }>`
      insert into notification_deliveries (id, channel_id, organization_id, event, router_id, status, attempts, message,
        idempotency_key, created_at)
      select v.id, v.channel_id, v.organization_id, v.event, v.router_id, v.status, 0, v.message, v.idempotency_key,
        ${now}::timestamptz
      from unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.channelId)}::uuid[],
        ${rows.map((r) => r.organizationId)}::uuid[], ${rows.map((r) => r.event)}::text[],
        ${rows.map((r) => r.routerId)}::uuid[], ${rows.map((r) => r.status)}::text[],
        ${rows.map((r) => JSON.stringify(r.message))}::jsonb[], ${rows.map((r) => r.idempotencyKey)}::text[])
        as v(id, channel_id, organization_id, event, router_id, status, message, idempotency_key)
      on conflict (channel_id, idempotency_key) do nothing
      returning id`.execute(this.#query.kysely);
    return inserted.rows.map((r) => r.id);
  }

  /** A delivery with its channel; null once the channel (and so its log) was deleted. */
  async delivery(id: string): Promise<{ delivery: NotificationDeliveryRecord; channel: ChannelRecord } | null> {
    if (!isUuid(id)) return null;
    const row = await selectDeliveries(this.#query)
      .innerJoin("notification_channels as c", "c.id", "d.channel_id")
      .select(CHANNEL_COLUMNS)
      .where("d.id", "=", id)
      .executeTakeFirst();
    return row ? { delivery: deliveryFromRow(row), channel: channelFromRow(row) } : null;
  }

  /**
   * The log, newest first, strictly before `before` when given: suppressed deliveries and those
   * attempted at least once; one still queued for its first attempt is not shown yet.
   */
  async deliveries(
    channelId: string,
    limit: number,
    before?: { createdAt: Date; id: string },
  ): Promise<NotificationDeliveryRecord[]> {
    let page = selectDeliveries(this.#query)
      .where("d.channel_id", "=", channelId)
      .where("d.status", "<>", "pending")
      .orderBy("d.created_at", "desc")
      .orderBy("d.id", "desc")
      .limit(limit);
    if (before) {
      page = page.where((eb) => eb(eb.refTuple("d.created_at", "d.id"), "<", eb.tuple(before.createdAt, before.id)));
    }
    const rows = await page.execute();
    return rows.map(deliveryFromRow);
  }

  /** Records one attempt: its outcome, the error (null on success) and, when sent, the time. */
  async recordAttempt(
    id: string,
    outcome: { status: TNotificationDeliveryStatus; error: string | null; at: Date },
  ): Promise<void> {
    await this.#query.kysely
      .updateTable("notification_deliveries")
      .set((eb) => ({
        attempts: eb("attempts", "+", 1),
        status: outcome.status,
        error: outcome.error?.slice(0, 500) ?? null,
        ...(outcome.status === "sent" ? { sent_at: outcome.at } : {}),
      }))
      .where("id", "=", id)
      .execute();
  }
}
