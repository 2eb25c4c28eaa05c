import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { eventually } from "@fleet/shared/testing";
import Stripe from "stripe";
import { afterEach, describe, expect, it } from "vitest";
import { startStripeEmulator } from "./emulator-server.ts";
import type { StripeEmulator } from "./emulator-server.ts";
import { sdk, stripeError } from "./testing/test-emulator.ts";

const SECRET = "whsec_test_emulator_webhooks_0123456789";

interface Receiver {
  url: string;
  events: Stripe.Event[];
  /** Answers 500 to this many deliveries first. */
  failNext: number;
  attempts: number;
  close(): Promise<void>;
}

/** A webhook endpoint that verifies every delivery the way the API does, with the stripe SDK. */
const startReceiver = async (): Promise<Receiver> => {
  const verifier = new Stripe("sk_test_verifier");
  const receiver: Receiver = { url: "", events: [], failNext: 0, attempts: 0, close: async () => {} };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      receiver.attempts++;
      if (receiver.failNext > 0) {
        receiver.failNext--;
        res.writeHead(500).end();
        return;
      }
      const body = Buffer.concat(chunks).toString("utf8");
      const event = verifier.webhooks.constructEvent(body, String(req.headers["stripe-signature"]), SECRET);
      receiver.events.push(event);
      res.writeHead(200).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/stripe/webhook`;
  receiver.close = () => new Promise((resolve) => server.close(() => resolve()));
  return receiver;
};

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const setup = async () => {
  const receiver = await startReceiver();
  const emulator: StripeEmulator = await startStripeEmulator({ webhook: { url: receiver.url, secret: SECRET } });
  cleanups.push(receiver.close, () => emulator.close());
  const settle = async () => {
    // Delivery is asynchronous: wait until the outbox is empty.
    await eventually(async () => {
      await emulator.webhooksIdle();
      return emulator.store.outbox.length === 0;
    }, "the emulator's outbox to empty");
  };
  return { receiver, emulator, stripe: sdk(emulator, "sk_test_w"), settle };
};

describe("webhook events", () => {
  it("are signed like Stripe's (the SDK verifies them) and retried until the endpoint accepts them", async () => {
    const { receiver, stripe, settle } = await setup();
    receiver.failNext = 2;
    const customer = await stripe.customers.create({ email: "w@example.com" });
    await stripe.customers.update(customer.id, { name: "Renamed" });
    await settle();
    expect(receiver.attempts).toBe(4);
    expect(receiver.events.map((e) => e.type)).toEqual(["customer.created", "customer.updated"]);
    const updated = receiver.events[1] as Stripe.CustomerUpdatedEvent;
    expect(updated.data.object.name).toBe("Renamed");
    expect(updated.data.previous_attributes).toEqual({ name: null });
    expect(new Set(receiver.events.map((e) => e.id)).size).toBe(2);
  });

  it("pm_card_chargeCustomerFail attaches, then its invoices fail the way Stripe's do until a working card pays", async () => {
    const { receiver, stripe, settle } = await setup();
    const customer = await stripe.customers.create({ email: "fail@example.com" });
    const failing = await stripe.paymentMethods.attach("pm_card_chargeCustomerFail", { customer: customer.id });
    expect(failing.customer).toBe(customer.id);
    await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: failing.id } });
    const price = await stripe.prices.create({
      currency: "usd",
      unit_amount: 1000,
      recurring: { interval: "month" },
      product_data: { name: "Router" },
    });
    const sub = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: price.id, quantity: 1 }],
      payment_behavior: "allow_incomplete",
    });
    expect(sub.status).toBe("incomplete");
    const [first] = (await stripe.invoices.list({ customer: customer.id })).data;
    expect(first).toMatchObject({ status: "open", attempt_count: 1, attempted: true, amount_paid: 0 });

    // Paying again with the same card fails again; the invoice stays open.
    const declined = await stripeError(stripe.invoices.pay(first?.id ?? ""));
    expect(declined.type).toBe("StripeCardError");

    // A working default card, then the invoice is retried: paid, and the subscription active.
    const visa = await stripe.paymentMethods.attach("pm_card_visa", { customer: customer.id });
    await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: visa.id } });
    const paid = await stripe.invoices.pay(first?.id ?? "");
    expect(paid.status).toBe("paid");
    expect((await stripe.subscriptions.retrieve(sub.id)).status).toBe("active");

    // A later invoice charged to a failing card leaves the subscription past_due.
    await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: failing.id } });
    const item = sub.items.data[0]?.id ?? "";
    await stripe.subscriptions.update(sub.id, {
      items: [{ id: item, quantity: 2 }],
      proration_behavior: "always_invoice",
    });
    expect((await stripe.subscriptions.retrieve(sub.id)).status).toBe("past_due");

    await settle();
    const types = receiver.events.map((e) => e.type);
    expect(types).toContain("payment_method.attached");
    expect(types.filter((t) => t === "invoice.payment_failed")).toHaveLength(3);
    expect(types).toContain("invoice.paid");
    const statuses = receiver.events
      .filter((e) => e.type.startsWith("customer.subscription."))
      .map((e) => (e.data.object as Stripe.Subscription).status);
    expect(statuses).toEqual(["incomplete", "active", "past_due"]);
    const failed = receiver.events.find((e) => e.type === "invoice.payment_failed");
    expect(failed && (failed.data.object as Stripe.Invoice).attempt_count).toBe(1);
  });
});
