import { makeAccount, makeUser } from "@fleet/db/testing";
import { createTestDatabase, databaseFingerprint, type TestDatabase } from "@fleet/db/testing";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  accountClaims,
  accountHolder,
  type BillingEmulator,
  type BillingServices,
  billingServices,
  PUBLISHABLE_KEY,
  startBillingEmulator,
  UNREACHABLE,
} from "../../testing/billing-services.ts";
import { CARD_EXP_YEAR, testCard, unixInZone } from "../../testing/billing-fixtures.ts";
import { rejection } from "../../testing/rejections.ts";

// The service tier (docs/contributing.md "Add a test"): PaymentMethodsService on a real database
// with the real repositories and billing mirror, the processor = the Stripe emulator through the
// `stripe` SDK (server side) and Stripe.js's part played by a publishable-key client.

let db: TestDatabase;
let stripe: BillingEmulator;
let billing: BillingServices;

beforeAll(async () => {
  [db, stripe] = await Promise.all([createTestDatabase(), startBillingEmulator()]);
  billing = billingServices(db, new URL(stripe.emulator.url));
});
afterAll(async () => {
  await stripe?.close();
  await db?.close();
});

const holder = (options: { timezone?: string } = {}) => accountHolder(db, billing, options);

/** The browser's part: a setup intent from the service, a card and confirm with the publishable key. */
const addCardClientSide = async (
  claims: Parameters<BillingServices["paymentMethods"]["createSetupIntent"]>[0],
  number: string,
) => {
  const intent = await billing.paymentMethods.createSetupIntent(claims);
  const pm = await stripe.browser.paymentMethods.create({ type: "card", card: testCard(number) });
  const confirmed = await stripe.browser.setupIntents.confirm(intent.id, {
    payment_method: pm.id,
    client_secret: intent.client_secret,
  } as Stripe.SetupIntentConfirmParams);
  return { intent, pm, confirmed };
};

const defaultOf = async (customerId: string) =>
  ((await stripe.server.customers.retrieve(customerId)) as Stripe.Customer).invoice_settings.default_payment_method;

const mirroredCards = async (accountId: string) =>
  db.query<{ id: string; is_default: boolean }>(
    "select id, is_default from billing_payment_methods where account_id = $1 order by id",
    [accountId],
  );

describe("createSetupIntent", () => {
  it("makes a setup intent for the account's customer with the publishable key, created_at in the zone", async () => {
    const { claims, customerId } = await holder({ timezone: "Asia/Tokyo" });
    const intent = await billing.paymentMethods.createSetupIntent(claims);
    expect(Object.keys(intent).sort()).toEqual(["client_secret", "created_at", "id", "publishable_key", "status"]);
    expect(intent.id).toMatch(/^seti_/);
    expect(intent.publishable_key).toBe(PUBLISHABLE_KEY);
    expect(intent.client_secret).toMatch(new RegExp(`^${intent.id}_secret_\\w+$`));
    expect(intent.status).toBe("requires_payment_method");
    const stored = await stripe.server.setupIntents.retrieve(intent.id);
    expect(stored.customer).toBe(customerId);
    expect(intent.created_at).toBe(unixInZone(stored.created, "Asia/Tokyo"));
  });

  it("refuses an organization without an account, before calling the processor", async () => {
    const user = await makeUser(db);
    const before = await databaseFingerprint(db);
    const error = await rejection(billing.paymentMethods.createSetupIntent(accountClaims(user)));
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/Create one first with POST \/v1\/account/);
    expect(await databaseFingerprint(db)).toBe(before);
  });
});

