import { dataDirSecret } from "@fleet/runtime";
import { AlertEngine } from "../features/alerts/alert-engine.ts";
import { AlertRulesService } from "../features/alerts/alert-rules.service.ts";
import { ChannelSender } from "../features/alerts/channel-sender.ts";
import { MaintenanceWindowsService } from "../features/alerts/maintenance-windows.service.ts";
import { NotificationChannelsService } from "../features/alerts/notification-channels.service.ts";
import { NotificationDeliveryWorker } from "../features/alerts/notification-delivery.worker.ts";
import { DeliveryRuntime } from "../features/webhooks/delivery-runtime.ts";
import { SecretBox } from "../features/webhooks/webhook-secret.ts";
import type { Wired, WiringContext } from "./wiring.ts";

export interface AlertsServices {
  notificationChannels: NotificationChannelsService;
  alertRules: AlertRulesService;
  maintenanceWindows: MaintenanceWindowsService;
}

/** Alert timing (tests shrink it): the engine's poll, the first retry delay, one send's deadline. */
export interface AlertTiming {
  pollMs?: number;
  retryDelaySeconds?: number;
  timeoutMs?: number;
}

/**
 * Alerts that reach people (docs/api.md "Alerts and maintenance windows"): channels, rules and
 * maintenance windows; the engine that turns audit entries into notifications and the worker
 * that sends them, on the job engine started at first need (as webhook deliveries).
 */
export const wireAlerts = (
  { config, db, logger, clock }: WiringContext,
  options: { publicUrl: () => string; timing?: AlertTiming },
): Wired<AlertsServices> & { engine: AlertEngine } => {
  const timing = options.timing ?? {};
  // Sealed like webhook secrets, with the same key (docs/operations.md "Configuration").
  const secrets = new SecretBox(
    config.events.webhookEncryptionKey ?? dataDirSecret(config.dataDir, "webhookEncryption"),
  );
  const sender = new ChannelSender({
    allowPrivate: config.events.webhookAllowPrivate,
    smtpUrl: config.mail.smtpUrl,
    mailFrom: config.mail.from ?? "fleet@localhost",
    telegramApiBase: config.alerts.telegramApiBase,
    pagerdutyEventsUrl: config.alerts.pagerdutyEventsUrl,
    timeoutMs: timing.timeoutMs ?? 10_000,
  });
  const workerLogger = logger.child({ part: "notification-delivery" });
  const runtime = new DeliveryRuntime(
    db,
    new NotificationDeliveryWorker({
      db,
      secrets,
      sender,
      clock,
      logger: workerLogger,
      ...(timing.retryDelaySeconds === undefined ? {} : { retryDelaySeconds: timing.retryDelaySeconds }),
      ...(timing.pollMs === undefined ? {} : { pollingIntervalSeconds: Math.max(0.5, timing.pollMs / 1000) }),
    }),
    workerLogger,
  );
  const engine = new AlertEngine({
    db,
    jobs: runtime.enqueuer,
    runtime,
    clock,
    logger: logger.child({ part: "alert-engine" }),
    publicUrl: () => config.adoption.apiPublicUrl ?? options.publicUrl(),
    ...(timing.pollMs === undefined ? {} : { pollMs: timing.pollMs }),
  });
  return {
    engine,
    services: {
      notificationChannels: new NotificationChannelsService({
        db,
        jobs: runtime.enqueuer,
        secrets,
        clock,
        allowPrivate: config.events.webhookAllowPrivate,
      }),
      alertRules: new AlertRulesService({ db, clock, onChange: () => engine.wake() }),
      maintenanceWindows: new MaintenanceWindowsService({ db, clock }),
    },
    schedules: [],
    close: async () => {
      await engine.close();
      await runtime.close();
      sender.close();
    },
  };
};
