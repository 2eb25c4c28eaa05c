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

describe("POST /v1/stripe/webhook", () => {
  it("refuses a missing, wrong or more than 5 minutes old signature with 400, changing nothing", async () => {
    const { customerId } = await loginWithAccount(h);
    await settleWebhooks(h);
    const body = attachedEvent(customerId);
    const before = await databaseFingerprint(h.db);
    const cases: Array<[string | undefined, string]> = [
      [undefined, "The Stripe-Signature header is missing."],
      [
        sign(body, undefined, "whsec_someone_elses_secret_0123456789"),
        "The Stripe-Signature header does not match the body.",
      ],
      [sign(`${body} `), "The Stripe-Signature header does not match the body."],
      [sign(body, Math.floor(Date.now() / 1000) - 301), "The Stripe-Signature timestamp is more than 5 minutes old."],
    ];
    for (const [signature, message] of cases) {
      const res = await deliver(body, signature);
      expect([res.status, res.body.message]).toEqual([400, message]);
    }
    expect(await databaseFingerprint(h.db)).toBe(before);
    expect(await cardsOf(customerId)).toEqual([]);
    // Just inside the window it is accepted.
    expect((await deliver(body, sign(body, Math.floor(Date.now() / 1000) - 290))).status).toBe(200);
    expect(await cardsOf(customerId)).toHaveLength(1);
  });

  it("refuses a signature timestamp more than 5 minutes in the future with 400, changing nothing", async () => {
    const { customerId } = await loginWithAccount(h);
    await settleWebhooks(h);
    const body = attachedEvent(customerId);
    const now = Math.floor(Date.now() / 1000);
    const before = await databaseFingerprint(h.db);
    // 310, not 301: the test reads the clock a moment before the API does (whole seconds, a loaded machine).
    for (const ahead of [3_600, 310, 86_400 * 365]) {
      const res = await deliver(body, sign(body, now + ahead));
      expect([ahead, res.status, res.body.message]).toEqual([
        ahead,
        400,
        "The Stripe-Signature timestamp is more than 5 minutes in the future.",
      ]);
    }
    expect(await databaseFingerprint(h.db)).toBe(before);
    // Just inside the window (a processor whose clock runs a little ahead) it is accepted.
    expect((await deliver(body, sign(body, now + 290))).status).toBe(200);
    expect(await cardsOf(customerId)).toHaveLength(1);
  });

  it("answers a correctly signed but malformed event with 400 (or 200 for a type it ignores), never a 5xx, changing nothing", async () => {
    const { customerId } = await loginWithAccount(h);
    await settleWebhooks(h);
    const good = JSON.parse(attachedEvent(customerId));
    const withObject = (object: unknown, type = good.type) => ({ ...good, type, data: { object } });
    const card = good.data.object;
    const invoice = {
      id: "in_malformed",
      object: "invoice",
      customer: customerId,
      currency: "eur",
      amount_due: 100,
      amount_paid: 0,
      amount_remaining: 100,
      subtotal: 100,
      total: 100,
      status: "open",
      period_start: 1,
      period_end: 2,
      attempted: false,
      attempt_count: 0,
      created: 1,
    };
    const bodies: unknown[] = [
      {},
      [],
      null,
      "evt",
      42,
      { id: good.id },
      { ...good, id: 5 },
      { ...good, id: "" },
      { ...good, id: "evt_\u0000nul" },
      { ...good, id: "x".repeat(256) },
      { ...good, type: 7 },
      { ...good, type: null },
      { ...good, created: "yesterday" },
      { ...good, data: null },
      { ...good, data: {} },
      { ...good, data: { object: null } },
      { ...good, data: { object: "pm_1" } },
      { ...good, data: { object: [] } },
      withObject({ ...card, id: null }),
      withObject({ ...card, id: 12 }),
      withObject({ ...card, customer: 12 }),
      withObject({ ...card, created: "now" }),
      withObject({ ...card, card: { ...card.card, exp_month: "12" } }),
      withObject({ ...card, card: { ...card.card, exp_year: 1e12 } }),
      withObject({ ...card, card: { ...card.card, last4: "42424" } }),
      withObject({ ...card, card: { ...card.card, brand: "v\u0000isa" } }),
      withObject({ ...card, card: "visa" }),
      withObject({ ...card, type: "x".repeat(40) }),
      withObject({ id: "pm_1", customer: { id: 5 } }, "payment_method.detached"),
      withObject({ id: customerId, invoice_settings: "pm_1" }, "customer.updated"),
      withObject(
        { id: "sub_1", customer: customerId, status: "active", currency: "eur" },
        "customer.subscription.updated",
      ),
      withObject(
        { id: "sub_1", customer: customerId, status: "active", currency: "eur", items: { data: [{ id: 3 }] } },
        "customer.subscription.updated",
      ),
      withObject({ ...invoice, amount_due: "100" }, "invoice.finalized"),
      withObject({ ...invoice, amount_due: 2 ** 60 }, "invoice.finalized"),
      withObject({ ...invoice, currency: "euro" }, "invoice.finalized"),
      withObject({ ...invoice, status: "s".repeat(40) }, "invoice.paid"),
      withObject({ ...invoice, period_start: -1 }, "invoice.paid"),
      withObject({ ...invoice, attempted: "no" }, "invoice.paid"),
      withObject({ ...invoice, customer: null }, "invoice.voided"),
      withObject(null, "invoice.voided"),
    ];
    const before = await databaseFingerprint(h.db);
    for (const value of bodies) {
      const body = JSON.stringify(value);
      const res = await deliver(body, sign(body));
      expect([body, res.status]).toEqual([body, 400]);
      expect(res.body.message).toMatch(/not a well-formed Stripe event/);
    }
    // A body that is not JSON at all, correctly signed.
    for (const body of ["{", "", "not json"]) {
      const res = await deliver(body, sign(body));
      expect([body, res.status]).toEqual([body, 400]);
    }
    // A well-formed event of a type the system does not act on: acknowledged, not even recorded.
    for (const type of ["charge.succeeded", "customer.created", "setup_intent.succeeded"]) {
      const body = JSON.stringify({ ...good, id: `evt_${crypto.randomUUID().replaceAll("-", "")}`, type });
      const res = await deliver(body, sign(body));
      expect([type, res.status, res.body.outcome]).toEqual([type, 200, "ignored"]);
    }
    expect(await databaseFingerprint(h.db)).toBe(before);
    expect(await cardsOf(customerId)).toEqual([]);
    // The well-formed event still goes through.
    const body = JSON.stringify(good);
    expect((await deliver(body, sign(body))).body.outcome).toBe("applied");
    // Real Stripe's `invoice.upcoming` carries an invoice without an id: well-formed, acknowledged.
    const { id: _none, ...upcoming } = invoice;
    const preview = JSON.stringify({
      ...withObject(upcoming, "invoice.upcoming"),
      id: `evt_${crypto.randomUUID().slice(0, 8)}`,
    });
    expect((await deliver(preview, sign(preview))).status).toBe(200);
  });

  it("processes an event id once: a replay is acknowledged and changes nothing", async () => {
    const { customerId } = await loginWithAccount(h);
    const body = attachedEvent(customerId);
    const first = await deliver(body, sign(body));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ received: true, outcome: "applied" });
    expect(await cardsOf(customerId)).toHaveLength(1);
    // The card is removed meanwhile; the replayed attach must not bring it back.
    await h.db.query("delete from billing_payment_methods where id = $1", [JSON.parse(body).data.object.id]);
    await settleWebhooks(h);
    const before = await databaseFingerprint(h.db);
    const replay = await deliver(body, sign(body));
    expect(replay.status).toBe(200);
    expect(replay.body.outcome).toBe("duplicate");
    expect(await databaseFingerprint(h.db)).toBe(before);
  });

  it("concurrent deliveries of one event are processed once", async () => {
    const { customerId } = await loginWithAccount(h);
    const body = attachedEvent(customerId);
    const results = await Promise.all(Array.from({ length: 6 }, () => deliver(body, sign(body))));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(results.filter((r) => r.body.outcome === "applied")).toHaveLength(1);
    expect(results.filter((r) => r.body.outcome === "duplicate")).toHaveLength(5);
    const rows = await h.db.query("select id from stripe_webhook_events where id = $1", [JSON.parse(body).id]);
    expect(rows).toHaveLength(1);
    expect(await cardsOf(customerId)).toHaveLength(1);
  });

  it("acknowledges and ignores an event about a customer it does not know", async () => {
    await settleWebhooks(h);
    const before = await h.db.query<{ n: number }>("select count(*)::int as n from billing_payment_methods");
    const body = attachedEvent("cus_not_ours");
    const res = await deliver(body, sign(body));
    expect(res.status).toBe(200);
    expect(res.body.outcome).toBe("ignored");
    expect(await h.db.query("select count(*)::int as n from billing_payment_methods")).toEqual(before);
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
