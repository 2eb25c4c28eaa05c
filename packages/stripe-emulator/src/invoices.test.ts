import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, stripeError } from "./testing/test-emulator.ts";
import type { TestContext } from "./testing/test-emulator.ts";

let t: TestContext;
let nowMs = Date.UTC(2031, 4, 10, 9, 0, 0);
const nowSec = () => Math.floor(nowMs / 1000);
const tick = (seconds: number) => {
  nowMs += seconds * 1000;
};

beforeAll(async () => {
  t = await startTestEmulator({ clock: { nowMs: () => nowMs } });
});
afterAll(() => t.emulator.close());

async function customerWithCard(card = "pm_card_visa", extra: Stripe.CustomerCreateParams = {}) {
  const customer = await t.stripe.customers.create({ email: "billing@example.com", name: "Acme", ...extra });
  const pm = await t.stripe.paymentMethods.attach(card, { customer: customer.id });
  await t.stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: pm.id } });
  return { customer, pm };
}

describe("one-off invoices", () => {
  it("builds a USD invoice from pending items, finalizes and pays it", async () => {
    const { customer } = await customerWithCard();
    const i1 = await t.stripe.invoiceItems.create({
      customer: customer.id,
      amount: 1250,
      currency: "usd",
      description: "Router A",
    });
    await t.stripe.invoiceItems.create({
      customer: customer.id,
      amount: 750,
      currency: "usd",
      description: "Router B",
    });
    await t.stripe.invoiceItems.create({
      customer: customer.id,
      amount: 999,
      currency: "eur",
      description: "Other currency",
    });
    expect(i1.id).toMatch(/^ii_/);
    expect(i1.invoice).toBeNull();

    const draft = await t.stripe.invoices.create({ customer: customer.id, currency: "usd", description: "May usage" });
    expect(draft.id).toMatch(/^in_/);
    expect(draft).toMatchObject({
      object: "invoice",
      status: "draft",
      number: null,
      currency: "usd",
      description: "May usage",
      customer: customer.id,
      collection_method: "charge_automatically",
      billing_reason: "manual",
      amount_due: 2000,
      amount_paid: 0,
      amount_remaining: 2000,
      subtotal: 2000,
      total: 2000,
      subtotal_excluding_tax: 2000,
      total_excluding_tax: 2000,
      total_taxes: [],
      starting_balance: 0,
      ending_balance: null,
      due_date: null,
      invoice_pdf: null,
      hosted_invoice_url: null,
      paid: false,
      attempted: false,
      attempt_count: 0,
      period_start: nowSec(),
      period_end: nowSec(),
      created: nowSec(),
      livemode: false,
    });
    expect(draft.lines.data.map((l) => [l.description, l.amount, l.currency, l.quantity])).toEqual([
      ["Router A", 1250, "usd", 1],
      ["Router B", 750, "usd", 1],
    ]);
    expect(draft.lines.data[0]?.period).toEqual({ start: nowSec(), end: nowSec() });
    expect((await t.stripe.invoiceItems.retrieve(i1.id)).invoice).toBe(draft.id);

    const open = await t.stripe.invoices.finalizeInvoice(draft.id);
    expect(open.status).toBe("open");
    expect(open.number).toMatch(/^[A-Z0-9]{8}-0001$/);
    expect(open.invoice_pdf).toBe(`${t.emulator.url}/i/${draft.id}/pdf`);
    expect(open.hosted_invoice_url).toBe(`${t.emulator.url}/i/${draft.id}`);
    expect(open.status_transitions.finalized_at).toBe(nowSec());
    expect(open.ending_balance).toBe(0);

    const pdf = await fetch(open.invoice_pdf ?? "");
    expect(pdf.headers.get("content-type")).toBe("application/pdf");
    expect((await pdf.text()).startsWith("%PDF-1.4")).toBe(true);

    tick(60);
    const paid = await t.stripe.invoices.pay(draft.id);
    expect(paid).toMatchObject({
      status: "paid",
      amount_paid: 2000,
      amount_remaining: 0,
      attempted: true,
      attempt_count: 1,
      status_transitions: { paid_at: nowSec() },
    });
    expect((paid as unknown as { paid: boolean }).paid).toBe(true);

    const second = await t.stripe.invoices.create({
      customer: customer.id,
      currency: "usd",
      pending_invoice_items_behavior: "exclude",
    });
    const secondOpen = await t.stripe.invoices.finalizeInvoice(second.id);
    expect(secondOpen.number).toBe(open.number?.replace(/0001$/, "0002"));
  });

  it("bills JPY in zero-decimal minor units with price × quantity items and send_invoice due dates", async () => {
    const { customer } = await customerWithCard();
    const price = await t.stripe.prices.create({
      unit_amount: 1500,
      currency: "jpy",
      product_data: { name: "Port forward" },
    });
    expect(price).toMatchObject({ type: "one_time", recurring: null, unit_amount: 1500, currency: "jpy" });
    await t.stripe.invoiceItems.create({ customer: customer.id, amount: 999, currency: "usd" });

    const inv = await t.stripe.invoices.create({
      customer: customer.id,
      currency: "JPY",
      collection_method: "send_invoice",
      days_until_due: 30,
      pending_invoice_items_behavior: "exclude",
    });
    expect(inv.lines.data).toHaveLength(0);
    await t.stripe.invoiceItems.create({
      customer: customer.id,
      pricing: { price: price.id },
      quantity: 2,
      invoice: inv.id,
    });
    // Older API versions name it `price`.
    await t.stripe.invoiceItems.create({
      customer: customer.id,
      price: price.id,
      invoice: inv.id,
    } as Stripe.InvoiceItemCreateParams);
    await t.stripe.invoiceItems.create({
      customer: customer.id,
      amount: 500,
      currency: "jpy",
      invoice: inv.id,
      description: "Setup",
    });

    const open = await t.stripe.invoices.finalizeInvoice(inv.id);
    expect(open.currency).toBe("jpy");
    expect(open.total).toBe(5000);
    expect(open.amount_due).toBe(5000);
    expect(open.due_date).toBe(inv.created + 30 * 86400);
    expect(open.lines.data.map((l) => [l.description, l.amount, l.quantity])).toEqual([
      ["Port forward", 3000, 2],
      ["Port forward", 1500, 1],
      ["Setup", 500, 1],
    ]);
    expect(open.lines.data[0]?.pricing?.price_details?.price).toBe(price.id);

    const err = await stripeError(
      t.stripe.invoiceItems.create({ customer: customer.id, amount: 1, currency: "jpy", invoice: inv.id }),
    );
    expect(err.statusCode).toBe(400);
    expect(err.code).toBe("invoice_not_editable");

    const paid = await t.stripe.invoices.pay(inv.id);
    expect(paid.status).toBe("paid");
    expect(paid.amount_paid).toBe(5000);
  });

  it("voids and marks invoices uncollectible, enforcing the state machine", async () => {
    const { customer } = await customerWithCard();
    const mk = async () => {
      await t.stripe.invoiceItems.create({ customer: customer.id, amount: 300, currency: "usd" });
      const inv = await t.stripe.invoices.create({ customer: customer.id });
      return t.stripe.invoices.finalizeInvoice(inv.id);
    };
    const a = await mk();
    const voided = await t.stripe.invoices.voidInvoice(a.id);
    expect(voided.status).toBe("void");
    expect(voided.status_transitions.voided_at).toBe(nowSec());
    const payVoid = await stripeError(t.stripe.invoices.pay(a.id));
    expect(payVoid).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(payVoid.statusCode).toBe(400);
    expect((await stripeError(t.stripe.invoices.voidInvoice(a.id))).statusCode).toBe(400);

    const b = await mk();
    const bad = await t.stripe.invoices.markUncollectible(b.id);
    expect(bad.status).toBe("uncollectible");
    expect(bad.status_transitions.marked_uncollectible_at).toBe(nowSec());
    const recovered = await t.stripe.invoices.pay(b.id);
    expect(recovered.status).toBe("paid");

    const c = await mk();
    expect(c.status).toBe("open");
    expect((await stripeError(t.stripe.invoices.finalizeInvoice(c.id))).statusCode).toBe(400);
    expect((await stripeError(t.stripe.invoices.pay(recovered.id))).message).toBe("Invoice is already paid");

    const draft = await t.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: "exclude" });
    expect((await stripeError(t.stripe.invoices.markUncollectible(draft.id))).statusCode).toBe(400);
  });

  it("declines with 402 card_declined and counts only the first attempt", async () => {
    const { customer } = await customerWithCard("pm_card_chargeCustomerFail");
    await t.stripe.invoiceItems.create({ customer: customer.id, amount: 4200, currency: "usd" });
    const inv = await t.stripe.invoices.finalizeInvoice((await t.stripe.invoices.create({ customer: customer.id })).id);

    const err = await stripeError(t.stripe.invoices.pay(inv.id));
    expect(err).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect(err.statusCode).toBe(402);
    expect(err.code).toBe("card_declined");
    expect(err.decline_code).toBe("generic_decline");
    let after = await t.stripe.invoices.retrieve(inv.id);
    expect(after).toMatchObject({
      status: "open",
      attempted: true,
      attempt_count: 1,
      amount_paid: 0,
      amount_remaining: 4200,
    });

    await stripeError(t.stripe.invoices.pay(inv.id));
    after = await t.stripe.invoices.retrieve(inv.id);
    expect(after.attempt_count).toBe(1);

    const good = await t.stripe.paymentMethods.attach("pm_card_visa", { customer: customer.id });
    const paid = await t.stripe.invoices.pay(inv.id, { payment_method: good.id });
    expect(paid).toMatchObject({ status: "paid", attempt_count: 1, amount_paid: 4200 });
  });

  it("refuses to pay without a payment method, and supports paid_out_of_band", async () => {
    const customer = await t.stripe.customers.create();
    await t.stripe.invoiceItems.create({ customer: customer.id, amount: 800, currency: "usd" });
    const inv = await t.stripe.invoices.finalizeInvoice((await t.stripe.invoices.create({ customer: customer.id })).id);
    const err = await stripeError(t.stripe.invoices.pay(inv.id));
    expect(err.statusCode).toBe(400);
    expect(err.message).toContain("no attached payment source or default payment method");
    expect((await t.stripe.invoices.retrieve(inv.id)).attempt_count).toBe(0);

    const oob = await t.stripe.invoices.pay(inv.id, { paid_out_of_band: true });
    expect(oob.status).toBe("paid");
    expect((oob as unknown as { paid_out_of_band: boolean }).paid_out_of_band).toBe(true);
    expect(oob.attempt_count).toBe(0);
  });

  it("applies the customer's credit balance", async () => {
    const { customer } = await customerWithCard("pm_card_visa", { balance: -5000 });
    await t.stripe.invoiceItems.create({ customer: customer.id, amount: 3000, currency: "usd" });
    const covered = await t.stripe.invoices.finalizeInvoice(
      (await t.stripe.invoices.create({ customer: customer.id })).id,
    );
    expect(covered).toMatchObject({
      total: 3000,
      amount_due: 0,
      starting_balance: -5000,
      ending_balance: -2000,
      status: "paid",
    });
    expect(((await t.stripe.customers.retrieve(customer.id)) as Stripe.Customer).balance).toBe(-2000);

    await t.stripe.invoiceItems.create({ customer: customer.id, amount: 3000, currency: "usd" });
    const partial = await t.stripe.invoices.create({ customer: customer.id });
    const paid = await t.stripe.invoices.pay(partial.id); // pays a draft: finalizes first
    expect(paid).toMatchObject({
      total: 3000,
      starting_balance: -2000,
      ending_balance: 0,
      amount_due: 1000,
      amount_paid: 1000,
      status: "paid",
    });
    expect(((await t.stripe.customers.retrieve(customer.id)) as Stripe.Customer).balance).toBe(0);

    // Voiding gives the consumed credit back.
    await t.stripe.customers.update(customer.id, { balance: -700 });
    await t.stripe.invoiceItems.create({ customer: customer.id, amount: 1000, currency: "usd" });
    const open = await t.stripe.invoices.finalizeInvoice(
      (await t.stripe.invoices.create({ customer: customer.id })).id,
    );
    expect(open.amount_due).toBe(300);
    await t.stripe.invoices.voidInvoice(open.id);
    expect(((await t.stripe.customers.retrieve(customer.id)) as Stripe.Customer).balance).toBe(-700);
  });
});

