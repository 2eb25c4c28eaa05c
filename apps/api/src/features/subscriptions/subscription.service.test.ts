import { BillingMirror } from "./billing-mirror.ts";
import { AccountsRepository, queryOf, SubscriptionsRepository } from "@fleet/db";
import {
  createTestDatabase,
  databaseFingerprint,
  makeAccount,
  makeChildOrganization,
  makeRouter,
  makeUser,
  type TestDatabase,
} from "@fleet/db/testing";
import { systemClock } from "@fleet/shared";
import { type StripeEmulator, startStripeEmulator } from "@fleet/stripe-emulator";
import type Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStripeClient } from "../../integrations/stripe/stripe-client.ts";
import { createPaymentsGateway } from "../../integrations/stripe/payments-gateway.ts";
import { createSubscriptionGateway, priceLookupKey } from "../../integrations/stripe/subscription-gateway.ts";
import { BillingMirrorService } from "./billing-mirror.service.ts";
import { currencyForCountry, managedRouterPrice } from "./managed-router-prices.ts";
import { SubscriptionService } from "./subscription.service.ts";
import { accountHolder, type BillingServices, billingServices } from "../../testing/billing-services.ts";
import { rejection } from "../../testing/rejections.ts";

let db: TestDatabase;
let emulator: StripeEmulator;
let stripe: Stripe;

const DOCS = "http://localhost:3000/docs";

const newMirror = (client: Stripe = stripe) => {
  const repository = new BillingMirror(db);
  return new BillingMirrorService({
    repository,
    reconcile: {
      mirror: repository,
      payments: createPaymentsGateway(client),
      subscriptions: createSubscriptionGateway(client),
      clock: systemClock,
    },
    clock: systemClock,
    onError: () => {},
  });
};

const newService = (client: Stripe = stripe, trialRouters = 3) =>
  new SubscriptionService({
    db,
    accounts: new AccountsRepository(db),
    subscriptions: new SubscriptionsRepository(queryOf(db)),
    gateway: createSubscriptionGateway(client),
    docsUrl: DOCS,
    mirror: new BillingMirror(db),
    mirrorWrites: newMirror(client),
    payments: createPaymentsGateway(client),
    trialRouters,
  });
let service: SubscriptionService;

beforeAll(async () => {
  [db, emulator] = await Promise.all([createTestDatabase(), startStripeEmulator({ port: 0 })]);
  stripe = createStripeClient({
    secretKey: "sk_test_subscriptions",
    publishableKey: "pk_test_subscriptions",
    apiBase: new URL(emulator.url),
  });
  service = newService();
});
afterAll(async () => {
  await emulator?.close();
  await db?.close();
});

/** An organization whose billing account is linked to a real emulator customer. */
const billedOrganization = async (country = "DE") => {
  const user = await makeUser(db);
  const customer = await stripe.customers.create({ email: `${crypto.randomUUID()}@example.com` });
  const account = await makeAccount(db, user.organizationId, { country, stripeCustomerId: customer.id });
  if (!account) throw new Error("account not created");
  // A card on file, mirrored: past the trial, routers are billed from the first one.
  const card = await stripe.paymentMethods.attach("pm_card_visa", { customer: customer.id });
  await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: card.id } });
  await newMirror().reconcile([{ id: account.id, organizationId: user.organizationId, stripeCustomerId: customer.id }]);
  return { ...user, account, customerId: customer.id };
};

const subscriptionsOf = async (customerId: string) =>
  (await stripe.subscriptions.list({ customer: customerId, status: "all" })).data;

const rowOf = async (accountId: string) => new SubscriptionsRepository(queryOf(db)).findByAccount(accountId);

const accountCurrency = async (accountId: string) =>
  (await db.query<{ currency: string }>("select currency from billing_accounts where id = $1", [accountId]))[0]
    ?.currency;

