import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  AccountsRepository,
  acquireStatusFeed,
  ApiKeysRepository,
  AuditLogRepository,
  type Database,
  ForwardsRepository,
  IdentityRepository,
  RoutersRepository,
  SubscriptionsRepository,
  WebhooksRepository,
} from "@fleet/db";
import type { Clock } from "@fleet/shared";
import { loadOemSnapshot, OemRepository } from "@fleet/db";
import { startStripeEmulator, type StripeEmulator } from "@fleet/stripe-emulator";
import type { Logger } from "pino";
import type { ApiConfig } from "./config.ts";
import { AccountService } from "./features/account/account.service.ts";
import { ApiKeyVerifier } from "./features/api-keys/api-key-verifier.ts";
import { ApiKeysService } from "./features/api-keys/api-keys.service.ts";
import { AuditLogService } from "./features/audit-log/audit-log.service.ts";
import { scheduleAuditPrune } from "./features/audit-log/prune-audit-log.job.ts";
import { AuthService } from "./features/auth/auth.service.ts";
import { ForwardsService } from "./features/forwards/forwards.service.ts";
import { InvoicesService } from "./features/invoices/invoices.service.ts";
import { PaymentMethodsService } from "./features/payment-methods/payment-methods.service.ts";
import { resolveDevJwtSecret } from "./features/auth/dev-secret.ts";
import { OrganizationResolver } from "./features/auth/organization-resolver.ts";
import { TokenSigner, TokenVerifier } from "./features/auth/token-verifier.ts";
import { type OemRefreshSchedule, scheduleOemRefresh } from "./features/oem/oem-refresh.job.ts";
import { OemService } from "./features/oem/oem.service.ts";
import { RouterService } from "./features/routers/routers.service.ts";
import { SubscriptionService } from "./features/subscriptions/subscription.service.ts";
import { TeamResolver } from "./features/teams/team-resolver.ts";
import { DeliveryRuntime } from "./features/webhooks/delivery-runtime.ts";
import { WebhookDeliveryWorker } from "./features/webhooks/webhook-delivery.worker.ts";
import { WebhookDispatcher } from "./features/webhooks/webhook-dispatcher.ts";
import { SecretBox } from "./features/webhooks/webhook-secret.ts";
import { WebhooksService } from "./features/webhooks/webhooks.service.ts";
import { createApp } from "./http/app.ts";
import { createCustomerGateway } from "./integrations/stripe/billing-gateway.ts";
import { createPaymentsGateway } from "./integrations/stripe/payments-gateway.ts";
import { createSubscriptionGateway } from "./integrations/stripe/subscription-gateway.ts";
import { createStripeClient, type StripeConnection } from "./integrations/stripe/stripe-client.ts";
import type { Services } from "./services.ts";
import { appRouter } from "./trpc/app-router.ts";

