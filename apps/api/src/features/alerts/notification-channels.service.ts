import {
  AlertEngineRepository,
  type AuditOrigin,
  type ChannelRecord,
  type Database,
  type DeliveryEnqueuer,
  NotificationsRepository,
  type Query,
  queryOf,
  queueNotificationDelivery,
  type NewNotificationDelivery,
} from "@fleet/db";
import {
  ALERT_LIMITS,
  AppError,
  type Clock,
  formatIsoUtc,
  parseChannelConfig,
  type TChannel,
  type TChannelType,
  type TCreateChannelInput,
  type TDeliveriesPage,
  type TDeliveriesQuery,
  type TQueuedNotification,
  type TUpdateChannelInput,
} from "@fleet/shared";
import type { SecretBox } from "../webhooks/webhook-secret.ts";
import { checkWebhookUrl } from "../webhooks/webhook-target.ts";
import type { AlertMessage } from "./alert-message.ts";
import { maskSecret, SECRET_FIELDS, splitConfig } from "./channel-config.ts";
import {
  decodeDeliveryCursor,
  encodeDeliveryCursor,
  toChannelResponse,
  toNotificationDelivery,
} from "./alerts.mapper.ts";

export interface NotificationChannelsDeps {
  db: Pick<Database, "query" | "transaction">;
  jobs: DeliveryEnqueuer;
  secrets: SecretBox;
  clock: Clock;
  /** `WEBHOOK_ALLOW_PRIVATE`. */
  allowPrivate: boolean;
  checkUrl?: typeof checkWebhookUrl;
}

const notFound = () => new AppError("not_found", "Notification channel not found.");
const CAP_RETRY_AFTER_SECONDS = 60;

/**
 * Stores deliveries and queues a job for each one stored, in the caller's transaction: a delivery
 * row never exists without its job (suppressed ones have none). Returns the ids stored.
 */
export const queueNotificationDeliveries = async (
  query: Query,
  jobs: DeliveryEnqueuer,
  rows: ReadonlyArray<Omit<NewNotificationDelivery, "id">>,
  now: Date,
): Promise<string[]> => {
  if (rows.length === 0) return [];
  const withIds = rows.map((row) => ({ ...row, id: crypto.randomUUID() }));
  const stored = new Set(await new NotificationsRepository(query).insertDeliveries(withIds, now));
  for (const row of withIds) {
    if (stored.has(row.id) && row.status === "pending") await queueNotificationDelivery(jobs, row, query);
  }
  return withIds.filter((row) => stored.has(row.id)).map((row) => row.id);
};

/**
 * Notification channels of an organization (docs/api.md "Alerts and maintenance windows"): their
 * secrets sealed like webhook secrets and masked when read back, URLs judged as webhook URLs, at
 * most {@link ALERT_LIMITS.channelsPerOrganization} (held under parallel creates: the
 * organization's row is locked first), a test send and the delivery log. With `teamId` (a
 * team-bound credential) every method sees only that team's channels: another's answers 404.
 */
export class NotificationChannelsService {
  readonly #d: NotificationChannelsDeps;
  constructor(deps: NotificationChannelsDeps) {
    this.#d = deps;
  }