describe("ensureClearance", () => {
  it("refuses an organization without a billing account with 402 saying how to fix it", async () => {
    const user = await makeUser(db);
    const error = await rejection(service.ensureClearance(user.organizationId));
    expect(error.code).toBe("payment_required");
    expect(error.status).toBe(402);
    expect(error.message).toBe(
      "Creating a service needs a billing account, and this organization has none. Create one with POST /v1/account (name, email, address.country), then try again.",
    );
    expect(error.extra).toEqual({ documentation_url: DOCS, billing_organization_id: user.organizationId });
  });

  it("refuses a child organization whose root has no account, naming the root", async () => {
    const root = await makeUser(db);
    const child = await makeChildOrganization(db, root.organizationId, "Reseller Child");
    const rootName = (
      await db.query<{ name: string }>("select name from organizations where id = $1", [root.organizationId])
    )[0]?.name;
    const error = await rejection(service.ensureClearance(child.organizationId));
    expect(error.status).toBe(402);
    expect(error.message).toContain(`"${rootName}" (${root.organizationId}) has none`);
    expect(error.extra?.billing_organization_id).toBe(root.organizationId);
  });

  it("clears an organization with an account, and a child of one", async () => {
    const billed = await billedOrganization();
    const child = await makeChildOrganization(db, billed.organizationId);
    await expect(service.ensureClearance(billed.organizationId)).resolves.toBeUndefined();
    await expect(service.ensureClearance(child.organizationId)).resolves.toBeUndefined();
  });

  it("an unknown organization is an authentication problem", async () => {
    expect((await rejection(service.ensureClearance(crypto.randomUUID()))).status).toBe(401);
  });
});

