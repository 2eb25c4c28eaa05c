import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sdk, startTestEmulator, stripeError } from "./testing/test-emulator.ts";
import type { TestContext } from "./testing/test-emulator.ts";

let t: TestContext;
beforeAll(async () => {
  t = await startTestEmulator();
});
afterAll(() => t.emulator.close());

describe("customers", () => {
  it("creates, retrieves and updates a customer", async () => {
    const created = await t.stripe.customers.create({
      email: "ada@example.com",
      name: "Ada",
      metadata: { tenant: "t1" },
    });
    expect(created.id).toMatch(/^cus_/);
    expect(created).toMatchObject({
      object: "customer",
      email: "ada@example.com",
      name: "Ada",
      balance: 0,
      livemode: false,
      metadata: { tenant: "t1" },
      invoice_settings: { default_payment_method: null },
    });
    expect(created.created).toBeGreaterThan(1_600_000_000);

    const updated = await t.stripe.customers.update(created.id, {
      name: "Ada Lovelace",
      balance: -500,
      metadata: { plan: "pro", tenant: "" },
    });
    expect(updated.name).toBe("Ada Lovelace");
    expect(updated.balance).toBe(-500);
    expect(updated.metadata).toEqual({ plan: "pro" });

    const fetched = await t.stripe.customers.retrieve(created.id);
    expect(fetched).toMatchObject({ id: created.id, name: "Ada Lovelace", balance: -500 });
  });

  it("lists by email, newest first, with limit and has_more", async () => {
    const a = await t.stripe.customers.create({ email: "same@example.com" });
    const b = await t.stripe.customers.create({ email: "same@example.com" });
    await t.stripe.customers.create({ email: "other@example.com" });

    const byEmail = await t.stripe.customers.list({ email: "same@example.com" });
    expect(byEmail.object).toBe("list");
    expect(byEmail.url).toBe("/v1/customers");
    expect(byEmail.data.map((c) => c.id)).toEqual([b.id, a.id]);
    expect(byEmail.has_more).toBe(false);

    const limited = await t.stripe.customers.list({ email: "same@example.com", limit: 1 });
    expect(limited.data.map((c) => c.id)).toEqual([b.id]);
    expect(limited.has_more).toBe(true);
    const next = await t.stripe.customers.list({ email: "same@example.com", limit: 1, starting_after: b.id });
    expect(next.data.map((c) => c.id)).toEqual([a.id]);
  });

  it("deletes a customer", async () => {
    const c = await t.stripe.customers.create({ email: "gone@example.com" });
    const deleted = await t.stripe.customers.del(c.id);
    expect(deleted).toMatchObject({ id: c.id, deleted: true });
    const again = await t.stripe.customers.retrieve(c.id);
    expect(again.deleted).toBe(true);
  });
});

describe("errors and auth", () => {
  it("rejects a bad secret key with 401", async () => {
    const err = await stripeError(sdk(t.emulator, "sk_live_nope").customers.list());
    expect(err).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect(err.statusCode).toBe(401);
    expect(err.message).toContain("Invalid API Key provided");
  });

  it("rejects a request without a key with 401", async () => {
    const res = await fetch(`${t.emulator.url}/v1/customers`);
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain("You did not provide an API key");
  });

  it("refuses publishable keys on server-side endpoints", async () => {
    const err = await stripeError(t.publishable.customers.list());
    expect(err).toBeInstanceOf(Stripe.errors.StripePermissionError);
    expect(err.statusCode).toBe(403);
  });

  it("reports a missing param with 400 parameter_missing and the param name", async () => {
    const err = await stripeError(t.stripe.invoices.create({} as Stripe.InvoiceCreateParams));
    expect(err).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(err.statusCode).toBe(400);
    expect(err.type).toBe("StripeInvalidRequestError");
    expect(err.rawType).toBe("invalid_request_error");
    expect(err.code).toBe("parameter_missing");
    expect(err.param).toBe("customer");
    expect(err.message).toBe("Missing required param: customer.");
  });

  it("reports unknown ids with 404 resource_missing", async () => {
    const err = await stripeError(t.stripe.customers.retrieve("cus_doesnotexist"));
    expect(err).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(err.statusCode).toBe(404);
    expect(err.code).toBe("resource_missing");
    expect(err.param).toBe("id");
    expect(err.message).toBe("No such customer: 'cus_doesnotexist'");
  });

  it("reports unknown ids referenced in the body with 400 resource_missing", async () => {
    const err = await stripeError(t.stripe.invoices.create({ customer: "cus_missing" }));
    expect(err.statusCode).toBe(400);
    expect(err.code).toBe("resource_missing");
    expect(err.param).toBe("customer");
  });

  it("answers unknown routes with a Stripe-shaped 404", async () => {
    const res = await fetch(`${t.emulator.url}/v1/nope`, { headers: { Authorization: "Bearer sk_test_x" } });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain("Unrecognized request URL (GET: /v1/nope)");
  });

  it("accepts expand[] (no-op for unknown paths, expands known ids)", async () => {
    const pm = await t.stripe.paymentMethods.create({
      type: "card",
      card: { number: "4242424242424242", exp_month: 12, exp_year: new Date().getUTCFullYear() + 2, cvc: "123" },
    });
    const c = await t.stripe.customers.create({
      payment_method: pm.id,
      invoice_settings: { default_payment_method: pm.id },
    });
    const expanded = await t.stripe.customers.retrieve(c.id, {
      expand: ["invoice_settings.default_payment_method", "nonexistent.field"],
    });
    const dpm = (expanded as Stripe.Customer).invoice_settings.default_payment_method as Stripe.PaymentMethod;
    expect(dpm.id).toBe(pm.id);
    expect(dpm.card?.last4).toBe("4242");
    const plain = await t.stripe.customers.retrieve(c.id);
    expect((plain as Stripe.Customer).invoice_settings.default_payment_method).toBe(pm.id);
  });
});

describe("idempotency", () => {
  it("replays the stored response for the same key and does not create twice", async () => {
    const key = `idem-${Math.random()}`;
    const first = await t.stripe.customers.create({ email: "idem@example.com" }, { idempotencyKey: key });
    const second = await t.stripe.customers.create({ email: "idem@example.com" }, { idempotencyKey: key });
    expect(second.id).toBe(first.id);
    expect(second.lastResponse.headers["idempotent-replayed"]).toBe("true");
    const listed = await t.stripe.customers.list({ email: "idem@example.com" });
    expect(listed.data).toHaveLength(1);
  });

  it("rejects the same key with different params", async () => {
    const key = `idem-${Math.random()}`;
    await t.stripe.customers.create({ email: "x1@example.com" }, { idempotencyKey: key });
    const err = await stripeError(t.stripe.customers.create({ email: "x2@example.com" }, { idempotencyKey: key }));
    expect(err).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect(err.statusCode).toBe(400);
    expect(err.message).toContain("same parameters");
    const listed = await t.stripe.customers.list({ email: "x2@example.com" });
    expect(listed.data).toHaveLength(0);
  });

  it("rejects the same key on a different endpoint", async () => {
    const key = `idem-${Math.random()}`;
    await t.stripe.customers.create({ email: "y@example.com" }, { idempotencyKey: key });
    const err = await stripeError(t.stripe.products.create({ name: "P" }, { idempotencyKey: key }));
    expect(err).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
  });
});