describe("listing invoices", () => {
  it("lists newest first (insertion order breaks ties) with limit, customer and status filters", async () => {
    const customer = await t.stripe.customers.create();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const inv = await t.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: "exclude" });
      ids.push(inv.id);
      if (i === 1) tick(10); // invoices 0/1 share a second, as do 2/3
    }
    const all = await t.stripe.invoices.list({ customer: customer.id });
    expect(all.data.map((i) => i.id)).toEqual([...ids].reverse());
    expect(all.has_more).toBe(false);

    const page = await t.stripe.invoices.list({ customer: customer.id, limit: 2 });
    expect(page.data.map((i) => i.id)).toEqual([ids[3], ids[2]]);
    expect(page.has_more).toBe(true);

    // An empty invoice has nothing due: finalizing marks it paid without a charge.
    const zero = await t.stripe.invoices.finalizeInvoice(ids[1] ?? "");
    expect(zero).toMatchObject({ status: "paid", amount_due: 0, amount_paid: 0, attempt_count: 0 });
    const paid = await t.stripe.invoices.list({ customer: customer.id, status: "paid" });
    expect(paid.data.map((i) => i.id)).toEqual([ids[1]]);
    const drafts = await t.stripe.invoices.list({ customer: customer.id, status: "draft" });
    expect(drafts.data.map((i) => i.id)).toEqual([ids[3], ids[2], ids[0]]);

    const other = await t.stripe.invoices.list({ customer: (await t.stripe.customers.create()).id });
    expect(other.data).toHaveLength(0);
    const err = await stripeError(t.stripe.invoices.list({ limit: 101 }));
    expect(err.statusCode).toBe(400);
    expect(err.param).toBe("limit");
  });
});
