import { BillingMirror } from "./billing-mirror.ts";
import { createTestDatabase, databaseFingerprint, makeAccount, makeUser, type TestDatabase } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebhookVerifier } from "../../integrations/stripe/webhook-verifier.ts";
import { rejection } from "../../testing/rejections.ts";
import { StripeWebhookService } from "./stripe-webhook.service.ts";

// The service tier (docs/contributing.md "Add a test"): StripeWebhookService with the real
// verifier (the `stripe` SDK's check) and the real billing mirror repository on a real database;
// the clock is a ManualClock, so the five-minute windows are probed to the second. Events are
// signed the way Stripe signs them (the SDK's test header).

const SECRET = "whsec_test_endpoint_secret_0123456789abcdef";
const NOW = new Date("2026-11-28T10:00:00Z");
const NOW_S = NOW.getTime() / 1000;
const signer = new Stripe("sk_test_signer").webhooks;
const clock = new ManualClock(NOW);
let db: TestDatabase;
let service: StripeWebhookService;

beforeAll(async () => {
  db = await createTestDatabase();
  service = new StripeWebhookService({
    verify: createWebhookVerifier(SECRET, clock),
    mirror: new BillingMirror(db),
    clock,
  });
});
afterAll(async () => {
  await db?.close();
});

/** A billing account of a new organization whose processor customer id is made up (no call is made). */
const customer = async () => {
  const user = await makeUser(db);
  const customerId = `cus_${crypto.randomUUID().replaceAll("-", "").slice(0, 14)}`;
  await makeAccount(db, user.organizationId, { stripeCustomerId: customerId });
  return customerId;
};

/** A `payment_method.attached` event as Stripe sends it, for a card of `customerId`. */
const attachedEvent = (customerId: string) =>
  JSON.stringify({
    id: `evt_test_${crypto.randomUUID().replaceAll("-", "")}`,
    object: "event",
    api_version: "2026-10-28.endive",
    created: NOW_S,
    type: "payment_method.attached",
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: {
      object: {
        id: `pm_test_${crypto.randomUUID().slice(0, 8)}`,
        object: "payment_method",
        type: "card",
        customer: customerId,
        created: NOW_S,
        card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2040 },
        billing_details: {},
        metadata: {},
        livemode: false,
      },
    },
  });

const sign = (body: string, timestamp = NOW_S, secret = SECRET) =>
  signer.generateTestHeaderString({ payload: body, secret, timestamp });
/** Delivers `body`, signed correctly unless a signature (or explicitly none: `null`) is given. */
const receive = (body: string, signature: string | null = sign(body)) =>
  service.receive(Buffer.from(body), signature ?? undefined);

const cardsOf = (customerId: string) =>
  db.query(
    "select pm.id from billing_payment_methods pm join billing_accounts a on a.id = pm.account_id where a.stripe_customer_id = $1",
    [customerId],
  );

/** The 400 a refused delivery answers, checked to have changed nothing. */
const refused = async (body: string, signature: string | null) => {
  const before = await databaseFingerprint(db);
  const error = await rejection(receive(body, signature));
  expect(error.status).toBe(400);
  expect(await databaseFingerprint(db)).toBe(before);
  return error.message;
};

describe("StripeWebhookService.receive: the signature", () => {
  it("refuses a missing signature, another secret's and one over other bytes", async () => {
    const body = attachedEvent(await customer());
    expect(await refused(body, null)).toBe("The Stripe-Signature header is missing.");
    const mismatch = "The Stripe-Signature header does not match the body.";
    expect(await refused(body, sign(body, NOW_S, "whsec_someone_elses_secret_0123456789"))).toBe(mismatch);
    expect(await refused(body, sign(`${body} `))).toBe(mismatch);
  });

  it("accepts a signature exactly 5 minutes old and refuses one a second older", async () => {
    const customerId = await customer();
    const body = attachedEvent(customerId);
    expect(await refused(body, sign(body, NOW_S - 301))).toBe(
      "The Stripe-Signature timestamp is more than 5 minutes old.",
    );
    expect(await cardsOf(customerId)).toEqual([]);
    expect((await receive(body, sign(body, NOW_S - 300))).outcome).toBe("applied");
    expect(await cardsOf(customerId)).toHaveLength(1);
  });

  it("accepts a signature dated exactly 5 minutes ahead and refuses one a second further", async () => {
    const customerId = await customer();
    const body = attachedEvent(customerId);
    for (const ahead of [301, 3_600, 86_400 * 365]) {
      expect(await refused(body, sign(body, NOW_S + ahead)), String(ahead)).toBe(
        "The Stripe-Signature timestamp is more than 5 minutes in the future.",
      );
    }
    expect((await receive(body, sign(body, NOW_S + 300))).outcome).toBe("applied");
    expect(await cardsOf(customerId)).toHaveLength(1);
  });
});

