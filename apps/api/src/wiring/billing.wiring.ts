import { BillingMirror } from "../features/subscriptions/billing-mirror.ts";
import { AccountsRepository, queryOf, SubscriptionsRepository } from "@fleet/db";
import { startStripeEmulator, type StripeEmulator } from "@fleet/stripe-emulator";
import { serverUrl } from "@fleet/shared";
import { AccountService } from "../features/account/account.service.ts";
import { InvoicesService } from "../features/invoices/invoices.service.ts";
import { PaymentMethodsService } from "../features/payment-methods/payment-methods.service.ts";
import { BillingMirrorService, LIVE_BILLING_READS } from "../features/subscriptions/billing-mirror.service.ts";
import { StripeWebhookService } from "../features/subscriptions/stripe-webhook.service.ts";
import { SubscriptionService } from "../features/subscriptions/subscription.service.ts";
import { createCustomerGateway } from "../integrations/stripe/billing-gateway.ts";
import { createPaymentsGateway } from "../integrations/stripe/payments-gateway.ts";
import { createStripeClient, type StripeConnection } from "../integrations/stripe/stripe-client.ts";
import { createSubscriptionGateway } from "../integrations/stripe/subscription-gateway.ts";
import { createWebhookVerifier, resolveEmulatorWebhookSecret } from "../integrations/stripe/webhook-verifier.ts";
import type { Wired, WiringContext } from "./wiring.ts";

const EMULATOR_SECRET_KEY = "sk_test_fleet_emulator";
const EMULATOR_PUBLISHABLE_KEY = "pk_test_fleet_emulator";

export interface BillingServices {
  accounts: AccountService;
  paymentMethods: PaymentMethodsService;
  invoices: InvoicesService;
  stripeWebhooks: StripeWebhookService;
  /** Enrolling a router is creating a service: the routers feature asks it first. */
  subscriptions: SubscriptionService;
  mirror: BillingMirrorService;
}

export interface WiredBilling extends Wired<BillingServices> {
  stripe: StripeConnection;
  usesRealStripe: boolean;
  /** The built-in emulator, when no processor is configured. */
  emulator: StripeEmulator | undefined;
  /** Once the API listens: the emulator announces its changes to it, like Stripe to a configured endpoint. */
  onListening(host: string, port: number): void;
}

/**
 * Accounts, payment methods, invoices, subscriptions and the billing mirror (docs/billing.md), on
 * the `stripe` SDK pointed at Stripe when keys are set, else at the emulator (started here).
 */
export const wireBilling = async (
  { config, db, logger, wallClock }: WiringContext,
  startEmulator: typeof startStripeEmulator = startStripeEmulator,
): Promise<WiredBilling> => {
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
    emulator = await startEmulator({
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
  const accounts = new AccountsRepository(db);
  const accountService = new AccountService({
    accounts,
    customers: createCustomerGateway(stripeClient),
    docsUrl: config.docsUrl,
    logger: logger.child({ feature: "account" }),
  });
  const payments = createPaymentsGateway(stripeClient);
  const subscriptionGateway = createSubscriptionGateway(stripeClient);
  const billingLogger = logger.child({ feature: "billing" });
  const mirrorRepository = new BillingMirror(db);
  const billingMirror = new BillingMirrorService({
    repository: mirrorRepository,
    reconcile: { mirror: mirrorRepository, payments, subscriptions: subscriptionGateway, clock: wallClock },
    live: createPaymentsGateway(stripeClient, LIVE_BILLING_READS),
    clock: wallClock,
    onError: (error, context) => billingLogger.warn({ err: error }, context),
  });
  const subscriptionService = new SubscriptionService({
    db,
    accounts,
    subscriptions: new SubscriptionsRepository(queryOf(db)),
    gateway: subscriptionGateway,
    docsUrl: config.docsUrl,
    mirror: mirrorRepository,
    mirrorWrites: billingMirror,
    payments,
    trialRouters: config.billing.trialRouters,
  });
  const reconcileCron = billingReconcileCron(config.billing.reconcileIntervalMs);
  return {
    services: {
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
        verify: createWebhookVerifier(webhookSecret, wallClock),
        mirror: mirrorRepository,
        clock: wallClock,
      }),
      subscriptions: subscriptionService,
      mirror: billingMirror,
    },
    // docs/billing.md "Reconciliation": the mirror is compared with the processor, and processor
    // customers left behind by an interrupted account create are removed (hourly).
    schedules: [
      ...(reconcileCron
        ? [
            {
              queue: "billing.reconcile",
              cron: reconcileCron,
              run: async () => {
                const result = await billingMirror.reconcileExclusive();
                if (result) billingLogger.info(result, "billing mirror reconciled");
              },
            },
          ]
        : []),
      {
        queue: "billing.orphan-customers",
        cron: "23 * * * *",
        run: async () => {
          const { removed } = await accountService.removeOrphanCustomers(wallClock.now());
          if (removed.length > 0) billingLogger.info({ removed }, "orphan processor customers removed");
        },
      },
    ],
    stripe,
    usesRealStripe: Boolean(config.stripe.secretKey && config.stripe.publishableKey),
    emulator,
    onListening: (host, port) => {
      if (emulator && webhookSecret) {
        emulator.setWebhookEndpoint({ url: `${serverUrl(host, port)}/v1/stripe/webhook`, secret: webhookSecret });
      }
    },
    close: async () => {
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
