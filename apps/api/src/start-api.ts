import { createServer } from "node:http";
import {
  acquireJobEngine,
  type Database,
  type RegisteredTask,
  registerScheduledTask,
  routerJobsQueue,
} from "@fleet/db";
import {
  type Clock,
  clientAddress,
  closeHttpServer,
  FeatureWiring,
  listen,
  serverUrl,
  systemClock,
} from "@fleet/shared";
import type { startStripeEmulator } from "@fleet/stripe-emulator";
import type { Logger } from "pino";
import type { ApiConfig } from "./config.ts";
import { createApp } from "./http/app.ts";
import {
  API_CONNECTION_TUNING,
  type ApiConnectionTuning,
  apiServerOptions,
  limitConnectionsPerAddress,
} from "./http/connection-limits.ts";
import type { StreamLimitsOptions } from "./features/auth/stream-limits.ts";
import type { Services } from "./services.ts";
import { appRouter } from "./trpc/app-router.ts";
import { DEV_LOGIN_PER_MINUTE } from "./trpc/rate-limit.ts";
import { type AlertTiming, wireAlerts } from "./wiring/alerts.wiring.ts";
import { wireChanges } from "./wiring/changes.wiring.ts";
import { wireAuth } from "./wiring/auth.wiring.ts";
import { wireHealth } from "./wiring/health.wiring.ts";
import { wireBilling } from "./wiring/billing.wiring.ts";
import { type WebhookTiming, wireEvents } from "./wiring/events.wiring.ts";
import { wireRateLimits } from "./wiring/rate-limits.wiring.ts";
import { wireTenancy } from "./wiring/tenancy.wiring.ts";
import type { MailQueueTiming } from "./features/invitations/invitation-mail.ts";
import { type AdoptionSources, wireRouters } from "./wiring/routers.wiring.ts";
import type { Wired, WiringContext } from "./wiring/wiring.ts";

/** What production passes: `main.ts` and the all-in-one composition root. */
export interface StartApiOptions {
  config: ApiConfig;
  /** Opened and migrated by the caller (the all-in-one shares one database between apps). */
  db: Database;
  logger: Logger;
  /**
   * What the composition root knows better than the API's own configuration (docs/routeros.md
   * "Adoption"): where the heartbeat daemon really listens and the tunnel agent's public key.
   */
  adoption?: AdoptionSources;
  /** ACCESS_PASSWORD_KEY when the composition root shares one with the tunnel agent (DATA_DIR=memory). */
  accessPasswordKey?: string;
}

/**
 * What only tests change, passed by the API harness (`testing/api-harness.ts`; production start
 * functions take none of it): clocks, timings shrunk to test speed, limits raised for many logins
 * from one address, and the cluster-wide schedules left off.
 */
export interface ApiOverrides {
  /** Wall time of tokens, rate limits and billing; tests move it to expire tokens. Default: the system clock. */
  wallClock?: Clock;
  /** Time of domain rules (forward expiry); defaults to `wallClock`. */
  clock?: Clock;
  /** dev-login requests per minute per address (docs/api.md "Authentication": 10). */
  devLoginPerMinute?: number;
  /** Webhook delivery timing: first retry delay and the queue/outbox poll. */
  webhookTiming?: WebhookTiming;
  /** Invitation mail retry timing. */
  mailTiming?: MailQueueTiming;
  /** Alert engine and notification timing. */
  alertTiming?: AlertTiming;
  /**
   * Register the features' cluster-wide schedules (default true). The API harness leaves them off:
   * a cron slot that fell inside a test (the billing reconciliation every quarter hour) changed
   * rows under a "nothing changed" check; tests call the scheduled functions directly.
   */
  schedules?: boolean;
  /** The API port's connection guard (docs/operations.md "API port connections"). */
  connections?: Partial<ApiConnectionTuning>;
  /** Open streams per credential and organization (default: 20 and 200, docs/api.md "Rate limits"). */
  streamLimits?: StreamLimitsOptions;
  /**
   * Starts the built-in Stripe emulator when no processor is configured (default: the package's
   * own); the harness wraps it to keep the emulator it waits on for webhook deliveries.
   */
  startStripeEmulator?: typeof startStripeEmulator;
}

export interface RunningApi {
  url: string;
  port: number;
  /** Set when the built-in Stripe emulator was started. */
  stripeEmulatorUrl: string | undefined;
  /** Publishable key clients use with the processor's client-side library. */
  publishableKey: string;
  devLogin: boolean;
  close(): Promise<void>;
}

/**
 * The API's composition root: one job engine, one clock of each kind, then each feature's wiring
 * (`wiring/*.wiring.ts`: its services, schedules and `close`), the HTTP server, and the features'
 * cluster-wide schedules once it listens. Shutdown runs in reverse order.
 */
export const startApi = (options: StartApiOptions): Promise<RunningApi> => composeApi(options);

