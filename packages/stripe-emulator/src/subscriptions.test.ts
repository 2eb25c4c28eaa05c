import type Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, stripeError } from "./testing/test-emulator.ts";
import type { TestContext } from "./testing/test-emulator.ts";

let t: TestContext;
let nowMs = Date.UTC(2031, 4, 10, 9, 0, 0);
const nowSec = () => Math.floor(nowMs / 1000);
const tick = (seconds: number) => {
  nowMs += seconds * 1000;
};
let monthly: Stripe.Price;

beforeAll(async () => {
  t = await startTestEmulator({ clock: { nowMs: () => nowMs } });
  const product = await t.stripe.products.create({ name: "Fleet Pro" });
  monthly = await t.stripe.prices.create({
    product: product.id,
    unit_amount: 1000,
    currency: "usd",
    recurring: { interval: "month" },
  });
});
afterAll(() => t.emulator.close());

async function customerWithCard(card = "pm_card_visa") {
  const customer = await t.stripe.customers.create({ email: "sub@example.com" });
  const pm = await t.stripe.paymentMethods.attach(card, { customer: customer.id });
  await t.stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: pm.id } });
  return customer;
}

describe("subscriptions", () => {
  it("creates a subscription whose first invoice is finalized and paid", async () => {
    const customer = await customerWithCard();
    const start = nowSec();
    const sub = await t.stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: monthly.id, quantity: 3 }],
      metadata: { router_count: "3" },
    });
    const periodEnd = Date.UTC(2031, 5, 10, 9, 0, 0) / 1000;
    expect(sub.id).toMatch(/^sub_/);
    expect(sub).toMatchObject({
      object: "subscription",
      status: "active",
      customer: customer.id,
      currency: "usd",
      collection_method: "charge_automatically",
      metadata: { router_count: "3" },
      start_date: start,
      cancel_at_period_end: false,
      canceled_at: null,
    });
    const item = sub.items.data[0];
    expect(item?.id).toMatch(/^si_/);
    expect(item).toMatchObject({ quantity: 3, current_period_start: start, current_period_end: periodEnd });
    expect(item?.price.id).toBe(monthly.id);

    const inv = await t.stripe.invoices.retrieve(sub.latest_invoice as string);
    expect(inv).toMatchObject({
      status: "paid",
      billing_reason: "subscription_create",
      currency: "usd",
      amount_due: 3000,
      amount_paid: 3000,
      attempt_count: 1,
      attempted: true,
      period_start: start,
      period_end: periodEnd,
    });
    expect(inv.number).not.toBeNull();
    expect((inv as unknown as { subscription: string }).subscription).toBe(sub.id);
    expect(inv.parent?.subscription_details?.subscription).toBe(sub.id);
    expect(inv.lines.data.map((l) => [l.description, l.amount, l.quantity, l.period])).toEqual([
      ["3 × Fleet Pro (at $10.00 / month)", 3000, 3, { start, end: periodEnd }],
    ]);
  });

  it("leaves the first invoice open and the subscription incomplete without a payment method", async () => {
    const customer = await t.stripe.customers.create();
    const sub = await t.stripe.subscriptions.create({ customer: customer.id, items: [{ price: monthly.id }] });
    expect(sub.status).toBe("incomplete");
    const inv = await t.stripe.invoices.retrieve(sub.latest_invoice as string);
    expect(inv).toMatchObject({ status: "open", amount_due: 1000, attempted: false, attempt_count: 0 });
  });

  it("keeps a declined first invoice open, then activates once paid", async () => {
    const customer = await customerWithCard("pm_card_chargeCustomerFail");
    const sub = await t.stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: monthly.id, quantity: 2 }],
    });
    expect(sub.status).toBe("incomplete");
    const inv = await t.stripe.invoices.retrieve(sub.latest_invoice as string);
    expect(inv).toMatchObject({ status: "open", attempted: true, attempt_count: 1, amount_remaining: 2000 });

    const good = await t.stripe.paymentMethods.attach("pm_card_visa", { customer: customer.id });
    await t.stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: good.id } });
    const paid = await t.stripe.invoices.pay(inv.id);
    expect(paid.status).toBe("paid");
    expect((await t.stripe.subscriptions.retrieve(sub.id)).status).toBe("active");
  });

  it("uses the price currency (JPY) and honours send_invoice", async () => {
    const customer = await t.stripe.customers.create();
    const yen = await t.stripe.prices.create({
      unit_amount: 980,
      currency: "jpy",
      recurring: { interval: "month" },
      product_data: { name: "Fleet Basic" },
    });
    const sub = await t.stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: yen.id, quantity: 2 }],
      collection_method: "send_invoice",
      days_until_due: 14,
    });
    expect(sub).toMatchObject({
      status: "active",
      currency: "jpy",
      collection_method: "send_invoice",
      days_until_due: 14,
    });
    const inv = await t.stripe.invoices.retrieve(sub.latest_invoice as string);
    expect(inv).toMatchObject({
      status: "open",
      currency: "jpy",
      amount_due: 1960,
      due_date: inv.created + 14 * 86400,
    });
    expect(inv.lines.data[0]?.description).toBe("2 × Fleet Basic (at ¥980 / month)");
  });

  it("updates the quantity with none, create_prorations and always_invoice", async () => {
    const customer = await customerWithCard();
    const sub = await t.stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: monthly.id, quantity: 3 }],
    });
    const itemId = sub.items.data[0]?.id ?? "";

    const quiet = await t.stripe.subscriptions.update(sub.id, {
      items: [{ id: itemId, quantity: 4 }],
      proration_behavior: "none",
    });
    expect(quiet.items.data[0]?.quantity).toBe(4);
    expect(quiet.latest_invoice).toBe(sub.latest_invoice);
    expect((await t.stripe.invoiceItems.list({ customer: customer.id, pending: true })).data).toHaveLength(0);

    tick((31 * 86400) / 2); // halfway through May 10 → June 10
    const prorated = await t.stripe.subscriptions.update(sub.id, { items: [{ id: itemId, quantity: 6 }] });
    expect(prorated.items.data[0]?.quantity).toBe(6);
    const pending = await t.stripe.invoiceItems.list({ customer: customer.id, pending: true });
    expect(pending.data.map((ii) => [ii.amount, ii.proration]).sort()).toEqual([
      [-2000, true],
      [3000, true],
    ]);

    const invoiced = await t.stripe.subscriptions.update(sub.id, {
      items: [{ id: itemId, quantity: 2 }],
      proration_behavior: "always_invoice",
    });
    expect(invoiced.latest_invoice).not.toBe(sub.latest_invoice);
    const inv = await t.stripe.invoices.retrieve(invoiced.latest_invoice as string);
    expect(inv.billing_reason).toBe("subscription_update");
    // pending +3000 −2000, plus this change: −3000 (6 units, half period) +1000 (2 units, half period)
    expect(inv.total).toBe(-1000);
    expect(inv.amount_due).toBe(0);
    expect(inv.status).toBe("paid");
    expect(inv.ending_balance).toBe(-1000);
    expect(((await t.stripe.customers.retrieve(customer.id)) as Stripe.Customer).balance).toBe(-1000);
    expect((await t.stripe.invoiceItems.list({ customer: customer.id, pending: true })).data).toHaveLength(0);
  });

  it("cancels and filters canceled subscriptions from the default list", async () => {
    const customer = await customerWithCard();
    const sub = await t.stripe.subscriptions.create({ customer: customer.id, items: [{ price: monthly.id }] });
    expect((await t.stripe.subscriptions.list({ customer: customer.id })).data.map((s) => s.id)).toEqual([sub.id]);

    const canceled = await t.stripe.subscriptions.cancel(sub.id);
    expect(canceled).toMatchObject({ status: "canceled", canceled_at: nowSec(), ended_at: nowSec() });
    expect((await t.stripe.subscriptions.list({ customer: customer.id })).data).toHaveLength(0);
    const all = await t.stripe.subscriptions.list({ customer: customer.id, status: "all" });
    expect(all.data.map((s) => [s.id, s.status])).toEqual([[sub.id, "canceled"]]);

    const err = await stripeError(t.stripe.subscriptions.update(sub.id, { items: [{ price: monthly.id }] }));
    expect(err.statusCode).toBe(400);
  });

  it("rejects one-time prices and unknown prices", async () => {
    const customer = await t.stripe.customers.create();
    const once = await t.stripe.prices.create({ unit_amount: 500, currency: "usd", product_data: { name: "Once" } });
    const err = await stripeError(
      t.stripe.subscriptions.create({ customer: customer.id, items: [{ price: once.id }] }),
    );
    expect(err.statusCode).toBe(400);
    expect(err.param).toBe("items[0][price]");
    const missing = await stripeError(
      t.stripe.subscriptions.create({ customer: customer.id, items: [{ price: "price_nope" }] }),
    );
    expect(missing.code).toBe("resource_missing");
    expect(missing.param).toBe("items[0][price]");
    const noItems = await stripeError(t.stripe.subscriptions.create({ customer: customer.id }));
    expect(noItems.code).toBe("parameter_missing");
    expect(noItems.param).toBe("items");
  });
});