describe("save", () => {
  it("saves a confirmed card as the default, in the zone, and mirrors it; a second card becomes the default", async () => {
    const { claims, customerId, accountId } = await holder({ timezone: "Asia/Tokyo" });
    const visa = await addCardClientSide(claims, "4242424242424242");
    expect(visa.confirmed.status).toBe("succeeded");
    const saved = await billing.paymentMethods.save(claims, visa.pm.id);
    expect(saved).toEqual({
      id: visa.pm.id,
      brand: "visa",
      last4: "4242",
      exp_month: 12,
      exp_year: CARD_EXP_YEAR,
      created_at: unixInZone(visa.pm.created, "Asia/Tokyo"),
    });
    expect(await defaultOf(customerId)).toBe(visa.pm.id);
    expect(await billing.paymentMethods.list(claims)).toEqual([saved]);
    expect(await mirroredCards(accountId)).toEqual([{ id: visa.pm.id, is_default: true }]);

    const master = await addCardClientSide(claims, "5555555555554444");
    expect(await billing.paymentMethods.save(claims, master.pm.id)).toMatchObject({
      id: master.pm.id,
      brand: "mastercard",
      last4: "4444",
    });
    expect(await defaultOf(customerId)).toBe(master.pm.id);
    expect((await billing.paymentMethods.list(claims)).map((p) => p.id).sort()).toEqual(
      [visa.pm.id, master.pm.id].sort(),
    );
    expect(await mirroredCards(accountId)).toEqual(
      [
        { id: visa.pm.id, is_default: false },
        { id: master.pm.id, is_default: true },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
  });

  it("re-saving an already attached card only makes it the default again", async () => {
    const { claims, customerId } = await holder();
    const first = await addCardClientSide(claims, "4242424242424242");
    await billing.paymentMethods.save(claims, first.pm.id);
    const second = await addCardClientSide(claims, "378282246310005");
    expect((await billing.paymentMethods.save(claims, second.pm.id)).brand).toBe("amex");
    expect(await defaultOf(customerId)).toBe(second.pm.id);

    expect((await billing.paymentMethods.save(claims, first.pm.id)).id).toBe(first.pm.id);
    expect(await defaultOf(customerId)).toBe(first.pm.id);
    // The amex is no longer the default, so it can go.
    await billing.paymentMethods.delete(claims, second.pm.id);
    expect((await stripe.server.paymentMethods.retrieve(second.pm.id)).customer).toBeNull();
  });

  it("attaches a card created but never confirmed", async () => {
    const { claims, customerId } = await holder();
    const pm = await stripe.browser.paymentMethods.create({ type: "card", card: testCard("6011111111111117") });
    expect((await billing.paymentMethods.save(claims, pm.id)).brand).toBe("discover");
    expect((await stripe.server.paymentMethods.retrieve(pm.id)).customer).toBe(customerId);
    expect(await defaultOf(customerId)).toBe(pm.id);
  });

  it.each([
    ["3056930009020004", "diners"],
    ["3566002020360505", "jcb"],
    ["6200000000000005", "unionpay"],
  ])("names the brand of %s %s", async (number, brand) => {
    const { claims } = await holder();
    const { pm } = await addCardClientSide(claims, number);
    expect((await billing.paymentMethods.save(claims, pm.id)).brand).toBe(brand);
  });

  it.each([
    ["4000000000000002", "Your card was declined.", "generic_decline"],
    ["4000000000009995", "Your card has insufficient funds.", "insufficient_funds"],
  ])("a declined card (%s) is refused with 402 and the reason, changing nothing", async (number, message, code) => {
    const { claims, customerId } = await holder();
    const intent = await billing.paymentMethods.createSetupIntent(claims);
    const pm = await stripe.browser.paymentMethods.create({ type: "card", card: testCard(number) });
    const confirm = await stripe.browser.setupIntents
      .confirm(intent.id, {
        payment_method: pm.id,
        client_secret: intent.client_secret,
      } as Stripe.SetupIntentConfirmParams)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(confirm).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect((confirm as Stripe.errors.StripeCardError).decline_code).toBe(code);

    const before = await databaseFingerprint(db);
    const error = await rejection(billing.paymentMethods.save(claims, pm.id));
    expect(error.status).toBe(402);
    expect(error.message).toBe(message);
    expect(error.extra).toEqual({ decline_code: code });
    expect(await databaseFingerprint(db)).toBe(before);
    expect((await stripe.server.paymentMethods.retrieve(pm.id)).customer).toBeNull();
    expect(await defaultOf(customerId)).toBeNull();
    expect(await billing.paymentMethods.list(claims)).toEqual([]);
  });
});

describe("delete", () => {
  it("refuses the default and the only card with 409 saying what to do; another card can go", async () => {
    const { claims, customerId, accountId } = await holder();
    const visa = await addCardClientSide(claims, "4242424242424242");
    await billing.paymentMethods.save(claims, visa.pm.id);

    // n = 1: the only card.
    let before = await databaseFingerprint(db);
    const only = await rejection(billing.paymentMethods.delete(claims, visa.pm.id));
    expect(only.status).toBe(409);
    expect(only.message).toMatch(/only payment method/);
    expect(only.message).toMatch(/Add another card/);
    expect(await databaseFingerprint(db)).toBe(before);

    // n = 2: the default still cannot go, the other can.
    const master = await addCardClientSide(claims, "5555555555554444");
    await billing.paymentMethods.save(claims, master.pm.id);
    before = await databaseFingerprint(db);
    const byDefault = await rejection(billing.paymentMethods.delete(claims, master.pm.id));
    expect(byDefault.status).toBe(409);
    expect(byDefault.message).toMatch(/default payment method/);
    expect(byDefault.message).toMatch(/Make another card the default first/);
    expect(await databaseFingerprint(db)).toBe(before);
    expect((await stripe.server.paymentMethods.retrieve(master.pm.id)).customer).toBe(customerId);

    await billing.paymentMethods.delete(claims, visa.pm.id);
    expect((await stripe.server.paymentMethods.retrieve(visa.pm.id)).customer).toBeNull();
    expect((await billing.paymentMethods.list(claims)).map((p) => p.id)).toEqual([master.pm.id]);
    expect(await mirroredCards(accountId)).toEqual([{ id: master.pm.id, is_default: true }]);
  });

  it("an unknown id and a card attached to no one are not found", async () => {
    const { claims } = await holder();
    const loose = await stripe.browser.paymentMethods.create({ type: "card", card: testCard("4242424242424242") });
    for (const id of [loose.id, "pm_nope"]) {
      const error = await rejection(billing.paymentMethods.delete(claims, id));
      expect(error.status).toBe(404);
      expect(error.message).toBe(`This account has no payment method with id "${id}".`);
    }
  });
});

describe("tenancy", () => {
  it("another organization never sees, saves or deletes these cards: not found, like an unknown id", async () => {
    const a = await holder();
    const { pm } = await addCardClientSide(a.claims, "4242424242424242");
    await billing.paymentMethods.save(a.claims, pm.id);
    const other = await addCardClientSide(a.claims, "5555555555554444");
    await billing.paymentMethods.save(a.claims, other.pm.id);

    const b = await holder();
    expect(await billing.paymentMethods.list(b.claims)).toEqual([]);
    const before = await databaseFingerprint(db);
    const save = await rejection(billing.paymentMethods.save(b.claims, pm.id));
    expect(save.status).toBe(404);
    expect(save.message).toBe(`This account has no payment method with id "${pm.id}".`);
    const unknown = await rejection(billing.paymentMethods.save(b.claims, "pm_doesnotexist"));
    expect(unknown.status).toBe(404);
    expect(unknown.message).toBe(save.message.replace(pm.id, "pm_doesnotexist"));
    expect((await rejection(billing.paymentMethods.delete(b.claims, pm.id))).status).toBe(404);
    expect(await databaseFingerprint(db)).toBe(before);

    expect((await stripe.server.paymentMethods.retrieve(pm.id)).customer).toBe(a.customerId);
    expect(await defaultOf(a.customerId)).toBe(other.pm.id);
    expect(await defaultOf(b.customerId)).toBeNull();
  });
});

describe("processor down", () => {
  it("every write fails with 502 and writes nothing; the list answers from the mirror", async () => {
    const down = billingServices(db, UNREACHABLE);
    const user = await makeUser(db);
    await makeAccount(db, user.organizationId);
    const claims = accountClaims(user);
    const before = await databaseFingerprint(db);
    const errors = await Promise.all([
      rejection(down.paymentMethods.createSetupIntent(claims)),
      rejection(down.paymentMethods.save(claims, "pm_123")),
      rejection(down.paymentMethods.delete(claims, "pm_123")),
    ]);
    for (const error of errors) {
      expect(error.status).toBe(502);
      expect(error.message).toBe(
        "The payment processor could not be reached or refused the request; nothing was changed. Try again shortly.",
      );
      expect(JSON.stringify(error.extra ?? {})).not.toContain("sk_test_");
    }
    expect(await down.paymentMethods.list(claims)).toEqual([]);
    expect(await down.invoices.list(claims)).toEqual([]);
    expect(await databaseFingerprint(db)).toBe(before);
  });
});
