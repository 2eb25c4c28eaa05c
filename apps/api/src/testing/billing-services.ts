import { BillingMirror } from "../features/subscriptions/billing-mirror.ts";
import { AccountsRepository, type Database, queryOf, SubscriptionsRepository } from "@fleet/db";
import { makeUser } from "@fleet/db/testing";
import { systemClock } from "@fleet/shared";
import { type StripeEmulator, startStripeEmulator } from "@fleet/stripe-emulator";
import Stripe from "stripe";
import { AccountService } from "../features/account/account.service.ts";
import type { AuthClaims } from "../features/auth/token-verifier.ts";
import { InvoicesService } from "../features/invoices/invoices.service.ts";
import { PaymentMethodsService } from "../features/payment-methods/payment-methods.service.ts";
import { BillingMirrorService, LIVE_BILLING_READS } from "../features/subscriptions/billing-mirror.service.ts";
import { SubscriptionService } from "../features/subscriptions/subscription.service.ts";
import { createCustomerGateway } from "../integrations/stripe/billing-gateway.ts";
import { createPaymentsGateway } from "../integrations/stripe/payments-gateway.ts";
import { createStripeClient } from "../integrations/stripe/stripe-client.ts";
import { createSubscriptionGateway } from "../integrations/stripe/subscription-gateway.ts";

// The billing feature's services for the service tier (docs/contributing.md "Add a test"), built
// the way wiring/billing.wiring.ts builds them, on a test database and the Stripe emulator.

export const DOCS_URL = "http://localhost:3000/docs";
export const SECRET_KEY = "sk_test_service_tier";
export const PUBLISHABLE_KEY = "pk_test_service_tier";
/** Where nothing listens: a processor that cannot be reached. */
export const UNREACHABLE = new URL("http://127.0.0.1:9");

export interface BillingEmulator {
  emulator: StripeEmulator;
  /** The server side (secret key), what the services use and tests check with. */
  server: Stripe;
  /** What Stripe.js does in the browser: publishable key only, never retried. */
  browser: Stripe;
  close(): Promise<void>;
}

export const startBillingEmulator = async (): Promise<BillingEmulator> => {
  const emulator = await startStripeEmulator({ port: 0 });
  const apiBase = new URL(emulator.url);
  const browser = new Stripe(PUBLISHABLE_KEY, {
    host: apiBase.hostname,
    port: apiBase.port,
    protocol: "http",
    maxNetworkRetries: 0,
  });
  return {
    emulator,
    server: createStripeClient({ secretKey: SECRET_KEY, publishableKey: PUBLISHABLE_KEY, apiBase }),
    browser,
    close: () => emulator.close(),
  };
};

export interface BillingServices {
  accounts: AccountService;
  mirror: BillingMirrorService;
  subscriptions: SubscriptionService;
  paymentMethods: PaymentMethodsService;
  invoices: InvoicesService;
  /** What the services reported through `onError` (failures that do not fail the call). */
  errors: Array<{ error: unknown; context: string }>;
}

/**
 * The billing services on `db` against the processor at `apiBase` (the emulator's, or
 * `UNREACHABLE`); one try per call against an unreachable processor, so its failures are quick.
 */
export const billingServices = (db: Database, apiBase: URL, options: { trialRouters?: number } = {}) => {
  const client =
    apiBase === UNREACHABLE
      ? new Stripe(SECRET_KEY, { host: apiBase.hostname, port: apiBase.port, protocol: "http", maxNetworkRetries: 0 })
      : createStripeClient({ secretKey: SECRET_KEY, publishableKey: PUBLISHABLE_KEY, apiBase });
  const errors: BillingServices["errors"] = [];
  const onError = (error: unknown, context: string) => errors.push({ error, context });
  const accountsRepository = new AccountsRepository(db);
  const accounts = new AccountService({
    accounts: accountsRepository,
    customers: createCustomerGateway(client),
    docsUrl: DOCS_URL,
  });
  const payments = createPaymentsGateway(client);
  const subscriptionGateway = createSubscriptionGateway(client);
  const mirrorRepository = new BillingMirror(db);
  const mirror = new BillingMirrorService({
    repository: mirrorRepository,
    reconcile: { mirror: mirrorRepository, payments, subscriptions: subscriptionGateway, clock: systemClock },
    live: createPaymentsGateway(client, LIVE_BILLING_READS),
    clock: systemClock,
    onError,
  });
  const subscriptions = new SubscriptionService({
    db,
    accounts: accountsRepository,
    subscriptions: new SubscriptionsRepository(queryOf(db)),
    gateway: subscriptionGateway,
    docsUrl: DOCS_URL,
    mirror: mirrorRepository,
    mirrorWrites: mirror,
    payments,
    trialRouters: options.trialRouters ?? 3,
  });
  const services: BillingServices = {
    accounts,
    mirror,
    subscriptions,
    paymentMethods: new PaymentMethodsService({
      accounts,
      payments,
      publishableKey: PUBLISHABLE_KEY,
      mirror,
      billing: subscriptions,
      onError,
    }),
    invoices: new InvoicesService({ accounts, mirror }),
    errors,
  };
  return services;
};

/** Claims of a token of the user's organization with the account scopes. */
export const accountClaims = (
  owner: { userId: string; organizationId: string; teamId?: string },
  timezone?: string,
): AuthClaims => ({
  userId: owner.userId,
  organizationId: owner.organizationId,
  teamId: owner.teamId,
  scopes: new Set(["account:read", "account:write"]),
  timezone,
  exp: Math.floor(Date.now() / 1000) + 600,
  credential: { type: "token", id: owner.userId },
});

/** A new user whose organization has a billing account made through AccountService (a processor customer). */
export const accountHolder = async (
  db: Database,
  services: Pick<BillingServices, "accounts">,
  options: { timezone?: string; country?: string } = {},
): Promise<{ claims: AuthClaims; customerId: string; accountId: string; organizationId: string }> => {
  const user = await makeUser(db);
  const claims = accountClaims(user, options.timezone);
  await services.accounts.create(claims, {
    name: "Card Co",
    email: `${crypto.randomUUID()}@example.com`,
    address: { country: options.country ?? "US" },
  });
  const account = await services.accounts.requireAccount(user.organizationId);
  return { claims, customerId: account.stripeCustomerId, accountId: account.id, organizationId: user.organizationId };
};
