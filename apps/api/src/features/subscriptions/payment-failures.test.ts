import { databaseFingerprint } from "@fleet/db/testing";
import type Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { EMULATOR_SECRET_KEY, emulatorSdk, loginWithAccount, settleWebhooks } from "../../testing/billing-fixtures.ts";

/** docs/billing.md "Failed payments", driven through enrollment (creating a service) and the real SDK. */
let h: ApiHarness;
let server: Stripe;

beforeAll(async () => {
  h = await startApiHarness({ TRIAL_ROUTERS: "2" });
  server = emulatorSdk(h, EMULATOR_SECRET_KEY);
});
afterAll(async () => {
  await h?.close();
});

const enroll = (token: string) => h.request("POST", "/api/routers", { token, body: { name: "edge" } });
const routerCount = async (organizationId: string) =>
  (
    await h.db.query<{ n: number }>("select count(*)::int as n from routers where organization_id = $1", [
      organizationId,
    ])
  )[0]?.n;

describe("TRIAL_ROUTERS", () => {
  it("without a card: TRIAL_ROUTERS routers enroll, the next answers 402 and writes nothing; a card lifts it", async () => {
    const { token, customerId, organizationId } = await loginWithAccount(h);
    expect((await enroll(token)).status).toBe(201);
    expect((await enroll(token)).status).toBe(201);
    await settleWebhooks(h);
    const before = await databaseFingerprint(h.db);
    const refused = await enroll(token);
    expect(refused.status).toBe(402);
    expect(refused.body.message).toBe(
      "Without a payment method on file a billing account may run 2 routers, and this organization's account has 2. Save a card with POST /v1/account/payment-methods, then try again.",
    );
    expect(await databaseFingerprint(h.db)).toBe(before);

    const card = await server.paymentMethods.attach("pm_card_visa", { customer: customerId });
    expect((await h.request("POST", "/v1/account/payment-methods", { token, body: { id: card.id } })).status).toBe(201);
    expect((await enroll(token)).status).toBe(201);
    expect(await routerCount(organizationId)).toBe(3);
  });
});

describe("a card whose charges fail", () => {
  it("attaches, the first charge fails and enrolls nothing (402), the open invoice blocks, a working card pays it", async () => {
    const { token, customerId, organizationId } = await loginWithAccount(h);
    // pm_card_chargeCustomerFail: Stripe's test card that attaches but declines every charge.
    const failing = await server.paymentMethods.attach("pm_card_chargeCustomerFail", { customer: customerId });
    expect((await h.request("POST", "/v1/account/payment-methods", { token, body: { id: failing.id } })).status).toBe(
      201,
    );

    const first = await enroll(token);
    expect(first.status).toBe(402);
    expect(first.body.message).toMatch(
      /^The first charge of the subscription failed: invoice [A-Z0-9]+-0001 \(in_\w+, \$10\) is unpaid\. Save a working card with POST \/v1\/account\/payment-methods, then try again\.$/,
    );
    expect(await routerCount(organizationId)).toBe(0);
    const [sub] = (await server.subscriptions.list({ customer: customerId, status: "all" })).data;
    expect(sub?.status).toBe("incomplete");
    const invoiceId = String(sub?.latest_invoice);
    expect(await server.invoices.retrieve(invoiceId)).toMatchObject({ status: "open", attempt_count: 1 });

    // Blocked now, by the mirror's subscription status, naming the open invoice.
    await settleWebhooks(h);
    const blocked = await enroll(token);
    expect(blocked.status).toBe(402);
    expect(blocked.body.message).toContain(
      'A payment of this organization\'s subscription failed (status "incomplete")',
    );
    expect(blocked.body.message).toContain(`(${invoiceId}, $10) is unpaid`);
    expect(await routerCount(organizationId)).toBe(0);
    const listed = await h.request("GET", "/v1/account/invoices", { token });
    expect(listed.body).toEqual([expect.objectContaining({ id: invoiceId, status: "open", attempt_count: 1 })]);

    // Another failing card: saved, the invoice is retried and fails again; still blocked.
    const alsoFailing = await server.paymentMethods.attach("pm_card_chargeCustomerFail", { customer: customerId });
    expect(
      (await h.request("POST", "/v1/account/payment-methods", { token, body: { id: alsoFailing.id } })).status,
    ).toBe(201);
    expect((await enroll(token)).status).toBe(402);

    // A working card: saved as the default, the open invoice is charged again and paid; unblocked.
    const visa = await server.paymentMethods.attach("pm_card_visa", { customer: customerId });
    expect((await h.request("POST", "/v1/account/payment-methods", { token, body: { id: visa.id } })).status).toBe(201);
    expect(await server.invoices.retrieve(invoiceId)).toMatchObject({ status: "paid" });
    const enrolled = await enroll(token);
    expect(enrolled.status).toBe(201);
    expect(await routerCount(organizationId)).toBe(1);
    await settleWebhooks(h);
    const after = await h.request("GET", "/v1/account/invoices", { token });
    expect(after.body).toEqual([expect.objectContaining({ id: invoiceId, status: "paid", paid: true })]);
    expect((await server.subscriptions.retrieve(String(sub?.id))).status).toBe("active");
  });

  it("a subscription that falls past_due blocks new services; existing routers stay", async () => {
    const { token, customerId, organizationId } = await loginWithAccount(h);
    const visa = await server.paymentMethods.attach("pm_card_visa", { customer: customerId });
    await h.request("POST", "/v1/account/payment-methods", { token, body: { id: visa.id } });
    expect((await enroll(token)).status).toBe(201);
    // The card starts failing; the next invoice of the subscription (a renewal, here a prorated
    // change billed at once) fails and Stripe moves the subscription to past_due.
    const failing = await server.paymentMethods.attach("pm_card_chargeCustomerFail", { customer: customerId });
    await server.customers.update(customerId, { invoice_settings: { default_payment_method: failing.id } });
    const [sub] = (await server.subscriptions.list({ customer: customerId })).data;
    await server.subscriptions.update(sub?.id ?? "", {
      items: [{ id: sub?.items.data[0]?.id ?? "", quantity: 5 }],
      proration_behavior: "always_invoice",
    });
    await settleWebhooks(h);
    const blocked = await enroll(token);
    expect(blocked.status).toBe(402);
    expect(blocked.body.message).toContain('(status "past_due")');
    expect(blocked.body.message).toMatch(/: invoice [A-Z0-9]+-0002 \(in_\w+, \$40\) is unpaid\./);
    expect(await routerCount(organizationId)).toBe(1);
    const routers = await h.request("GET", "/api/routers", { token });
    expect(routers.status).toBe(200);
    expect(routers.body.data).toHaveLength(1);
  });

  it("a subscription cancelled at the processor is replaced by a new one at the next router", async () => {
    const { token, customerId } = await loginWithAccount(h);
    const visa = await server.paymentMethods.attach("pm_card_visa", { customer: customerId });
    await h.request("POST", "/v1/account/payment-methods", { token, body: { id: visa.id } });
    expect((await enroll(token)).status).toBe(201);
    const [old] = (await server.subscriptions.list({ customer: customerId })).data;
    await server.subscriptions.cancel(old?.id ?? "");
    await settleWebhooks(h);
    expect((await enroll(token)).status).toBe(201);
    const live = (await server.subscriptions.list({ customer: customerId })).data;
    expect(live).toHaveLength(1);
    expect(live[0]?.id).not.toBe(old?.id);
    expect(live[0]?.status).toBe("active");
    expect(live[0]?.items.data[0]?.quantity).toBe(2);
  });
});
