import { databaseFingerprint } from "@fleet/db/testing";
import type Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { EMULATOR_SECRET_KEY, emulatorSdk, loginWithAccount } from "../../testing/billing-fixtures.ts";

/** Router enrollment is "creating a service": these tests drive the subscription module through it. */
let h: ApiHarness;
let server: Stripe;

beforeAll(async () => {
  h = await startApiHarness();
  server = emulatorSdk(h, EMULATOR_SECRET_KEY);
});
afterAll(async () => {
  await h?.close();
});

const liveSubscriptions = async (customerId: string) =>
  (await server.subscriptions.list({ customer: customerId })).data.filter((s) => s.status !== "canceled");

describe("router enrollment and the subscription", () => {
  it("refuses to enroll without a billing account (402), writing nothing", async () => {
    const { token } = await h.login();
    const before = await databaseFingerprint(h.db);
    const res = await h.request("POST", "/api/routers", { token, body: { name: "edge-1" } });
    expect(res.status).toBe(402);
    expect(res.body.status).toBe("fail");
    expect(res.body.message).toBe(
      "Creating a service needs a billing account, and this organization has none. Create one with POST /v1/account (name, email, address.country), then try again.",
    );
    expect(await databaseFingerprint(h.db)).toBe(before);
  });

  it("trial routers are not billed; the first saved card starts the subscription for all of them", async () => {
    const { token, customerId } = await loginWithAccount(h, { country: "DE" });
    const first = await h.request("POST", "/api/routers", { token, body: { name: "edge-1" } });
    expect(first.status).toBe(201);
    const second = await h.request("POST", "/api/routers", { token, body: { name: "edge-2" } });
    expect(second.status).toBe(201);
    expect(await liveSubscriptions(customerId)).toEqual([]);

    const card = await server.paymentMethods.attach("pm_card_visa", { customer: customerId });
    expect((await h.request("POST", "/v1/account/payment-methods", { token, body: { id: card.id } })).status).toBe(201);
    const [sub] = await liveSubscriptions(customerId);
    expect(sub?.items.data.map((i) => [i.quantity, i.price.currency, i.price.unit_amount])).toEqual([[2, "eur", 900]]);
    expect((await h.request("GET", "/v1/account", { token })).body.currency).toBe("EUR");
    const invoices = await h.request("GET", "/v1/account/invoices", { token });
    expect(invoices.body).toHaveLength(1);
    expect(invoices.body[0]).toMatchObject({ currency: "EUR", currency_symbol: "€", amount_due: 18, status: "paid" });

    const removed = await h.request("DELETE", `/api/routers/${first.body.data.router.id}`, { token });
    expect(removed.status).toBe(204);
    const [after] = await liveSubscriptions(customerId);
    expect(after?.id).toBe(sub?.id);
    expect(after?.items.data[0]?.quantity).toBe(1);
  });

  it("with a saved card the first subscription invoice is paid", async () => {
    const { token, customerId } = await loginWithAccount(h, { country: "JP" });
    const card = await server.paymentMethods.attach("pm_card_visa", { customer: customerId });
    expect((await h.request("POST", "/v1/account/tax", { token, body: { id: card.id } })).status).toBe(201);
    expect((await h.request("POST", "/api/routers", { token, body: {} })).status).toBe(201);
    const invoices = await h.request("GET", "/v1/account/invoices", { token });
    expect(invoices.body).toHaveLength(1);
    expect(invoices.body[0]).toMatchObject({
      currency: "JPY",
      currency_symbol: "¥",
      amount_due: 1500,
      amount_paid: 1500,
      status: "paid",
      paid: true,
      attempted: true,
      attempt_count: 1,
    });
    expect((await h.request("GET", "/v1/account", { token })).body.currency).toBe("JPY");
  });
});
