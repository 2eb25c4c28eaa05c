import { createTestDatabase, databaseFingerprint, makeUser, type TestDatabase } from "@fleet/db/testing";
import { INVOICE_LIST_LIMIT } from "@fleet/shared";
import type Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unixInZone } from "../../testing/billing-fixtures.ts";
import {
  accountClaims,
  accountHolder,
  type BillingEmulator,
  type BillingServices,
  billingServices,
  startBillingEmulator,
  UNREACHABLE,
} from "../../testing/billing-services.ts";
import { rejection } from "../../testing/rejections.ts";

// The service tier (docs/contributing.md "Add a test"): InvoicesService on a real database with
// the real billing mirror, the processor = the Stripe emulator; invoices are made the way the
// processor's own flows make them.

let db: TestDatabase;
let stripe: BillingEmulator;
let billing: BillingServices;
let server: Stripe;

beforeAll(async () => {
  [db, stripe] = await Promise.all([createTestDatabase(), startBillingEmulator()]);
  server = stripe.server;
  billing = billingServices(db, new URL(stripe.emulator.url));
});
afterAll(async () => {
  await stripe?.close();
  await db?.close();
});

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
/** "21 Nov 2026" of a unix time, in UTC. */
const dayMonthYear = (unix: number): string => {
  const d = new Date(unix * 1000);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
};

/** One invoice per status, made the way the processor's own flows make them. */
const makeInvoices = async (customer: string, currency: string, amount: number) => {
  const item = (description: string) => server.invoiceItems.create({ customer, amount, currency, description });

  await item("Managed routers");
  const paidDraft = await server.invoices.create({ customer, currency, description: "Fleet, November" });
  await server.invoices.finalizeInvoice(paidDraft.id);
  const paid = await server.invoices.pay(paidDraft.id, { payment_method: "pm_card_visa" });

  await item("Managed routers");
  const openDraft = await server.invoices.create({
    customer,
    currency,
    collection_method: "send_invoice",
    days_until_due: 30,
  });
  const open = await server.invoices.finalizeInvoice(openDraft.id);

  await item("Managed routers");
  const voidDraft = await server.invoices.create({ customer, currency });
  await server.invoices.finalizeInvoice(voidDraft.id);
  const voided = await server.invoices.voidInvoice(voidDraft.id);

  await item("Managed routers");
  const declinedDraft = await server.invoices.create({ customer, currency });
  await server.invoices.finalizeInvoice(declinedDraft.id);
  await server.invoices.pay(declinedDraft.id, { payment_method: "pm_card_chargeCustomerFail" }).catch(() => undefined);
  const declined = await server.invoices.markUncollectible(declinedDraft.id);

  await item("Managed routers");
  const draft = await server.invoices.create({ customer, currency });

  return { paid, open, voided, declined, draft };
};