export interface StartApiOptions {
  config: ApiConfig;
  /** Opened and migrated by the caller (the all-in-one shares one database between apps). */
  db: Database;
  logger: Logger;
  /** Milliseconds since the epoch; tests move it to expire tokens. */
  now?: () => number;
  /** Time of domain rules (forward expiry); defaults to `now`, else the system clock. */
  clock?: Clock;
  /** Webhook delivery timing (tests shrink it): first retry delay and the queue/outbox poll. */
  webhookTiming?: { retryDelaySeconds?: number; pollMs?: number; timeoutMs?: number };
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

const EMULATOR_SECRET_KEY = "sk_test_fleet_emulator";
const EMULATOR_PUBLISHABLE_KEY = "pk_test_fleet_emulator";

export const startApi = async ({
  config,
  db,
  logger,
  now,
  clock: domainClock,
  webhookTiming = {},
}: StartApiOptions): Promise<RunningApi> => {
  let emulator: StripeEmulator | undefined;
  let stripe: StripeConnection;
  if (config.stripe.secretKey && config.stripe.publishableKey) {
    stripe = {
      secretKey: config.stripe.secretKey,
      publishableKey: config.stripe.publishableKey,
      apiBase: config.stripe.apiBase,
    };
  } else if (config.stripe.apiBase) {
    stripe = {
      secretKey: EMULATOR_SECRET_KEY,
      publishableKey: EMULATOR_PUBLISHABLE_KEY,
      apiBase: config.stripe.apiBase,
    };
  } else {
    emulator = await startStripeEmulator({ host: config.host, port: config.stripe.emulatorPort });
    stripe = {
      secretKey: EMULATOR_SECRET_KEY,
      publishableKey: EMULATOR_PUBLISHABLE_KEY,
      apiBase: new URL(emulator.url),
    };
  }
  const stripeClient = createStripeClient(stripe);

  const apiKeyStore = new ApiKeysRepository(db);
  const auditLog = new AuditLogRepository(db);
  const apiKeys = new ApiKeyVerifier({
    keys: apiKeyStore,
    logger: logger.child({ feature: "api-keys" }),
    ...(now ? { now } : {}),
  });
  const jwtSecret = config.auth.jwksUrl ? undefined : (config.auth.jwtSecret ?? resolveDevJwtSecret(config.dataDir));
  const tokens = new TokenVerifier({
    secret: jwtSecret,
    jwksUrl: config.auth.jwksUrl,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
    apiKeys,
    ...(now ? { now } : {}),
  });
  const signer =
    config.auth.devLogin && jwtSecret
      ? new TokenSigner({ secret: jwtSecret, issuer: config.auth.issuer, audience: config.auth.audience })
      : undefined;

  const accounts = new AccountsRepository(db);
  const identity = new IdentityRepository(db);
  const oemCatalog = new OemRepository(db);
  const accountService = new AccountService({
    accounts,
    customers: createCustomerGateway(stripeClient),
    docsUrl: config.docsUrl,
  });
  const payments = createPaymentsGateway(stripeClient);

  const secrets = new SecretBox(
    config.events.webhookEncryptionKey ?? resolveDevJwtSecret(config.dataDir, "webhook-encryption-key"),
  );
  const eventClock = domainClock ?? { now: () => new Date(now ? now() : Date.now()) };
  let runtime: DeliveryRuntime | undefined;
  const webhookStore = new WebhooksRepository(db, {
    send: (queue, data, options) => (runtime as DeliveryRuntime).enqueuer.send(queue, data, options),
    ready: () => (runtime as DeliveryRuntime).ensure(),
  });
  const deliveryWorker = new WebhookDeliveryWorker({
    webhooks: webhookStore,
    secrets,
    clock: eventClock,
    logger: logger.child({ part: "webhook-delivery" }),
    allowPrivate: config.events.webhookAllowPrivate,
    ...(webhookTiming.retryDelaySeconds === undefined ? {} : { retryDelaySeconds: webhookTiming.retryDelaySeconds }),
    ...(webhookTiming.pollMs === undefined
      ? {}
      : { pollingIntervalSeconds: Math.max(0.5, webhookTiming.pollMs / 1000) }),
    ...(webhookTiming.timeoutMs === undefined ? {} : { timeoutMs: webhookTiming.timeoutMs }),
  });
  runtime = new DeliveryRuntime(db, deliveryWorker, logger.child({ part: "webhook-delivery" }));
  const dispatcher = new WebhookDispatcher({
    webhooks: webhookStore,
    runtime,
    clock: eventClock,
    logger: logger.child({ part: "webhook-dispatch" }),
    // pg-boss notifies its workers of new jobs itself.
    onQueued: () => undefined,
    ...(webhookTiming.pollMs === undefined ? {} : { pollMs: webhookTiming.pollMs }),
  });
  const statusFeed = await acquireStatusFeed(db, (error) => logger.warn({ err: error }, "status feed connection lost"));
  const services: Services = {
    tokens,
    organizations: new OrganizationResolver(identity),
    auth: new AuthService({ identity, signer, loginHookSecret: config.auth.loginHookSecret }),
    accounts: accountService,
    paymentMethods: new PaymentMethodsService({
      accounts: accountService,
      payments,
      publishableKey: stripe.publishableKey,
    }),
    invoices: new InvoicesService({ accounts: accountService, payments }),
    teams: new TeamResolver(identity),
    forwards: new ForwardsService({
      forwards: new ForwardsRepository(db),
      clock: domainClock ?? { now: () => new Date(now ? now() : Date.now()) },
      entryPoint: config.entryPoint,
    }),
    oem: new OemService({ catalog: oemCatalog }),
    routers: new RouterService({
      routers: new RoutersRepository(db),
      // Enrolling is creating a service: subscription check before, quantity sync after.
      clearance: new SubscriptionService({
        accounts,
        subscriptions: new SubscriptionsRepository(db),
        gateway: createSubscriptionGateway(stripeClient),
        docsUrl: config.docsUrl,
      }),
      feed: statusFeed.feed,
      clock: domainClock ?? { now: () => new Date(now ? now() : Date.now()) },
      logger: logger.child({ feature: "routers" }),
      oem: oemCatalog,
    }),
    apiKeys: new ApiKeysService({
      keys: apiKeyStore,
      clock: { now: () => new Date(now ? now() : Date.now()) },
      forget: (hash) => apiKeys.forget(hash),
    }),
    auditLog: new AuditLogService(auditLog),
    webhooks: new WebhooksService({
      webhooks: webhookStore,
      secrets,
      clock: eventClock,
      allowPrivate: config.events.webhookAllowPrivate,
      onChange: () => dispatcher.wake(),
    }),
  };
  const clock = { now: () => new Date(now ? now() : Date.now()) };
  await installOemSnapshot(oemCatalog, clock.now(), logger);

  let migrated = false;
  const isReady = async () => {
    if (!migrated) migrated = await db.isReady();
    if (!migrated) return false;
    await db.query("select 1");
    return true;
  };

  const publicHost = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  const app = createApp({
    router: appRouter,
    services,
    logger,
    isReady,
    publicUrl: `http://${publicHost}:${config.port}`,
  });
  const server = createServer({ keepAliveTimeout: 65_000 }, app);
  await listen(server, config.host, config.port);
  const port = (server.address() as AddressInfo).port;
  const url = `http://${publicHost.includes(":") ? `[${publicHost}]` : publicHost}:${port}`;
  // Started once listening succeeded, so a failed start leaves no timer behind.
  const oemRefresh: OemRefreshSchedule | undefined = config.oem.catalogUrl
    ? scheduleOemRefresh({
        url: config.oem.catalogUrl,
        cron: config.oem.refreshCron,
        catalog: oemCatalog,
        logger: logger.child({ job: "oem-refresh" }),
        clock,
      })
    : undefined;

  const auditPrune = scheduleAuditPrune({
    audit: auditLog,
    clock: domainClock ?? clock,
    retentionDays: config.events.auditRetentionDays,
    logger: logger.child({ job: "audit-prune" }),
  });

  return {
    url,
    port,
    stripeEmulatorUrl: emulator?.url,
    publishableKey: stripe.publishableKey,
    devLogin: signer !== undefined,
    close: async () => {
      await oemRefresh?.stop();
      await auditPrune.stop();
      await dispatcher.close();
      await runtime.close();
      // Open SSE subscriptions end first, so closing the server does not wait on them.
      services.routers.close();
      await closeServer(server);
      await apiKeys.flush();
      await statusFeed.release();
      await emulator?.close();
    },
  };
};

/**
 * A database seeded by an older release gets the shipped catalogue; refreshed data is kept. Never
 * fatal: instances starting together may race here, and the data already there is still good.
 */
const installOemSnapshot = async (catalog: OemRepository, now: Date, logger: Logger) => {
  try {
    if (await catalog.installSnapshot(loadOemSnapshot(), now)) logger.info("installed the shipped OEM catalogue");
  } catch (error) {
    logger.warn({ err: error }, "could not install the shipped OEM catalogue; keeping the stored one");
  }
};

const listen = (server: Server, host: string, port: number) =>
  new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port }, () => {
      server.off("error", reject);
      resolve();
    });
  });

/** Stop accepting, let in-flight requests finish (bounded), drop idle keep-alive sockets. */
const closeServer = (server: Server, graceMs = 10_000) =>
  new Promise<void>((resolve) => {
    const force = setTimeout(() => server.closeAllConnections(), graceMs);
    force.unref();
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
