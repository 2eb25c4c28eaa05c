import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXP_YEAR, startTestEmulator, stripeError } from "./testing/test-emulator.ts";
import type { TestContext } from "./testing/test-emulator.ts";

let t: TestContext;
beforeAll(async () => {
  t = await startTestEmulator();
});
afterAll(() => t.emulator.close());

const card = (number: string) => ({ number, exp_month: 12, exp_year: EXP_YEAR, cvc: "123" });

describe("card setup flow (SetupIntent + Stripe.js-style client calls)", () => {
  it("confirms a setup intent with a publishable key and attaches the card", async () => {
    const customer = await t.stripe.customers.create({ email: "setup@example.com" });
    const intent = await t.stripe.setupIntents.create({
      customer: customer.id,
      allowed_payment_method_types: ["card"],
      usage: "off_session",
      metadata: { purpose: "billing" },
    });
    expect(intent.id).toMatch(/^seti_/);
    expect(intent.client_secret).toMatch(new RegExp(`^${intent.id}_secret_\\w+$`));
    expect(intent).toMatchObject({
      object: "setup_intent",
      status: "requires_payment_method",
      customer: customer.id,
      payment_method: null,
      payment_method_types: ["card"],
      usage: "off_session",
      livemode: false,
      metadata: { purpose: "billing" },
      last_setup_error: null,
    });

    // Client side: create the card with the publishable key.
    const pm = await t.publishable.paymentMethods.create({ type: "card", card: card("4242424242424242") });
    expect(pm.id).toMatch(/^pm_/);
    expect(pm.customer).toBeNull();
    expect(pm.card).toMatchObject({
      brand: "visa",
      last4: "4242",
      exp_month: 12,
      exp_year: EXP_YEAR,
      funding: "credit",
      country: "US",
    });

    // Client side: Stripe.js reads the intent with its client secret.
    const seen = await t.publishable.setupIntents.retrieve(intent.id, { client_secret: intent.client_secret ?? "" });
    expect(seen.status).toBe("requires_payment_method");

    const confirmed = await t.publishable.setupIntents.confirm(intent.id, {
      payment_method: pm.id,
      client_secret: intent.client_secret ?? "",
    } as Stripe.SetupIntentConfirmParams);
    expect(confirmed.status).toBe("succeeded");
    expect(confirmed.payment_method).toBe(pm.id);

    const attached = await t.stripe.paymentMethods.retrieve(pm.id);
    expect(attached.customer).toBe(customer.id);
    const listed = await t.stripe.paymentMethods.list({ customer: customer.id, type: "card" });
    expect(listed.data.map((p) => p.id)).toEqual([pm.id]);
    const viaCustomer = await t.stripe.customers.listPaymentMethods(customer.id);
    expect(viaCustomer.data.map((p) => p.id)).toEqual([pm.id]);
  });

  it("accepts a raw Stripe.js form post with the key in the body", async () => {
    const body = new URLSearchParams({
      type: "card",
      "card[number]": "5555555555554444",
      "card[exp_month]": "4",
      "card[exp_year]": String(EXP_YEAR),
      "card[cvc]": "123",
      "billing_details[name]": "Jane Doe",
      key: "pk_test_browser",
    });
    const res = await fetch(`${t.emulator.url}/v1/payment_methods`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body,
    });
    expect(res.status).toBe(200);
    const pm = (await res.json()) as Stripe.PaymentMethod;
    expect(pm.card?.brand).toBe("mastercard");
    expect(pm.billing_details.name).toBe("Jane Doe");
    expect(pm.created).toBeGreaterThan(0);
  });

  it("rejects a wrong client_secret", async () => {
    // Older API versions name it `payment_method_types`.
    const intent = await t.stripe.setupIntents.create({
      payment_method_types: ["card"],
    } as Stripe.SetupIntentCreateParams);
    expect(intent.payment_method_types).toEqual(["card"]);
    const err = await stripeError(
      t.publishable.setupIntents.retrieve(intent.id, { client_secret: `${intent.id}_secret_wrong` }),
    );
    expect(err.statusCode).toBe(400);
    expect(err.param).toBe("client_secret");
    const missing = await stripeError(t.publishable.setupIntents.retrieve(intent.id));
    expect(missing.statusCode).toBe(400);
  });

  it("declines 4000000000000002 at confirm and leaves the intent requiring a payment method", async () => {
    const customer = await t.stripe.customers.create();
    const intent = await t.stripe.setupIntents.create({ customer: customer.id });
    const pm = await t.publishable.paymentMethods.create({ type: "card", card: card("4000000000000002") });
    expect(pm.card?.brand).toBe("visa");

    const err = await stripeError(
      t.publishable.setupIntents.confirm(intent.id, {
        payment_method: pm.id,
        client_secret: intent.client_secret ?? "",
      } as Stripe.SetupIntentConfirmParams),
    );
    expect(err).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect(err.statusCode).toBe(402);
    expect(err.code).toBe("card_declined");
    expect(err.decline_code).toBe("generic_decline");

    const after = await t.stripe.setupIntents.retrieve(intent.id);
    expect(after.status).toBe("requires_payment_method");
    expect(after.last_setup_error).toMatchObject({
      code: "card_declined",
      decline_code: "generic_decline",
      type: "card_error",
    });
    expect((await t.stripe.paymentMethods.retrieve(pm.id)).customer).toBeNull();

    // A good card then succeeds on the same intent.
    const ok = await t.stripe.setupIntents.confirm(intent.id, { payment_method: "pm_card_visa" });
    expect(ok.status).toBe("succeeded");
    expect(ok.last_setup_error).toBeNull();
  });
});