describe("InvoicesService.list", () => {
  it("maps USD invoices exactly: paid, open, void, uncollectible, draft; newest first", async () => {
    const tz = "America/New_York";
    const { claims, customerId } = await accountHolder(db, billing, { timezone: tz });
    const made = await makeInvoices(customerId, "usd", 1999);
    const listed = await billing.invoices.list(claims);
    expect(listed.map((i) => i.id)).toEqual([
      made.draft.id,
      made.declined.id,
      made.voided.id,
      made.open.id,
      made.paid.id,
    ]);
    const [draft, declined, voided, open, paid] = listed;
    const common = (inv: Stripe.Invoice) => ({
      id: inv.id,
      currency: "USD",
      currency_symbol: "$",
      period_start: dayMonthYear(inv.period_start),
      period_end: dayMonthYear(inv.period_end),
      created_at: unixInZone(inv.created, tz),
      subtotal: 19.99,
      subtotal_excluding_tax: 19.99,
      total: 19.99,
      tax: 0,
      total_excluding_tax: 19.99,
    });
    expect(paid).toEqual({
      ...common(made.paid),
      number: made.paid.number,
      description: "Fleet, November",
      amount_due: 19.99,
      amount_paid: 19.99,
      amount_remaining: 0,
      due_date: null,
      invoice_pdf: made.paid.invoice_pdf,
      status: "paid",
      paid: true,
      attempt_count: 1,
      attempted: true,
    });
    expect(paid?.invoice_pdf).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/i\/in_\w+\/pdf$/);
    expect(paid?.number).toMatch(/^[A-Z0-9]+-\d{4}$/);

    const due = made.open.due_date ?? 0;
    expect(due - made.open.created).toBe(30 * 86400);
    expect(open).toEqual({
      ...common(made.open),
      number: made.open.number,
      description: null,
      amount_due: 19.99,
      amount_paid: 0,
      amount_remaining: 19.99,
      due_date: new Date(due * 1000).toISOString().slice(0, 10),
      invoice_pdf: made.open.invoice_pdf,
      status: "open",
      paid: false,
      attempt_count: 0,
      attempted: false,
    });
    expect(voided).toMatchObject({
      ...common(made.voided),
      status: "void",
      paid: false,
      amount_due: 19.99,
      amount_paid: 0,
      due_date: null,
    });
    expect(declined).toMatchObject({
      ...common(made.declined),
      status: "uncollectible",
      paid: false,
      attempted: true,
      attempt_count: 1,
      amount_remaining: 19.99,
    });
    expect(draft).toEqual({
      ...common(made.draft),
      number: null,
      description: null,
      amount_due: 19.99,
      amount_paid: 0,
      amount_remaining: 19.99,
      due_date: null,
      invoice_pdf: null,
      status: "draft",
      paid: false,
      attempt_count: 0,
      attempted: false,
    });
  });

  it("maps JPY (zero-decimal) amounts as whole yen", async () => {
    const { claims, customerId } = await accountHolder(db, billing, { country: "JP" });
    const made = await makeInvoices(customerId, "jpy", 1500);
    const byId = new Map((await billing.invoices.list(claims)).map((i) => [i.id, i]));
    expect(byId.get(made.paid.id)).toMatchObject({
      currency: "JPY",
      currency_symbol: "¥",
      amount_due: 1500,
      amount_paid: 1500,
      amount_remaining: 0,
      subtotal: 1500,
      total: 1500,
      status: "paid",
      paid: true,
      created_at: unixInZone(made.paid.created, "UTC"),
    });
    expect(byId.get(made.open.id)).toMatchObject({
      status: "open",
      amount_due: 1500,
      amount_paid: 0,
      amount_remaining: 1500,
      paid: false,
    });
    expect(byId.get(made.voided.id)).toMatchObject({ status: "void", amount_due: 1500, paid: false });
  });

  it("maps a three-decimal currency (KWD) to three places", async () => {
    const { claims, customerId } = await accountHolder(db, billing, { country: "KW" });
    await server.invoiceItems.create({ customer: customerId, amount: 12345, currency: "kwd" });
    const inv = await server.invoices.create({ customer: customerId, currency: "kwd" });
    await server.invoices.finalizeInvoice(inv.id);
    const listed = await billing.invoices.list(claims);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      currency: "KWD",
      currency_symbol: "KWD",
      amount_due: 12.345,
      amount_remaining: 12.345,
      total: 12.345,
      status: "open",
    });
  });

  it("another organization never sees these invoices; one without an account is refused, changing nothing", async () => {
    const a = await accountHolder(db, billing);
    await makeInvoices(a.customerId, "usd", 700);
    expect(await billing.invoices.list(a.claims)).toHaveLength(5);

    const b = await accountHolder(db, billing);
    expect(await billing.invoices.list(b.claims)).toEqual([]);

    const none = await makeUser(db);
    const before = await databaseFingerprint(db);
    const error = await rejection(billing.invoices.list(accountClaims(none)));
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/Create one first/);
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it(`returns exactly ${INVOICE_LIST_LIMIT} at the cap and only the newest ${INVOICE_LIST_LIMIT} beyond it`, async () => {
    const { claims, customerId } = await accountHolder(db, billing);
    const ids: string[] = [];
    for (let i = 0; i < INVOICE_LIST_LIMIT; i++) {
      ids.push((await server.invoices.create({ customer: customerId, pending_invoice_items_behavior: "exclude" })).id);
    }
    const atCap = await billing.invoices.list(claims);
    expect(atCap.map((i) => i.id)).toEqual([...ids].reverse());

    const newest = (await server.invoices.create({ customer: customerId, pending_invoice_items_behavior: "exclude" }))
      .id;
    const beyond = await billing.invoices.list(claims);
    expect(beyond.map((i) => i.id)).toEqual([newest, ...ids.slice(1).reverse()]);
  });

  it("answers from the mirror, newest first and capped, while the processor is unreachable", async () => {
    const { claims, customerId, accountId } = await accountHolder(db, billing);
    const ids: string[] = [];
    for (let i = 0; i <= INVOICE_LIST_LIMIT; i++) {
      ids.push((await server.invoices.create({ customer: customerId, pending_invoice_items_behavior: "exclude" })).id);
    }
    await billing.mirror.reconcile([
      { id: accountId, organizationId: claims.organizationId, stripeCustomerId: customerId },
    ]);
    const down = billingServices(db, UNREACHABLE);
    const listed = await down.invoices.list(claims);
    expect(listed.map((i) => i.id)).toEqual(ids.slice(1).reverse());
    expect(down.errors.map((e) => e.context)).toEqual([
      "the payment processor did not answer; listing invoices from the billing mirror",
    ]);
  });
});