/** {@link startApi} with the overrides only tests use (`testing/api-harness.ts`). */
export const composeApi = async (production: StartApiOptions, overrides: ApiOverrides = {}): Promise<RunningApi> => {
  const options = { ...overrides, ...production };
  const { config, db, logger } = options;
  const wallClock = options.wallClock ?? systemClock;
  // The process's job engine: forwards queue their router jobs through it, in their own transaction.
  const jobs = await acquireJobEngine(db, {
    instanceName: "api",
    onError: (error) => logger.warn({ err: error }, "job engine error"),
  });
  await jobs.defineQueue(routerJobsQueue(), { createOnly: true });
  const ctx: WiringContext = { config, db, logger, jobs, wallClock, clock: options.clock ?? wallClock };

  const wired = new FeatureWiring<Wired<unknown>>(() => jobs.stop());
  let boundUrl = `http://${config.host}:${config.port}`;
  try {
    const billing = await wireBilling(ctx, options.startStripeEmulator);
    wired.add(billing);
    const auth = wireAuth(ctx, { apiUrl: () => boundUrl, streamLimits: options.streamLimits });
    wired.add(auth);
    const events = wireEvents(ctx, options.webhookTiming);
    wired.add(events);
    const rateLimits = wireRateLimits(ctx, options.devLoginPerMinute ?? DEV_LOGIN_PER_MINUTE);
    wired.add(rateLimits);
    const routers = await wireRouters(ctx, {
      clearance: billing.services.subscriptions,
      adoptionSources: options.adoption,
      apiUrl: () => boundUrl,
      accessPasswordKey: options.accessPasswordKey,
    });
    wired.add(routers);
    const tenancy = await wireTenancy(ctx, {
      memberships: auth.services.memberships,
      publicUrl: () => config.adoption.apiPublicUrl ?? boundUrl,
      ...(options.mailTiming ? { mailTiming: options.mailTiming } : {}),
    });
    wired.add(tenancy);
    const alerts = wireAlerts(ctx, {
      publicUrl: () => boundUrl,
      ...(options.alertTiming ? { timing: options.alertTiming } : {}),
    });
    wired.add(alerts);
    const changes = await wireChanges(ctx);
    wired.add(changes);
    const health = wireHealth(ctx, { evaluate: options.schedules !== false });
    wired.add(health);

    const { subscriptions: _subscriptions, mirror: _mirror, ...billingServices } = billing.services;
    const services: Services = {
      ...billingServices,
      ...auth.services,
      ...events.services,
      ...rateLimits.services,
      ...routers.services,
      ...tenancy.services,
      ...alerts.services,
      ...changes.services,
      ...health.services,
      clientAddress: (req) =>
        clientAddress(req.socket.remoteAddress, req.headers["x-forwarded-for"], config.clients.trustProxy),
    };

    let migrated = false;
    const isReady = async () => {
      if (!migrated) migrated = await db.isReady();
      if (!migrated) return false;
      await db.ping();
      return true;
    };
    const publicHost = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
    const { stripe, usesRealStripe } = billing;
    const app = createApp({
      router: appRouter,
      services,
      logger,
      isReady,
      metricsToken: config.metricsToken,
      publicUrl: `http://${publicHost}:${config.port}`,
      console: {
        dir: config.consoleDir,
        devLogin: auth.signer !== undefined,
        oidc: config.auth.oidc ? { displayName: config.auth.oidc.displayName } : undefined,
        processor:
          !usesRealStripe && stripe.apiBase ? { kind: "emulator", apiBase: stripe.apiBase } : { kind: "stripe" },
      },
    });
    // docs/operations.md "API port connections": slow, idle and piled-up connections are closed.
    const tuning = { ...API_CONNECTION_TUNING, ...options.connections };
    const server = createServer(apiServerOptions(tuning), app);
    limitConnectionsPerAddress(server, {
      perAddress: tuning.connectionsPerAddress,
      trusted: config.clients.trustProxy,
      logger,
    });
    const port = await listen(server, { host: config.host, port: config.port });
    const url = serverUrl(config.host, port, "localhost");
    boundUrl = url;
    billing.onListening(config.host, port);
    // Registered once listening succeeded. Cluster-wide maintenance: each runs once per cron slot
    // however many API processes run (docs/operations.md "Metrics and probes"); tests call the
    // same functions directly.
    const registeredTasks: RegisteredTask[] = [];
    for (const feature of options.schedules === false ? [] : wired.features) {
      for (const task of feature.schedules) registeredTasks.push(await registerScheduledTask(jobs, task));
    }

    return {
      url,
      port,
      stripeEmulatorUrl: billing.emulator?.url,
      publishableKey: stripe.publishableKey,
      devLogin: auth.signer !== undefined,
      close: async () => {
        for (const task of registeredTasks) await task.stop();
        // Open SSE subscriptions end first, so closing the server does not wait on them.
        services.routers.close();
        await closeHttpServer(server);
        await wired.close();
      },
    };
  } catch (error) {
    await wired.close().catch(() => {});
    throw error;
  }
};

/** For the admin CLI's bootstrap key (docs/operations.md "Commands"). */
export { mintApiKey, storeApiKey } from "./features/api-keys/api-keys.service.ts";

/** For the role lookup bench (`npm run bench:roles`) and other apps' tests of authorization. */
export { MembershipsService, ROLE_CACHE_TTL_MS } from "./features/members/memberships.service.ts";

/** For the alert bench (`npm run bench:alerts`): the engine and the worker as the API wires them. */
export { AlertEngine } from "./features/alerts/alert-engine.ts";
export { ChannelSender } from "./features/alerts/channel-sender.ts";
export { NotificationDeliveryWorker } from "./features/alerts/notification-delivery.worker.ts";
export { NotificationChannelsService } from "./features/alerts/notification-channels.service.ts";
export { SecretBox } from "./features/webhooks/webhook-secret.ts";
