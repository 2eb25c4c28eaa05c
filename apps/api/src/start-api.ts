import { createServer } from "node:http";
import {
  AccountsRepository,
  acquireJobEngine,
  AdoptionsRepository,
  acquireStatusFeed,
  BillingMirrorRepository,
  ApiKeysRepository,
  AuditLogRepository,
  AccessRepository,
  AvailabilityRepository,
  ConfigBackupsRepository,
  queueBackupJob,
  type Database,
  IdentityRepository,
  type RegisteredTask,
  RateLimitCountersRepository,
  RoutersRepository,
  registerScheduledTask,
  routerJobsQueue,
  type ScheduledTask,
  SubscriptionsRepository,
  WebhooksRepository,
} from "@fleet/db";
import { type Clock, clientAddress, closeHttpServer, listen, serverUrl } from "@fleet/shared";
import { loadOemSnapshot, OemRepository } from "@fleet/db";
import { startStripeEmulator, type StripeEmulator } from "@fleet/stripe-emulator";
import type { Logger } from "pino";
import type { ApiConfig } from "./config.ts";
import { AccountService } from "./features/account/account.service.ts";
import { ApiKeyVerifier } from "./features/api-keys/api-key-verifier.ts";
import { ApiKeysService } from "./features/api-keys/api-keys.service.ts";
import { AuditLogService } from "./features/audit-log/audit-log.service.ts";
import { pruneAuditLog } from "./features/audit-log/prune-audit-log.job.ts";
import { AuthService } from "./features/auth/auth.service.ts";
import { AccessService } from "./features/access/access.service.ts";
import { AvailabilityService } from "./features/availability/availability.service.ts";
import { pruneDowntime } from "./features/availability/prune-downtime.job.ts";
import { BackupsService } from "./features/backups/backups.service.ts";
import { ForwardsService } from "./features/forwards/forwards.service.ts";
import { InvoicesService } from "./features/invoices/invoices.service.ts";
import { PaymentMethodsService } from "./features/payment-methods/payment-methods.service.ts";
import { resolveDevJwtSecret } from "./features/auth/dev-secret.ts";
import { OrganizationResolver } from "./features/auth/organization-resolver.ts";
import { TokenSigner, TokenVerifier } from "./features/auth/token-verifier.ts";
import { CredentialWatch } from "./features/auth/credential-watch.ts";
import { type OemRefreshSchedule, scheduleOemRefresh, unscheduleOemRefresh } from "./features/oem/oem-refresh.job.ts";
import { OemService } from "./features/oem/oem.service.ts";
import { agentPublicKeySource } from "./features/routers/adoption/agent-public-key.ts";
import { AdoptionService } from "./features/routers/adoption/adoption.service.ts";
import { hubPublicKeySource } from "./features/routers/adoption/hub-public-key.ts";
import { RouterService } from "./features/routers/routers.service.ts";
import { BillingMirrorService, LIVE_BILLING_READS } from "./features/subscriptions/billing-mirror.service.ts";
import type { ReconcileResult } from "./features/subscriptions/reconcile-billing.ts";
import { StripeWebhookService } from "./features/subscriptions/stripe-webhook.service.ts";
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
import { createWebhookVerifier, resolveEmulatorWebhookSecret } from "./integrations/stripe/webhook-verifier.ts";
import type { Services } from "./services.ts";
import { appRouter } from "./trpc/app-router.ts";
import { DEV_LOGIN_PER_MINUTE, RateLimiter } from "./trpc/rate-limit.ts";
import { SharedRateLimiter } from "./trpc/shared-rate-limit.ts";