describe("card validation and brands", () => {
  const brands: Array<[string, string, string]> = [
    ["4242424242424242", "visa", "credit"],
    ["4000056655665556", "visa", "debit"],
    ["5555555555554444", "mastercard", "credit"],
    ["2223003122003222", "mastercard", "credit"],
    ["378282246310005", "amex", "credit"],
    ["371449635398431", "amex", "credit"],
    ["6011111111111117", "discover", "credit"],
    ["3056930009020004", "diners", "credit"],
    ["36227206271667", "diners", "credit"],
    ["3566002020360505", "jcb", "credit"],
    ["6200000000000005", "unionpay", "credit"],
    ["6035227716427021", "unknown", "unknown"],
  ];
  it.each(brands)("detects %s as %s", async (number, brand, funding) => {
    const pm = await t.publishable.paymentMethods.create({ type: "card", card: card(number) });
    expect(pm.type).toBe("card");
    expect(pm.card?.brand).toBe(brand);
    expect(pm.card?.funding).toBe(funding);
    expect(pm.card?.last4).toBe(number.slice(-4));
  });

  it("rejects a Luhn-invalid number with 402 incorrect_number", async () => {
    const err = await stripeError(
      t.publishable.paymentMethods.create({ type: "card", card: card("4242424242424241") }),
    );
    expect(err).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect(err.statusCode).toBe(402);
    expect(err.code).toBe("incorrect_number");
    expect(err.param).toBe("card[number]");
  });

  it("rejects an expired card with 402 invalid_expiry_year", async () => {
    const err = await stripeError(
      t.publishable.paymentMethods.create({
        type: "card",
        card: { number: "4242424242424242", exp_month: 1, exp_year: 2019, cvc: "123" },
      }),
    );
    expect(err.statusCode).toBe(402);
    expect(err.code).toBe("invalid_expiry_year");
  });

  it("requires card[number]", async () => {
    const err = await stripeError(
      t.publishable.paymentMethods.create({ type: "card", card: { exp_month: 1, exp_year: EXP_YEAR } as never }),
    );
    expect(err.statusCode).toBe(400);
    expect(err.code).toBe("parameter_missing");
    expect(err.param).toBe("card[number]");
  });
});

describe("attach, detach and default payment method", () => {
  it("attaches magic test cards as fresh payment methods, sets default, detaches", async () => {
    const customer = await t.stripe.customers.create();
    const visa = await t.stripe.paymentMethods.attach("pm_card_visa", { customer: customer.id });
    const mc = await t.stripe.paymentMethods.attach("pm_card_mastercard", { customer: customer.id });
    const visa2 = await t.stripe.paymentMethods.attach("pm_card_visa", { customer: customer.id });
    expect(visa.id).toMatch(/^pm_/);
    expect(visa.id).not.toBe("pm_card_visa");
    expect(visa2.id).not.toBe(visa.id);
    expect(mc.card?.brand).toBe("mastercard");
    expect(mc.customer).toBe(customer.id);

    const listed = await t.stripe.paymentMethods.list({ customer: customer.id, type: "card" });
    expect(listed.data.map((p) => p.id)).toEqual([visa2.id, mc.id, visa.id]);

    const updated = await t.stripe.customers.update(customer.id, {
      invoice_settings: { default_payment_method: mc.id },
    });
    expect(updated.invoice_settings.default_payment_method).toBe(mc.id);

    const detached = await t.stripe.paymentMethods.detach(mc.id);
    expect(detached.customer).toBeNull();
    const after = (await t.stripe.customers.retrieve(customer.id)) as Stripe.Customer;
    expect(after.invoice_settings.default_payment_method).toBeNull();
    const remaining = await t.stripe.paymentMethods.list({ customer: customer.id });
    expect(remaining.data.map((p) => p.id)).toEqual([visa2.id, visa.id]);
  });

  it("refuses a default payment method that is not attached to the customer", async () => {
    const customer = await t.stripe.customers.create();
    const pm = await t.publishable.paymentMethods.create({ type: "card", card: card("4242424242424242") });
    const err = await stripeError(
      t.stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: pm.id } }),
    );
    expect(err.statusCode).toBe(400);
    expect(err.param).toBe("invoice_settings[default_payment_method]");
  });

  it("declines attaching pm_card_chargeDeclined", async () => {
    const customer = await t.stripe.customers.create();
    const err = await stripeError(t.stripe.paymentMethods.attach("pm_card_chargeDeclined", { customer: customer.id }));
    expect(err.statusCode).toBe(402);
    expect(err.code).toBe("card_declined");
  });

  it("refuses detaching a payment method that is not attached", async () => {
    const pm = await t.publishable.paymentMethods.create({ type: "card", card: card("4242424242424242") });
    const err = await stripeError(t.stripe.paymentMethods.detach(pm.id));
    expect(err.statusCode).toBe(400);
  });

  it("refuses attach with a publishable key", async () => {
    const customer = await t.stripe.customers.create();
    const err = await stripeError(t.publishable.paymentMethods.attach("pm_card_visa", { customer: customer.id }));
    expect(err.statusCode).toBe(403);
  });
});