  async create(
    organizationId: string,
    _origin: AuditOrigin,
    input: TCreateChannelInput,
    teamId?: string,
  ): Promise<TChannel> {
    await this.#checkTarget(input.type, input.config);
    const { open, secret } = splitConfig(input.type, input.config);
    const now = this.#d.clock.now();
    const max = ALERT_LIMITS.channelsPerOrganization;
    const created = await this.#d.db.transaction(async (query) => {
      const repo = new NotificationsRepository(query);
      await repo.lockOrganization(organizationId);
      if ((await repo.countChannels(organizationId)) >= max) return null;
      return repo.insertChannel({
        organizationId,
        teamId: teamId ?? null,
        name: input.name,
        type: input.type,
        config: open,
        secretCiphertext: secret ? this.#d.secrets.seal(JSON.stringify(secret)) : null,
        createdAt: now,
      });
    });
    if (!created) {
      throw new AppError(
        "rate_limited",
        `This organization already has ${max} notification channels, the most allowed. Delete one to create another.`,
        {
          extra: { limit: max, retry_after_seconds: CAP_RETRY_AFTER_SECONDS },
          retryAfterSeconds: CAP_RETRY_AFTER_SECONDS,
        },
      );
    }
    return toChannelResponse(created, secret);
  }

  async list(organizationId: string, teamId?: string): Promise<TChannel[]> {
    return (await this.#repo().listChannels(organizationId, teamId)).map((c) => toChannelResponse(c, this.secretOf(c)));
  }

  async get(organizationId: string, id: string, teamId?: string): Promise<TChannel> {
    const channel = await this.#repo().getChannel(organizationId, id, teamId);
    if (!channel) throw notFound();
    return toChannelResponse(channel, this.secretOf(channel));
  }

  /** `name`, and `config` replaced whole; a secret sent back as its mask keeps the stored value. */
  async update(organizationId: string, input: TUpdateChannelInput, teamId?: string): Promise<TChannel> {
    const channel = await this.#repo().getChannel(organizationId, input.id, teamId);
    if (!channel) throw notFound();
    const type = channel.type as TChannelType;
    let open = channel.config;
    let secret = this.secretOf(channel);
    if (input.config !== undefined) {
      const given: Record<string, unknown> = { ...input.config };
      for (const field of SECRET_FIELDS[type]) {
        const stored = secret?.[field];
        if (stored !== undefined && given[field] === maskSecret(field, stored)) given[field] = stored;
      }
      const parsed = parseChannelConfig(type, given);
      if (!parsed.ok)
        throw new AppError("validation_failed", "The channel's config is not valid.", { fields: parsed.errors });
      await this.#checkTarget(type, parsed.config);
      ({ open, secret } = splitConfig(type, parsed.config));
    }
    const updated = await this.#repo().updateChannel(
      organizationId,
      channel.id,
      {
        name: input.name ?? channel.name,
        config: open,
        secretCiphertext: secret ? this.#d.secrets.seal(JSON.stringify(secret)) : null,
        updatedAt: this.#d.clock.now(),
      },
      teamId,
    );
    if (!updated) throw notFound();
    return toChannelResponse(updated, secret);
  }

  async delete(organizationId: string, id: string, teamId?: string): Promise<void> {
    if (!(await this.#repo().deleteChannel(organizationId, id, teamId))) throw notFound();
  }

  /** Queues a test message to this channel; its delivery shows in the log once attempted. */
  async test(organizationId: string, id: string, teamId?: string): Promise<TQueuedNotification> {
    const channel = await this.#repo().getChannel(organizationId, id, teamId);
    if (!channel) throw notFound();
    const organizationName = await new AlertEngineRepository(queryOf(this.#d.db)).organizationName(organizationId);
    const now = this.#d.clock.now();
    const message: AlertMessage = {
      kind: "test",
      title: `Test message for channel ${channel.name}`,
      organization: organizationName,
      lines: [{ text: "Alerts of this organization will reach you here." }],
      pagerduty: { action: "trigger", dedupKey: `fleet-test-${channel.id}`, severity: "info" },
      at: formatIsoUtc(now),
    };
    await this.#d.jobs.ready?.();
    const delivery = await this.#d.db.transaction(async (query) => {
      const [stored] = await queueNotificationDeliveries(
        query,
        this.#d.jobs,
        [
          {
            channelId: channel.id,
            organizationId,
            event: "notification.test",
            routerId: null,
            status: "pending",
            message,
            idempotencyKey: null,
          },
        ],
        now,
      );
      return stored ? ((await new NotificationsRepository(query).delivery(stored))?.delivery ?? null) : null;
    });
    if (!delivery) throw notFound();
    return { id: delivery.id, event: delivery.event, created_at: formatIsoUtc(delivery.createdAt) };
  }

  async deliveries(
    organizationId: string,
    query: TDeliveriesQuery,
    teamId?: string,
  ): Promise<Omit<TDeliveriesPage, "status">> {
    const repo = this.#repo();
    const channel = await repo.getChannel(organizationId, query.id, teamId);
    if (!channel) throw notFound();
    let before: { createdAt: Date; id: string } | undefined;
    if (query.cursor !== undefined) {
      const decoded = decodeDeliveryCursor(query.cursor);
      if (!decoded) {
        throw new AppError("validation_failed", "The cursor is not valid.", {
          fields: { cursor: ["is not a valid cursor"] },
        });
      }
      before = decoded;
    }
    const limit = query.limit ?? ALERT_LIMITS.deliveryPage.default;
    const rows = await repo.deliveries(channel.id, limit + 1, before);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      data: page.map(toNotificationDelivery),
      next_cursor: rows.length > limit && last ? encodeDeliveryCursor(last) : null,
    };
  }

  /** The channel's secrets in clear (the worker's and the mask's); null for a type without any. */
  secretOf(channel: ChannelRecord): Record<string, string> | null {
    return channel.secretCiphertext
      ? (JSON.parse(this.#d.secrets.open(channel.secretCiphertext)) as Record<string, string>)
      : null;
  }

  async #checkTarget(type: TChannelType, config: Record<string, unknown>): Promise<void> {
    if (type !== "slack" && type !== "teams") return;
    const target = await (this.#d.checkUrl ?? checkWebhookUrl)(String(config.webhook_url), this.#d.allowPrivate);
    if (!target.ok) {
      throw new AppError("validation_failed", `The webhook URL is not allowed: it ${target.message}.`, {
        fields: { "config.webhook_url": [target.message] },
      });
    }
  }

  #repo(): NotificationsRepository {
    return new NotificationsRepository(queryOf(this.#d.db));
  }
}