export interface StartApiOptions {
  config: ApiConfig;
  /** Opened and migrated by the caller (the all-in-one shares one database between apps). */
  db: Database;
  logger: Logger;
  /** Milliseconds since the epoch; tests move it to expire tokens. */
  now?: () => number;
  /** Time of domain rules (forward expiry); defaults to `now`, else the system clock. */
  clock?: Clock;
  /** Off only in the test that compares the fast path with tRPC's own adapter. */
  trpcFastPath?: boolean;
  /**
   * What the composition root knows better than the API's own configuration (docs/routeros.md
   * "Adoption"): where the heartbeat daemon really listens and the tunnel agent's public key.
   */
  adoption?: {
    heartbeatPublicUrl?: () => string;
    agentPublicKey?: () => string | undefined;
    /** The WireGuard hub's public key (TUNNEL_MODE=wireguard), from the tunnel agent in the same process. */
    hubPublicKey?: () => string | undefined;
  };
  /**
   * dev-login requests per minute per address (docs/api.md "Authentication": 10). The test harness
   * raises it, as every test logs in from 127.0.0.1; the rate-limit tests keep the real one.
   */
  devLoginPerMinute?: number;
  /** ACCESS_PASSWORD_KEY when the composition root shares one with the tunnel agent (DATA_DIR=memory). */
  accessPasswordKey?: string;
  /** Webhook delivery timing (tests shrink it): first retry delay and the queue/outbox poll. */
  webhookTiming?: { retryDelaySeconds?: number; pollMs?: number; timeoutMs?: number };
}

