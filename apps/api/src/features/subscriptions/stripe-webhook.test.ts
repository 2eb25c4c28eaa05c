import { databaseFingerprint } from "@fleet/db/testing";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { loginWithAccount, settleWebhooks } from "../../testing/billing-fixtures.ts";

const SECRET = "whsec_test_endpoint_secret_0123456789abcdef";
const signer = new Stripe("sk_test_signer").webhooks;
let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness({ STRIPE_WEBHOOK_SECRET: SECRET });
});
afterAll(async () => {
  await h?.close();
});

let counter = 0;
/** A `payment_method.attached` event as Stripe sends it, for a card of `customerId`. */
const attachedEvent = (customerId: string, pmId = `pm_test_${++counter}_${crypto.randomUUID().slice(0, 8)}`) =>
  JSON.stringify({
    id: `evt_test_${crypto.randomUUID().replaceAll("-", "")}`,
    object: "event",
    api_version: "2026-10-28.endive",
    created: Math.floor(Date.now() / 1000),
    type: "payment_method.attached",
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: {
      object: {
        id: pmId,
        object: "payment_method",
        type: "card",
        customer: customerId,
        created: Math.floor(Date.now() / 1000),
        card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2040 },
        billing_details: {},
        metadata: {},
        livemode: false,
      },
    },
  });

const deliver = (body: string, signature?: string) =>
  h.request("POST", "/v1/stripe/webhook", {
    rawBody: body,
    headers: { "content-type": "application/json", ...(signature ? { "stripe-signature": signature } : {}) },
  });
const sign = (body: string, timestamp = Math.floor(Date.now() / 1000), secret = SECRET) =>
  signer.generateTestHeaderString({ payload: body, secret, timestamp });

/** The mirrored cards of the customer's account, read from the table (a GET would first reconcile with the processor). */
const cardsOf = (customerId: string) =>
  h.db.query(
    "select pm.id from billing_payment_methods pm join billing_accounts a on a.id = pm.account_id where a.stripe_customer_id = $1",
    [customerId],
  );

// The HTTP face of the endpoint: the raw body and header reach the service unchanged, and its
// answers' statuses and bodies. The rules (the five-minute windows, malformed events, once per
// event id, unknown customers): stripe-webhook.service.test.ts.
describe("POST /v1/stripe/webhook", () => {
  it("refuses a missing signature, and one over other bytes than those received, with 400, changing nothing", async () => {
    const { customerId } = await loginWithAccount(h);
    await settleWebhooks(h);
    const body = attachedEvent(customerId);
    const before = await databaseFingerprint(h.db);
    const cases: Array<[string | undefined, string]> = [
      [undefined, "The Stripe-Signature header is missing."],
      [sign(`${body} `), "The Stripe-Signature header does not match the body."],
    ];
    for (const [signature, message] of cases) {
      const res = await deliver(body, signature);
      expect([res.status, res.body.message]).toEqual([400, message]);
    }
    expect(await databaseFingerprint(h.db)).toBe(before);
    expect(await cardsOf(customerId)).toEqual([]);
  });

  it("answers 200 with the outcome: applied, then duplicate; 200 ignored for a type it does not act on; 400 for a malformed event", async () => {
    const { customerId } = await loginWithAccount(h);
    const body = attachedEvent(customerId);
    const first = await deliver(body, sign(body));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ received: true, id: JSON.parse(body).id, outcome: "applied" });
    expect(await cardsOf(customerId)).toHaveLength(1);
    const replay = await deliver(body, sign(body));
    expect([replay.status, replay.body.outcome]).toEqual([200, "duplicate"]);
    const other = JSON.stringify({ ...JSON.parse(attachedEvent(customerId)), type: "charge.succeeded" });
    const ignored = await deliver(other, sign(other));
    expect([ignored.status, ignored.body.outcome]).toEqual([200, "ignored"]);
    for (const malformed of [JSON.stringify({ ...JSON.parse(body), id: 5 }), "not json"]) {
      const res = await deliver(malformed, sign(malformed));
      expect([malformed, res.status]).toEqual([malformed, 400]);
      expect(res.body.message).toEqual(expect.any(String));
    }
  });

  it("needs no bearer header and takes any content type (the signature is what counts)", async () => {
    const { customerId } = await loginWithAccount(h);
    const body = attachedEvent(customerId);
    const res = await h.request("POST", "/v1/stripe/webhook", {
      rawBody: body,
      headers: { "content-type": "text/plain", "stripe-signature": sign(body) },
    });
    expect(res.status).toBe(200);
  });
});