describe("StripeWebhookService.receive: the event", () => {
  it("refuses a correctly signed but malformed event (or ignores a type it does not act on), changing nothing", async () => {
    const customerId = await customer();
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
    const before = await databaseFingerprint(db);
    for (const value of bodies) {
      const body = JSON.stringify(value);
      const error = await rejection(receive(body));
      expect([body, error.status]).toEqual([body, 400]);
      expect(error.message).toMatch(/not a well-formed Stripe event/);
    }
    // A body that is not JSON at all, correctly signed.
    for (const body of ["{", "", "not json"]) {
      expect([body, (await rejection(receive(body))).status]).toEqual([body, 400]);
    }
    // A well-formed event of a type the system does not act on: acknowledged, not even recorded.
    for (const type of ["charge.succeeded", "customer.created", "setup_intent.succeeded"]) {
      const body = JSON.stringify({ ...good, id: `evt_${crypto.randomUUID().replaceAll("-", "")}`, type });
      expect([type, (await receive(body)).outcome]).toEqual([type, "ignored"]);
    }
    expect(await databaseFingerprint(db)).toBe(before);
    expect(await cardsOf(customerId)).toEqual([]);
    // The well-formed event still goes through.
    expect((await receive(JSON.stringify(good))).outcome).toBe("applied");
    // Real Stripe's `invoice.upcoming` carries an invoice without an id: well-formed, acknowledged.
    const { id: _none, ...upcoming } = invoice;
    const preview = JSON.stringify({
      ...withObject(upcoming, "invoice.upcoming"),
      id: `evt_${crypto.randomUUID().slice(0, 8)}`,
    });
    await expect(receive(preview)).resolves.toMatchObject({ outcome: expect.any(String) });
  });

  it("processes an event id once: a replay is acknowledged as a duplicate and changes nothing", async () => {
    const customerId = await customer();
    const body = attachedEvent(customerId);
    expect(await receive(body)).toEqual({ id: JSON.parse(body).id, outcome: "applied" });
    expect(await cardsOf(customerId)).toHaveLength(1);
    // The card is removed meanwhile; the replayed attach must not bring it back.
    await db.query("delete from billing_payment_methods where id = $1", [JSON.parse(body).data.object.id]);
    const before = await databaseFingerprint(db);
    expect((await receive(body)).outcome).toBe("duplicate");
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("concurrent deliveries of one event are processed once", async () => {
    const customerId = await customer();
    const body = attachedEvent(customerId);
    const outcomes = (await Promise.all(Array.from({ length: 6 }, () => receive(body)))).map((r) => r.outcome);
    expect(outcomes.sort()).toEqual(["applied", "duplicate", "duplicate", "duplicate", "duplicate", "duplicate"]);
    expect(await db.query("select id from stripe_webhook_events where id = $1", [JSON.parse(body).id])).toHaveLength(1);
    expect(await cardsOf(customerId)).toHaveLength(1);
  });

  it("acknowledges and ignores an event about a customer it does not know", async () => {
    const body = attachedEvent("cus_not_ours");
    const mirrored = () => db.query("select count(*)::int as n from billing_payment_methods");
    const before = await mirrored();
    expect((await receive(body)).outcome).toBe("ignored");
    expect(await mirrored()).toEqual(before);
  });
});
