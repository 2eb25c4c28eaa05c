import { AccountsRepository, BillingMirrorRepository, SubscriptionsRepository } from "@fleet/db";
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
import { rejection } from "../../testing/rejections.ts";

let db: TestDatabase;
let emulator: StripeEmulator;
let stripe: Stripe;

const DOCS = "http://localhost:3000/docs";

const newMirror = (client: Stripe = stripe) => {
  const repository = new BillingMirrorRepository(db);
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
    accounts: new AccountsRepository(db),
    subscriptions: new SubscriptionsRepository(db),
    gateway: createSubscriptionGateway(client),
    docsUrl: DOCS,
    mirror: new BillingMirrorRepository(db),
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

const rowOf = async (accountId: string) => new SubscriptionsRepository(db).findByAccount(accountId);

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
