import { createTestDatabase, databaseFingerprint, makeRouter, type TestDatabase } from "@fleet/db/testing";
import type Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testCard } from "../../testing/billing-fixtures.ts";
import {
  accountHolder,
  type BillingEmulator,
  type BillingServices,
  billingServices,
  startBillingEmulator,
  UNREACHABLE,
} from "../../testing/billing-services.ts";
import { rejection } from "../../testing/rejections.ts";

// The service tier (docs/contributing.md "Add a test"): the billing mirror (docs/billing.md
// "Billing mirror") behind PaymentMethodsService, InvoicesService and AccountService on a real
// database, the processor = the Stripe emulator, or an address where nothing listens. No event
// reaches the mirror here (the emulator has no webhook endpoint): what it holds comes from the
// services' own writes and from reconciliation.

let db: TestDatabase;
let stripe: BillingEmulator;
let billing: BillingServices;
let down: BillingServices;

beforeAll(async () => {
  [db, stripe] = await Promise.all([createTestDatabase(), startBillingEmulator()]);
  billing = billingServices(db, new URL(stripe.emulator.url));
  down = billingServices(db, UNREACHABLE);
});
afterAll(async () => {
  await stripe?.close();
  await db?.close();
});

type Holder = Awaited<ReturnType<typeof accountHolder>>;

/** A card saved the way a browser does it: setup intent, Stripe.js card + confirm, then the service. */
const saveCard = async (holder: Holder, number = "4242424242424242") => {
  const intent = await billing.paymentMethods.createSetupIntent(holder.claims);
  const pm = await stripe.browser.paymentMethods.create({ type: "card", card: testCard(number) });
  await stripe.browser.setupIntents.confirm(intent.id, {
    payment_method: pm.id,
    client_secret: intent.client_secret,
  } as Stripe.SetupIntentConfirmParams);
  await billing.paymentMethods.save(holder.claims, pm.id);
  return pm.id;
};

describe("the processor unreachable", () => {
  it("lists cards and invoices from the mirror as they were; writes fail with 502 and change nothing", async () => {
    const holder = await accountHolder(db, billing);
    const cardId = await saveCard(holder);
    // A router billed from the first card: the subscription's paid invoice is mirrored by the sync.
    await makeRouter(db, { organizationId: holder.organizationId, teamId: holder.claims.teamId ?? "" });
    await billing.subscriptions.syncQuantity(holder.organizationId);
    const cards = await billing.paymentMethods.list(holder.claims);
    const invoices = await billing.invoices.list(holder.claims);
    expect(cards.map((c) => c.id)).toEqual([cardId]);
    expect(invoices).toEqual([expect.objectContaining({ status: "paid" })]);

    expect(await down.paymentMethods.list(holder.claims)).toEqual(cards);
    expect(await down.invoices.list(holder.claims)).toEqual(invoices);
    const before = await databaseFingerprint(db);
    const writes = [
      () => down.paymentMethods.createSetupIntent(holder.claims),
      () => down.paymentMethods.save(holder.claims, cardId),
      () => down.paymentMethods.delete(holder.claims, cardId),
      () => down.accounts.update(holder.claims, { name: "Not Now" }),
    ];
    for (const write of writes) expect((await rejection(write())).status).toBe(502);
    expect(await databaseFingerprint(db)).toBe(before);
    expect((await stripe.server.paymentMethods.list({ customer: holder.customerId, type: "card" })).data).toHaveLength(
      1,
    );
  });
});

describe("the lists while the processor is reachable", () => {
  it("show the processor's current state right after each change, 20 rounds in a row, never the mirror's", async () => {
    const holder = await accountHolder(db, billing);
    const defaultCard = await saveCard(holder);
    const server = stripe.server;
    const errorsBefore = billing.errors.length;
    const invoiceStatus = async (id: string) =>
      (await billing.invoices.list(holder.claims)).find((i) => i.id === id)?.status ?? "absent";
    const cardIds = async () => (await billing.paymentMethods.list(holder.claims)).map((c) => c.id);
    const ends = ["paid", "void", "uncollectible"] as const;
    for (let round = 0; round < 20; round++) {
      await server.invoiceItems.create({ customer: holder.customerId, amount: 500 + round, currency: "usd" });
      const id = (await server.invoices.create({ customer: holder.customerId })).id ?? "";
      expect([round, await invoiceStatus(id)]).toEqual([round, "draft"]);
      await server.invoices.finalizeInvoice(id);
      expect([round, await invoiceStatus(id)]).toEqual([round, "open"]);
      const end = ends[round % ends.length];
      if (end === "paid") await server.invoices.pay(id);
      else if (end === "void") await server.invoices.voidInvoice(id);
      else await server.invoices.markUncollectible(id);
      expect([round, await invoiceStatus(id)]).toEqual([round, end]);

      const pm = await stripe.browser.paymentMethods.create({ type: "card", card: testCard("5555555555554444") });
      await server.paymentMethods.attach(pm.id, { customer: holder.customerId });
      expect([round, await cardIds()]).toEqual([round, [defaultCard, pm.id]]);
      await server.paymentMethods.detach(pm.id);
      expect([round, await cardIds()]).toEqual([round, [defaultCard]]);
    }
    // No list fell back to the mirror; the mirror holds only what the account's first read built
    // it from (round 0's invoice, then a draft): every later state came from the processor itself.
    expect(billing.errors.slice(errorsBefore)).toEqual([]);
    expect(await db.query("select status from billing_invoices where account_id = $1", [holder.accountId])).toEqual([
      { status: "draft" },
    ]);
  });
});

describe("reconciliation", () => {
  it("repairs the mirror after changes made at the processor", async () => {
    const holder = await accountHolder(db, billing);
    const first = await saveCard(holder);
    const second = await saveCard(holder, "5555555555554444");
    expect((await billing.paymentMethods.list(holder.claims)).map((c) => c.id)).toEqual([first, second]);

    // Changes in the processor's dashboard (their events would be lost).
    const server = stripe.server;
    await server.customers.update(holder.customerId, { invoice_settings: { default_payment_method: first } });
    await server.paymentMethods.detach(second);
    await server.invoiceItems.create({ customer: holder.customerId, amount: 700, currency: "usd" });
    const invoice = await server.invoices.create({ customer: holder.customerId });
    await server.invoices.finalizeInvoice(invoice.id ?? "");

    // The lists show the processor's state at once; the mirror (what an outage shows) is stale.
    expect((await billing.paymentMethods.list(holder.claims)).map((c) => c.id)).toEqual([first]);
    expect((await down.paymentMethods.list(holder.claims)).map((c) => c.id)).toEqual([first, second]);
    expect(await down.invoices.list(holder.claims)).toEqual([]);

    const result = await billing.mirror.reconcile([
      { id: holder.accountId, organizationId: holder.organizationId, stripeCustomerId: holder.customerId },
    ]);
    expect(result).toEqual({ accounts: 1, failed: 0 });
    expect((await down.paymentMethods.list(holder.claims)).map((c) => c.id)).toEqual([first]);
    const listed = await down.invoices.list(holder.claims);
    expect(listed).toEqual([expect.objectContaining({ id: invoice.id, status: "open", amount_due: 7 })]);
    expect(await billing.invoices.list(holder.claims)).toEqual(listed);
    const defaults = await db.query<{ id: string }>(
      "select id from billing_payment_methods where account_id = $1 and is_default",
      [holder.accountId],
    );
    expect(defaults.map((r) => r.id)).toEqual([first]);
  });
});
