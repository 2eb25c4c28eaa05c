import { AuditLogRepository } from "@fleet/db";
import { dataDirSecret } from "@fleet/runtime";
import { AuditLogService } from "../features/audit-log/audit-log.service.ts";
import { pruneAuditLog } from "../features/audit-log/prune-audit-log.job.ts";
import { DeliveryRuntime } from "../features/webhooks/delivery-runtime.ts";
import { WebhookDeliveryWorker } from "../features/webhooks/webhook-delivery.worker.ts";
import { WebhookDispatcher } from "../features/webhooks/webhook-dispatcher.ts";
import { SecretBox } from "../features/webhooks/webhook-secret.ts";
import { WebhooksService } from "../features/webhooks/webhooks.service.ts";
import type { Wired, WiringContext } from "./wiring.ts";

export interface EventsServices {
  auditLog: AuditLogService;
  webhooks: WebhooksService;
}

/** Webhook delivery timing (tests shrink it): first retry delay and the queue/outbox poll. */
export interface WebhookTiming {
  retryDelaySeconds?: number;
  pollMs?: number;
  timeoutMs?: number;
}

/** The audit log and its webhooks (docs/api.md "Audit log and webhooks"). */
export const wireEvents = (
  { config, db, logger, clock }: WiringContext,
  webhookTiming: WebhookTiming = {},
): Wired<EventsServices> => {
  const auditLog = new AuditLogRepository(db);
  const secrets = new SecretBox(
    config.events.webhookEncryptionKey ?? dataDirSecret(config.dataDir, "webhookEncryption"),
  );
  const deliveryLogger = logger.child({ part: "webhook-delivery" });
  const runtime = new DeliveryRuntime(
    db,
    new WebhookDeliveryWorker({
      db,
      secrets,
      clock,
      logger: deliveryLogger,
      allowPrivate: config.events.webhookAllowPrivate,
      ...(webhookTiming.retryDelaySeconds === undefined ? {} : { retryDelaySeconds: webhookTiming.retryDelaySeconds }),
      ...(webhookTiming.pollMs === undefined
        ? {}
        : { pollingIntervalSeconds: Math.max(0.5, webhookTiming.pollMs / 1000) }),
      ...(webhookTiming.timeoutMs === undefined ? {} : { timeoutMs: webhookTiming.timeoutMs }),
    }),
    deliveryLogger,
  );
  const dispatcher = new WebhookDispatcher({
    db,
    jobs: runtime.enqueuer,
    runtime,
    clock,
    logger: logger.child({ part: "webhook-dispatch" }),
    // pg-boss notifies its workers of new jobs itself.
    onQueued: () => undefined,
    ...(webhookTiming.pollMs === undefined ? {} : { pollMs: webhookTiming.pollMs }),
  });
  return {
    services: {
      auditLog: new AuditLogService(auditLog),
      webhooks: new WebhooksService({
        db,
        jobs: runtime.enqueuer,
        secrets,
        clock,
        allowPrivate: config.events.webhookAllowPrivate,
        onChange: () => dispatcher.wake(),
      }),
    },
    // docs/api.md "Audit log and webhooks": AUDIT_RETENTION_DAYS, pruned hourly.
    schedules: [
      {
        queue: "audit.prune",
        cron: "23 * * * *",
        run: () =>
          pruneAuditLog({
            audit: auditLog,
            clock,
            retentionDays: config.events.auditRetentionDays,
            logger: logger.child({ job: "audit-prune" }),
          }),
      },
    ],
    close: async () => {
      await dispatcher.close();
      await runtime.close();
    },
  };
};