describe("syncQuantity", () => {
  it("creates the subscription at the first router, follows the tree's router count, and sets the currency", async () => {
    const org = await billedOrganization("DE");
    await service.syncQuantity(org.organizationId);
    expect(await subscriptionsOf(org.customerId)).toEqual([]);
    expect(await rowOf(org.account.id)).toBeNull();
    expect(await accountCurrency(org.account.id)).toBe("");

    await makeRouter(db, org);
    await makeRouter(db, org);
    await service.syncQuantity(org.organizationId);
    const [created] = await subscriptionsOf(org.customerId);
    expect(
      created?.items.data.map((i) => [i.quantity, i.price.currency, i.price.unit_amount, i.price.recurring?.interval]),
    ).toEqual([[2, "eur", 900, "month"]]);
    expect((await stripe.products.retrieve(created?.items.data[0]?.price.product as string)).name).toBe(
      "Managed router",
    );
    expect(created?.metadata).toEqual({ fleet_account_id: org.account.id });
    expect(await rowOf(org.account.id)).toMatchObject({
      stripeSubscriptionId: created?.id,
      quantity: 2,
      currency: "eur",
    });
    expect(await accountCurrency(org.account.id)).toBe("EUR");
    // The card on file paid the first invoice at once.
    const invoice = await stripe.invoices.retrieve(created?.latest_invoice as string);
    expect(invoice).toMatchObject({ status: "paid", amount_due: 1800, currency: "eur" });

    // Routers of organizations below the root count for the root (called with the child's id).
    const child = await makeChildOrganization(db, org.organizationId);
    const childRouter = await makeRouter(db, child);
    await service.syncQuantity(child.organizationId);
    expect((await stripe.subscriptions.retrieve(created?.id ?? "")).items.data[0]?.quantity).toBe(3);
    expect((await rowOf(org.account.id))?.quantity).toBe(3);

    // Removal lowers it; no change means no processor write at all.
    await db.query("delete from routers where id = $1", [childRouter.id]);
    await service.syncQuantity(org.organizationId);
    expect((await stripe.subscriptions.retrieve(created?.id ?? "")).items.data[0]?.quantity).toBe(2);
    const writes = emulator.store.idempotency.size;
    await service.syncQuantity(org.organizationId);
    expect(emulator.store.idempotency.size).toBe(writes);
    expect(await subscriptionsOf(org.customerId)).toHaveLength(1);
  });

  it.each([
    ["JP", "jpy", 1500, "JPY"],
    ["KW", "kwd", 3000, "KWD"],
    ["AF", "usd", 1000, "USD"],
    ["US", "usd", 1000, "USD"],
  ])("an account in %s is billed in %s (%i per router)", async (country, currency, unitAmount, stored) => {
    const org = await billedOrganization(country);
    await makeRouter(db, org);
    await service.syncQuantity(org.organizationId);
    const [sub] = await subscriptionsOf(org.customerId);
    expect(sub?.items.data[0]?.price).toMatchObject({ currency, unit_amount: unitAmount });
    expect(await accountCurrency(org.account.id)).toBe(stored);
  });

  it("makes one price per currency and reuses it", async () => {
    const a = await billedOrganization("FR");
    const b = await billedOrganization("IT");
    await makeRouter(db, a);
    await makeRouter(db, b);
    await service.syncQuantity(a.organizationId);
    await newService().syncQuantity(b.organizationId);
    const [subA] = await subscriptionsOf(a.customerId);
    const [subB] = await subscriptionsOf(b.customerId);
    expect(subA?.items.data[0]?.price.id).toBe(subB?.items.data[0]?.price.id);
    const key = priceLookupKey(managedRouterPrice("EUR"));
    expect([...emulator.store.prices.values()].filter((p) => p.lookup_key === key)).toHaveLength(1);
  });

  it("concurrent syncs, in one process or two, leave exactly one live subscription", async () => {
    const org = await billedOrganization();
    await makeRouter(db, org);
    await makeRouter(db, org);
    const other = newService();
    await Promise.all([
      service.syncQuantity(org.organizationId),
      service.syncQuantity(org.organizationId),
      service.syncQuantity(org.organizationId),
      other.syncQuantity(org.organizationId),
      other.syncQuantity(org.organizationId),
    ]);
    const live = (await subscriptionsOf(org.customerId)).filter((s) => s.status !== "canceled");
    expect(live).toHaveLength(1);
    expect(live[0]?.items.data[0]?.quantity).toBe(2);
    expect((await rowOf(org.account.id))?.stripeSubscriptionId).toBe(live[0]?.id);
  });

  it("adopts a subscription whose creation answer was lost instead of making a second", async () => {
    const org = await billedOrganization("US");
    const gateway = createSubscriptionGateway(stripe);
    const priceId = await gateway.ensurePrice(managedRouterPrice(currencyForCountry("US")));
    const lost = await gateway.createSubscription({
      customerId: org.customerId,
      accountId: org.account.id,
      priceId,
      quantity: 1,
    });
    await makeRouter(db, org);
    await makeRouter(db, org);
    await makeRouter(db, org);
    await service.syncQuantity(org.organizationId);
    const subs = await subscriptionsOf(org.customerId);
    expect(subs.map((s) => s.id)).toEqual([lost.id]);
    expect(subs[0]?.items.data[0]?.quantity).toBe(3);
    expect(await rowOf(org.account.id)).toMatchObject({ stripeSubscriptionId: lost.id, quantity: 3 });
  });

  it("does nothing for an organization without an account", async () => {
    const user = await makeUser(db);
    await makeRouter(db, user);
    const before = await databaseFingerprint(db);
    await service.syncQuantity(user.organizationId);
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("maps an unreachable processor to 502 and writes nothing", async () => {
    const org = await billedOrganization();
    await makeRouter(db, org);
    const down = newService(
      createStripeClient({
        secretKey: "sk_test_down",
        publishableKey: "pk_test_down",
        apiBase: new URL("http://127.0.0.1:9"),
      }),
    );
    const before = await databaseFingerprint(db);
    const error = await rejection(down.syncQuantity(org.organizationId));
    expect(error.code).toBe("upstream_failed");
    expect(error.status).toBe(502);
    expect(await databaseFingerprint(db)).toBe(before);
    expect(await accountCurrency(org.account.id)).toBe("");
    // The next sync with the processor back repairs it.
    await service.syncQuantity(org.organizationId);
    expect((await rowOf(org.account.id))?.quantity).toBe(1);
  });
});

// docs/billing.md "Failed payments" and the trial, with the services a card save and an enrollment
// use (SubscriptionService, PaymentMethodsService, the billing mirror) on the emulator. An
// enrollment is what RouterService.enroll asks of the subscription: ensureClearance, a router row,
// syncQuantity (that a failed first charge enrolls nothing is RouterService's, in
// routers.service.test.ts). Changes made at the processor reach the mirror by reconciliation here
// (by signed events in production).
describe("trial routers and failed payments", () => {
  const TRIAL = 2;
  let tier: BillingServices;
  beforeAll(() => {
    tier = billingServices(db, new URL(emulator.url), { trialRouters: TRIAL });
  });

  const holder = async (country = "US") => {
    const made = await accountHolder(db, tier, { country });
    const user = { organizationId: made.organizationId, teamId: made.claims.teamId ?? "" };
    return { ...made, user };
  };
  /** What enrollment asks of the subscription module around the router it stores. */
  const enroll = async (org: { organizationId: string; user: { organizationId: string; teamId: string } }) => {
    await tier.subscriptions.ensureClearance(org.organizationId);
    const router = await makeRouter(db, org.user);
    await tier.subscriptions.syncQuantity(org.organizationId);
    return router;
  };
  const saveCard = async (org: Awaited<ReturnType<typeof holder>>, pm: string) => {
    const card = await stripe.paymentMethods.attach(pm, { customer: org.customerId });
    await tier.paymentMethods.save(org.claims, card.id);
    return card.id;
  };
  const mirrorCatchesUp = (org: Awaited<ReturnType<typeof holder>>) =>
    tier.mirror.reconcile([
      { id: org.accountId, organizationId: org.organizationId, stripeCustomerId: org.customerId },
    ]);

  it("without a card: TRIAL_ROUTERS routers enroll unbilled, the next is refused changing nothing; the first card bills them all", async () => {
    const org = await holder("DE");
    await enroll(org);
    await enroll(org);
    expect(await subscriptionsOf(org.customerId)).toEqual([]);
    const before = await databaseFingerprint(db);
    const refused = await rejection(tier.subscriptions.ensureClearance(org.organizationId));
    expect(refused.status).toBe(402);
    expect(refused.message).toBe(
      "Without a payment method on file a billing account may run 2 routers, and this organization's account has 2. Save a card with POST /v1/account/payment-methods, then try again.",
    );
    expect(refused.extra).toMatchObject({ trial_routers: TRIAL, billing_organization_id: org.organizationId });
    expect(await databaseFingerprint(db)).toBe(before);

    // The first saved card starts the subscription for both trial routers, paid at once.
    await saveCard(org, "pm_card_visa");
    const [sub] = await subscriptionsOf(org.customerId);
    expect(sub?.items.data.map((i) => [i.quantity, i.price.currency, i.price.unit_amount])).toEqual([[2, "eur", 900]]);
    expect(await accountCurrency(org.accountId)).toBe("EUR");
    const [invoice] = await tier.invoices.list(org.claims);
    expect(invoice).toMatchObject({ currency: "EUR", currency_symbol: "€", amount_due: 18, status: "paid" });

    // Past the trial now: the next router enrolls and is billed.
    await enroll(org);
    expect((await stripe.subscriptions.retrieve(sub?.id ?? "")).items.data[0]?.quantity).toBe(3);
  });

  it("a first charge that fails is refused naming the unpaid invoice, then blocks; only a working card unblocks", async () => {
    const org = await holder();
    // pm_card_chargeCustomerFail: Stripe's test card that attaches but declines every charge.
    await saveCard(org, "pm_card_chargeCustomerFail");
    await tier.subscriptions.ensureClearance(org.organizationId);
    await makeRouter(db, org.user);
    const first = await rejection(tier.subscriptions.syncQuantity(org.organizationId));
    expect(first.status).toBe(402);
    expect(first.message).toMatch(
      /^The first charge of the subscription failed: invoice [A-Z0-9]+-0001 \(in_\w+, \$10\) is unpaid\. Save a working card with POST \/v1\/account\/payment-methods, then try again\.$/,
    );
    const [sub] = await subscriptionsOf(org.customerId);
    expect(sub?.status).toBe("incomplete");
    const invoiceId = String(sub?.latest_invoice);
    expect(first.extra).toMatchObject({ subscription_status: "incomplete", invoice_id: invoiceId });
    expect(await stripe.invoices.retrieve(invoiceId)).toMatchObject({ status: "open", attempt_count: 1 });

    // Blocked by the mirror's subscription status, naming the open invoice; nothing changes.
    const before = await databaseFingerprint(db);
    const blocked = await rejection(tier.subscriptions.ensureClearance(org.organizationId));
    expect(blocked.status).toBe(402);
    expect(blocked.message).toContain('A payment of this organization\'s subscription failed (status "incomplete")');
    expect(blocked.message).toContain(`(${invoiceId}, $10) is unpaid`);
    expect(await databaseFingerprint(db)).toBe(before);
    expect(await tier.invoices.list(org.claims)).toEqual([
      expect.objectContaining({ id: invoiceId, status: "open", attempt_count: 1 }),
    ]);

    // Another failing card: saved, the invoice is charged again and fails again; still blocked.
    await saveCard(org, "pm_card_chargeCustomerFail");
    expect(await stripe.invoices.retrieve(invoiceId)).toMatchObject({ status: "open" });
    expect((await rejection(tier.subscriptions.ensureClearance(org.organizationId))).status).toBe(402);

    // A working card: saved as the default, the open invoice is charged again and paid; unblocked.
    await saveCard(org, "pm_card_visa");
    expect(await stripe.invoices.retrieve(invoiceId)).toMatchObject({ status: "paid" });
    await tier.subscriptions.ensureClearance(org.organizationId);
    expect(await tier.invoices.list(org.claims)).toEqual([
      expect.objectContaining({ id: invoiceId, status: "paid", paid: true }),
    ]);
    expect((await stripe.subscriptions.retrieve(String(sub?.id))).status).toBe("active");
  });

  it("a subscription that falls past_due blocks new services, naming the unpaid invoice", async () => {
    const org = await holder();
    await saveCard(org, "pm_card_visa");
    await enroll(org);
    // The card starts failing; the next invoice of the subscription (a renewal, here a prorated
    // change billed at once) fails and the processor moves the subscription to past_due.
    const failing = await stripe.paymentMethods.attach("pm_card_chargeCustomerFail", { customer: org.customerId });
    await stripe.customers.update(org.customerId, { invoice_settings: { default_payment_method: failing.id } });
    const [sub] = (await stripe.subscriptions.list({ customer: org.customerId })).data;
    await stripe.subscriptions.update(sub?.id ?? "", {
      items: [{ id: sub?.items.data[0]?.id ?? "", quantity: 5 }],
      proration_behavior: "always_invoice",
    });
    // Until the mirror hears of it, nothing blocks.
    await tier.subscriptions.ensureClearance(org.organizationId);
    await mirrorCatchesUp(org);
    const blocked = await rejection(tier.subscriptions.ensureClearance(org.organizationId));
    expect(blocked.status).toBe(402);
    expect(blocked.message).toContain('(status "past_due")');
    expect(blocked.message).toMatch(/: invoice [A-Z0-9]+-0002 \(in_\w+, \$40\) is unpaid\./);
    expect(blocked.extra).toMatchObject({ subscription_status: "past_due" });
  });

  it("a subscription cancelled at the processor is replaced by a new one at the next router", async () => {
    const org = await holder();
    await saveCard(org, "pm_card_visa");
    await enroll(org);
    const [old] = (await stripe.subscriptions.list({ customer: org.customerId })).data;
    await stripe.subscriptions.cancel(old?.id ?? "");
    await mirrorCatchesUp(org);
    await enroll(org);
    const live = (await stripe.subscriptions.list({ customer: org.customerId })).data;
    expect(live).toHaveLength(1);
    expect(live[0]?.id).not.toBe(old?.id);
    expect(live[0]?.status).toBe("active");
    expect(live[0]?.items.data[0]?.quantity).toBe(2);
    expect((await rowOf(org.accountId))?.stripeSubscriptionId).toBe(live[0]?.id);
  });
});
