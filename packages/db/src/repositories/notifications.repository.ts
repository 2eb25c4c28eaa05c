import { isUuid } from "@fleet/shared";
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

type Row = Record<string, unknown>;

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const json = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;
const textOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

const CHANNEL_COLUMNS = `c.id, c.organization_id, c.team_id, c.name, c.type, c.config, c.secret_ciphertext,
  ${ms("c.created_at", "created_ms")}, ${ms("c.updated_at", "updated_ms")}`;
// Aliased: a delivery is read joined with its channel, whose columns share these names.
const DELIVERY_COLUMNS = `d.id as d_id, d.channel_id as d_channel_id, d.organization_id as d_organization_id, d.event,
  d.router_id, d.status, d.attempts, d.error, d.message, ${ms("d.created_at", "d_created_ms")}, ${ms("d.sent_at", "sent_ms")}`;

const channelFromRow = (row: Row): ChannelRecord => ({
  id: String(row.id),
  organizationId: String(row.organization_id),
  teamId: textOrNull(row.team_id),
  name: String(row.name),
  type: String(row.type),
  config: json<Record<string, unknown>>(row.config) ?? {},
  secretCiphertext: textOrNull(row.secret_ciphertext),
  createdAt: new Date(toNumber(row.created_ms)),
  updatedAt: new Date(toNumber(row.updated_ms)),
});