export interface RunningApi {
  url: string;
  port: number;
  /** Set when the built-in Stripe emulator was started. */
  stripeEmulatorUrl: string | undefined;
  /** The built-in emulator itself (tests wait for its webhook deliveries). */
  stripeEmulator: StripeEmulator | undefined;
  /** `reconcileBilling` on demand: every account's billing mirror rebuilt from the processor now. */
  reconcileBilling(): Promise<ReconcileResult>;
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
  trpcFastPath,
  devLoginPerMinute = DEV_LOGIN_PER_MINUTE,
  adoption: adoptionSources,
  webhookTiming = {},
  accessPasswordKey,
}: StartApiOptions): Promise<RunningApi> => {
  let emulator: StripeEmulator | undefined;
  let stripe: StripeConnection;
  // docs/billing.md "Webhooks": the configured endpoint secret, else (emulator) one kept in DATA_DIR.
  const webhookSecret =
    config.stripe.webhookSecret ?? (config.stripe.secretKey ? undefined : resolveEmulatorWebhookSecret(config.dataDir));
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
    // Loopback only, whatever HOST is: it accepts any test key (docs/billing.md "Stripe emulator").
    emulator = await startStripeEmulator({
      host: "127.0.0.1",
      port: config.stripe.emulatorPort,
      dataDir: config.dataDir,
    });
    stripe = {
      secretKey: EMULATOR_SECRET_KEY,
      publishableKey: EMULATOR_PUBLISHABLE_KEY,
      apiBase: new URL(emulator.url),
    };
  }
  const stripeClient = createStripeClient(stripe);
  const usesRealStripe = Boolean(config.stripe.secretKey && config.stripe.publishableKey);

  if (config.auth.devLoginWarning) logger.warn(config.auth.devLoginWarning);
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
    logger: logger.child({ feature: "account" }),
  });
  const payments = createPaymentsGateway(stripeClient);
  const subscriptionGateway = createSubscriptionGateway(stripeClient);
  const billingLogger = logger.child({ feature: "billing" });
  const mirrorRepository = new BillingMirrorRepository(db);
  const wallClock = () => new Date(now ? now() : Date.now());
  const billingMirror = new BillingMirrorService({
    repository: mirrorRepository,
    reconcile: { mirror: mirrorRepository, payments, subscriptions: subscriptionGateway, now: wallClock },
    live: createPaymentsGateway(stripeClient, LIVE_BILLING_READS),
    now: wallClock,
    onError: (error, context) => billingLogger.warn({ err: error }, context),
  });
  const subscriptionService = new SubscriptionService({
    accounts,
    subscriptions: new SubscriptionsRepository(db),
    gateway: subscriptionGateway,
    docsUrl: config.docsUrl,
    mirror: mirrorRepository,
    mirrorWrites: billingMirror,
    payments,
    trialRouters: config.billing.trialRouters,
  });
  // The process's job engine: forwards queue their router jobs through it, in their own transaction.
  const jobs = await acquireJobEngine(db, {
    instanceName: "api",
    onError: (error) => logger.warn({ err: error }, "job engine error"),
  });
  await jobs.defineQueue(routerJobsQueue(), { createOnly: true });

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
  const routersClock = domainClock ?? { now: () => new Date(now ? now() : Date.now()) };
  // Known once the server is bound (PORT=0 picks a free port).
  let boundUrl = `http://${config.host}:${config.port}`;
  const hostForUrl = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const { adoption: adoptionConfig } = config;
  const defaultHeartbeatUrl = `http://${hostForUrl.includes(":") ? `[${hostForUrl}]` : hostForUrl}:${adoptionConfig.heartbeatPort}`;
  const adoption = new AdoptionService({
    store: new AdoptionsRepository(db),
    clock: routersClock,
    logger: logger.child({ feature: "adoption" }),
    feed: statusFeed.feed,
    apiPublicUrl: () => adoptionConfig.apiPublicUrl ?? boundUrl,
    heartbeatPublicUrl: () =>
      adoptionConfig.heartbeatPublicUrl ?? adoptionSources?.heartbeatPublicUrl?.() ?? defaultHeartbeatUrl,
    agentPublicKey: adoptionSources?.agentPublicKey ?? agentPublicKeySource(adoptionConfig, config.dataDir),
    intervalMs: adoptionConfig.intervalMs,
    sshUser: adoptionConfig.sshUser,
    tunnelNetwork: adoptionConfig.tunnelNetwork,
    ...wireguardAdoption(config, adoptionSources?.hubPublicKey),
  });
  const teamResolver = new TeamResolver(identity);
  const rateLimitCounters = new RateLimitCountersRepository(db);
  const availability = new AvailabilityRepository(db);
  const services: Services = {
    tokens,
    organizations: new OrganizationResolver(identity),
    auth: new AuthService({ identity, signer, loginHookSecret: config.auth.loginHookSecret }),
    accounts: accountService,
    paymentMethods: new PaymentMethodsService({
      accounts: accountService,
      payments,
      publishableKey: stripe.publishableKey,
      mirror: billingMirror,
      billing: subscriptionService,
      onError: (error, context) => billingLogger.warn({ err: error }, context),
    }),
    invoices: new InvoicesService({ accounts: accountService, mirror: billingMirror }),
    stripeWebhooks: new StripeWebhookService({
      verify: createWebhookVerifier(webhookSecret, now),
      mirror: mirrorRepository,
      now: wallClock,
    }),
    teams: teamResolver,
    forwards: new ForwardsService({
      db,
      jobs,
      clock: domainClock ?? { now: () => new Date(now ? now() : Date.now()) },
      entryPoint: config.entryPoint,
      maxActivePerOrg: config.forwardsPerOrg,
      trialForwards: config.trust.trialForwards,
      tunnelNetwork: config.tunnelNetwork,
      loopbackSources: config.development,
    }),
    oem: new OemService({ catalog: oemCatalog }),
    routers: new RouterService({
      routers: new RoutersRepository(db, jobs),
      quarantineDays: config.trust.tunnelAddressQuarantineDays,
      // Enrolling is creating a service: subscription check before, quantity sync after.
      clearance: subscriptionService,
      feed: statusFeed.feed,
      clock: routersClock,
      logger: logger.child({ feature: "routers" }),
      oem: oemCatalog,
      adoption,
      tunnelNetwork: config.tunnelNetwork,
      tunnelMode: config.adoption.tunnel.mode,
    }),
    rateLimits: {
      api: new SharedRateLimiter({
        limit: config.rateLimitPerMinute,
        subject: "credential",
        store: rateLimitCounters,
        ...(now ? { now } : {}),
        onError: (error) => logger.warn({ err: error }, "rate limit counts not shared; counting locally"),
      }),
      unauthenticated: new SharedRateLimiter({
        limit: config.trust.rateLimitUnauthenticatedPerMinute,
        subject: "address without a valid credential",
        store: rateLimitCounters,
        ...(now ? { now } : {}),
        onError: (error) => logger.warn({ err: error }, "rate limit counts not shared; counting locally"),
      }),
      devLogin: new RateLimiter({ limit: devLoginPerMinute, subject: "address on dev-login" }),
    },
    clientAddress: (req) =>
      clientAddress(req.socket.remoteAddress, req.headers["x-forwarded-for"], config.trust.trustProxy),
    adoption,
    apiKeys: new ApiKeysService({
      keys: apiKeyStore,
      teams: teamResolver,
      clock: { now: () => new Date(now ? now() : Date.now()) },
      forget: (hash) => apiKeys.forget(hash),
    }),
    auditLog: new AuditLogService(auditLog),
    availability: new AvailabilityService({ availability, routers: new RoutersRepository(db), clock: routersClock }),
    access: new AccessService({
      access: new AccessRepository(db, jobs),
      routers: new RoutersRepository(db),
      clock: routersClock,
      entryPoint: config.entryPoint,
      maxActivePerOrg: config.forwardsPerOrg,
      trialForwards: config.trust.trialForwards,
      tunnelNetwork: config.tunnelNetwork,
      passwordKey:
        config.events.accessPasswordKey ??
        accessPasswordKey ??
        resolveDevJwtSecret(config.dataDir, "access-password-key"),
    }),
    backups: new BackupsService({
      backups: new ConfigBackupsRepository(db),
      routers: new RoutersRepository(db),
      queue: (routerId) => queueBackupJob(jobs, routerId),
    }),
    webhooks: new WebhooksService({
      webhooks: webhookStore,
      secrets,
      clock: eventClock,
      allowPrivate: config.events.webhookAllowPrivate,
      onChange: () => dispatcher.wake(),
    }),
    streams: new CredentialWatch({
      apiKeys: apiKeyStore,
      organizations: identity,
      now: now ?? Date.now,
    }),
  };
  const clock = { now: () => new Date(now ? now() : Date.now()) };
  await installOemSnapshot(oemCatalog, clock.now(), logger);

  let migrated = false;
  const isReady = async () => {
    if (!migrated) migrated = await db.isReady();
    if (!migrated) return false;
    await db.ping();
    return true;
  };

  const publicHost = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  const app = createApp({
    router: appRouter,
    services,
    logger,
    isReady,
    metricsToken: config.metricsToken,
    publicUrl: `http://${publicHost}:${config.port}`,
    ...(trpcFastPath === undefined ? {} : { trpcFastPath }),
    console: {
      dir: config.consoleDir,
      devLogin: signer !== undefined,
      processor: !usesRealStripe && stripe.apiBase ? { kind: "emulator", apiBase: stripe.apiBase } : { kind: "stripe" },
    },
  });
  const server = createServer({ keepAliveTimeout: 65_000 }, app);
  const port = await listen(server, { host: config.host, port: config.port });
  const url = serverUrl(config.host, port, "localhost");
  boundUrl = url;
  // The emulator announces its changes to this API, like Stripe to a configured endpoint.
  if (emulator && webhookSecret) {
    emulator.setWebhookEndpoint({ url: `${serverUrl(config.host, port)}/v1/stripe/webhook`, secret: webhookSecret });
  }
  // Started once listening succeeded, so a failed start leaves no timer behind.
  // Cluster-wide maintenance: each runs once per cron slot however many API processes run
  // (docs/operations.md "Metrics and probes"); tests call the same functions directly.
  const scheduledTasks: ScheduledTask[] = [];
  const reconcileCron = billingReconcileCron(config.billing.reconcileIntervalMs);
  if (reconcileCron) {
    // docs/billing.md "Reconciliation": the mirror is compared with the processor.
    scheduledTasks.push({
      queue: "billing.reconcile",
      cron: reconcileCron,
      run: async () => {
        const result = await billingMirror.reconcileExclusive();
        if (result) billingLogger.info(result, "billing mirror reconciled");
      },
    });
  }
  // docs/api.md "Audit log and webhooks": AUDIT_RETENTION_DAYS, pruned hourly.
  scheduledTasks.push({
    queue: "audit.prune",
    cron: "23 * * * *",
    run: () =>
      pruneAuditLog({
        audit: auditLog,
        clock: domainClock ?? clock,
        retentionDays: config.events.auditRetentionDays,
        logger: logger.child({ job: "audit-prune" }),
      }),
  });
  // docs/api.md "Availability": METRICS_RETENTION_DAYS of hourly downtime, pruned hourly.
  scheduledTasks.push({
    queue: "downtime.prune",
    cron: "37 * * * *",
    run: () =>
      pruneDowntime({
        downtime: availability,
        clock: domainClock ?? clock,
        retentionDays: config.events.metricsRetentionDays,
        logger: logger.child({ job: "downtime-prune" }),
      }),
  });
  const registeredTasks: RegisteredTask[] = [];
  for (const task of scheduledTasks) registeredTasks.push(await registerScheduledTask(jobs, task));
  let oemRefresh: OemRefreshSchedule | undefined;
  if (config.oem.catalogUrl) {
    oemRefresh = await scheduleOemRefresh(jobs, {
      url: config.oem.catalogUrl,
      cron: config.oem.refreshCron,
      catalog: oemCatalog,
      logger: logger.child({ job: "oem-refresh" }),
      clock,
    });
  } else {
    await unscheduleOemRefresh(jobs);
  }

  return {
    url,
    port,
    stripeEmulatorUrl: emulator?.url,
    stripeEmulator: emulator,
    reconcileBilling: () => billingMirror.reconcile(),
    publishableKey: stripe.publishableKey,
    devLogin: signer !== undefined,
    close: async () => {
      await oemRefresh?.stop();
      for (const task of registeredTasks) await task.stop();
      await dispatcher.close();
      await runtime.close();
      // Open SSE subscriptions end first, so closing the server does not wait on them.
      services.routers.close();
      await services.rateLimits.api.close();
      await services.rateLimits.unauthenticated.close();
      services.rateLimits.devLogin.close();
      await closeHttpServer(server);
      await apiKeys.flush();
      await statusFeed.release();
      await jobs.stop();
      await emulator?.close();
    },
  };
};