const deliveryFromRow = (row: Row): NotificationDeliveryRecord => ({
  id: String(row.d_id),
  channelId: String(row.d_channel_id),
  organizationId: String(row.d_organization_id),
  event: String(row.event),
  routerId: textOrNull(row.router_id),
  status: String(row.status) as TNotificationDeliveryStatus,
  attempts: toNumber(row.attempts),
  error: textOrNull(row.error),
  message: json<unknown>(row.message) ?? {},
  createdAt: new Date(toNumber(row.d_created_ms)),
  sentAt: row.sent_ms === null || row.sent_ms === undefined ? null : new Date(toNumber(row.sent_ms)),
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
    await this.#query("select id from organizations where id = $1 for update", [organizationId]);
  }

  /** Whether any channel exists (a process starts its delivery worker only then). */
  async anyChannel(): Promise<boolean> {
    return (await this.#query("select 1 from notification_channels limit 1")).length > 0;
  }

  async countChannels(organizationId: string): Promise<number> {
    const [row] = await this.#query<Row>(
      "select count(*)::int as n from notification_channels where organization_id = $1",
      [organizationId],
    );
    return toNumber(row?.n ?? 0);
  }

  async insertChannel(input: Omit<ChannelRecord, "id" | "updatedAt">): Promise<ChannelRecord> {
    const rows = await this.#query<Row>(
      `insert into notification_channels as c (id, organization_id, name, type, config, secret_ciphertext, created_at, updated_at,
         team_id)
       values (gen_random_uuid(), $1, $2, $3, $4::jsonb, $5, to_timestamp($6::float8 / 1000.0), to_timestamp($6::float8 / 1000.0),
         $7::uuid)
       returning ${CHANNEL_COLUMNS}`,
      [
        input.organizationId,
        input.name,
        input.type,
        JSON.stringify(input.config),
        input.secretCiphertext,
        input.createdAt.getTime(),
        input.teamId,
      ],
    );
    const row = rows[0];
    if (!row) throw new Error("channel insert returned no row");
    return channelFromRow(row);
  }

  /** With `teamId` (a team-bound credential) here and below: only that team's channels. */
  async listChannels(organizationId: string, teamId?: string): Promise<ChannelRecord[]> {
    const rows = await this.#query<Row>(
      `select ${CHANNEL_COLUMNS} from notification_channels c where c.organization_id = $1
       and ($2::uuid is null or c.team_id = $2::uuid) order by c.created_at, c.id`,
      [organizationId, teamId ?? null],
    );
    return rows.map(channelFromRow);
  }

  async getChannel(organizationId: string, id: string, teamId?: string): Promise<ChannelRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      `select ${CHANNEL_COLUMNS} from notification_channels c where c.id = $1 and c.organization_id = $2
       and ($3::uuid is null or c.team_id = $3::uuid)`,
      [id, organizationId, teamId ?? null],
    );
    return rows[0] ? channelFromRow(rows[0]) : null;
  }

  /** The organization's channels among `ids` (a rule's channels; unknown and foreign ids are left out). */
  async channelsIn(organizationId: string, ids: readonly string[], teamId?: string): Promise<ChannelRecord[]> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return [];
    const rows = await this.#query<Row>(
      `select ${CHANNEL_COLUMNS} from notification_channels c where c.organization_id = $1 and c.id = any($2::uuid[])
       and ($3::uuid is null or c.team_id = $3::uuid)`,
      [organizationId, valid, teamId ?? null],
    );
    return rows.map(channelFromRow);
  }

  async updateChannel(
    organizationId: string,
    id: string,
    change: { name: string; config: Record<string, unknown>; secretCiphertext: string | null; updatedAt: Date },
    teamId?: string,
  ): Promise<ChannelRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      `update notification_channels as c set name = $3, config = $4::jsonb, secret_ciphertext = $5,
         updated_at = to_timestamp($6::float8 / 1000.0)
       where c.id = $1 and c.organization_id = $2 and ($7::uuid is null or c.team_id = $7::uuid) returning ${CHANNEL_COLUMNS}`,
      [
        id,
        organizationId,
        change.name,
        JSON.stringify(change.config),
        change.secretCiphertext,
        change.updatedAt.getTime(),
        teamId ?? null,
      ],
    );
    return rows[0] ? channelFromRow(rows[0]) : null;
  }

  /** Deletes the channel, its delivery log and its place in rules (cascade). */
  async deleteChannel(organizationId: string, id: string, teamId?: string): Promise<boolean> {
    if (!isUuid(id)) return false;
    const rows = await this.#query(
      `delete from notification_channels where id = $1 and organization_id = $2
       and ($3::uuid is null or team_id = $3::uuid) returning id`,
      [id, organizationId, teamId ?? null],
    );
    return rows.length > 0;
  }

  /** Stores deliveries, skipping those whose (channel, idempotency key) exists; returns the ids stored. */
  async insertDeliveries(rows: readonly NewNotificationDelivery[], now: Date): Promise<string[]> {
    if (rows.length === 0) return [];
    const inserted = await this.#query<{ id: string }>(
      `insert into notification_deliveries (id, channel_id, organization_id, event, router_id, status, attempts, message,
         idempotency_key, created_at)
       select v.id, v.channel_id, v.organization_id, v.event, v.router_id, v.status, 0, v.message, v.idempotency_key,
         to_timestamp($9::float8 / 1000.0)
       from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::uuid[], $6::text[], $7::jsonb[], $8::text[])
         as v(id, channel_id, organization_id, event, router_id, status, message, idempotency_key)
       on conflict (channel_id, idempotency_key) do nothing
       returning id`,
      [
        rows.map((r) => r.id),
        rows.map((r) => r.channelId),
        rows.map((r) => r.organizationId),
        rows.map((r) => r.event),
        rows.map((r) => r.routerId),
        rows.map((r) => r.status),
        rows.map((r) => JSON.stringify(r.message)),
        rows.map((r) => r.idempotencyKey),
        now.getTime(),
      ],
    );
    return inserted.map((r) => String(r.id));
  }

  /** A delivery with its channel; null once the channel (and so its log) was deleted. */
  async delivery(id: string): Promise<{ delivery: NotificationDeliveryRecord; channel: ChannelRecord } | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      `select ${DELIVERY_COLUMNS}, ${CHANNEL_COLUMNS} from notification_deliveries d
       join notification_channels c on c.id = d.channel_id where d.id = $1`,
      [id],
    );
    const row = rows[0];
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
    const params: unknown[] = [channelId, limit];
    let where = "d.channel_id = $1 and d.status <> 'pending'";
    if (before) {
      params.push(before.createdAt.getTime(), before.id);
      where += " and (d.created_at, d.id) < (to_timestamp($3::float8 / 1000.0), $4::uuid)";
    }
    const rows = await this.#query<Row>(
      `select ${DELIVERY_COLUMNS} from notification_deliveries d where ${where}
       order by d.created_at desc, d.id desc limit $2::int`,
      params,
    );
    return rows.map(deliveryFromRow);
  }

  /** Records one attempt: its outcome, the error (null on success) and, when sent, the time. */
  async recordAttempt(
    id: string,
    outcome: { status: TNotificationDeliveryStatus; error: string | null; at: Date },
  ): Promise<void> {
    await this.#query(
      `update notification_deliveries set attempts = attempts + 1, status = $2::text, error = $3::text,
         sent_at = case when $2::text = 'sent' then to_timestamp($4::float8 / 1000.0) else sent_at end
       where id = $1::uuid`,
      [id, outcome.status, outcome.error?.slice(0, 500) ?? null, outcome.at.getTime()],
    );
  }
}