/**
 * BILLING_RECONCILE_INTERVAL_MS as a cron slot for the cluster-wide schedule (minute precision):
 * every N minutes below an hour, else hourly; 0 turns the periodic pass off.
 */
const billingReconcileCron = (intervalMs: number): string | undefined => {
  if (intervalMs <= 0) return undefined;
  const minutes = Math.max(1, Math.round(intervalMs / 60_000));
  if (minutes >= 60) return "0 * * * *";
  return minutes === 1 ? "* * * * *" : `*/${minutes} * * * *`;
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

/** For the admin CLI's bootstrap key (docs/operations.md "Commands"). */
export { mintApiKey } from "./features/api-keys/api-keys.service.ts";

/** TUNNEL_MODE=wireguard: the adoption script's tunnel part (docs/routeros.md "The management tunnel"). */
const wireguardAdoption = (
  config: ApiConfig,
  hubPublicKey: (() => string | undefined) | undefined,
): { wireguard?: ConstructorParameters<typeof AdoptionService>[0]["wireguard"] } => {
  const tunnel = config.adoption.tunnel;
  if (tunnel.mode !== "wireguard") return {};
  return {
    wireguard: {
      hubPublicKey: hubPublicKey ?? hubPublicKeySource(tunnel, config.dataDir),
      endpointHost: tunnel.endpoint.host,
      endpointPort: tunnel.endpoint.port,
      hubAddress: tunnel.hubAddress,
      // What the agent (SSH) and temporary access (WinBox 8291, WebFig 80) reach on the router itself.
      servicePorts: [...new Set([config.adoption.sshPort, 8291, 80])],
    },
  };
};
