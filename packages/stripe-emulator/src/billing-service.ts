// Invoice state machine: composition from invoice items, totals with customer balance, finalize/pay/void.
import type { EmulatorStore } from "./emulator-store.ts";
import { randomToken } from "./emulator-store.ts";
import { chargeCard, customerPaymentMethod } from "./payment-methods-service.ts";
import { cardError, invalidRequest } from "./stripe-errors.ts";
import type {
  CollectionMethod,
  Customer,
  Invoice,
  InvoiceItem,
  InvoiceLineItem,
  InvoiceStatus,
  Metadata,
  Period,
  Price,
  Subscription,
  SubscriptionItem,
} from "./stripe-types.ts";

const ZERO_DECIMAL = new Set([
  "bif",
  "clp",
  "djf",
  "gnf",
  "jpy",
  "kmf",
  "krw",
  "mga",
  "pyg",
  "rwf",
  "ugx",
  "vnd",
  "vuv",
  "xaf",
  "xof",
  "xpf",
]);

export function minorUnitDigits(currency: string): number {
  return ZERO_DECIMAL.has(currency) ? 0 : 2;
}

/** Minor units → display string ("$10.00", "¥1,000"). */
export function formatMoney(amount: number, currency: string): string {
  const digits = minorUnitDigits(currency);
  try {
    return new Intl.NumberFormat("en-US", {
      style: "currency",
      currency: currency.toUpperCase(),
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    }).format(amount / 10 ** digits);
  } catch {
    return `${(amount / 10 ** digits).toFixed(digits)} ${currency.toUpperCase()}`;
  }
}

export function formatDate(unix: number): string {
  return new Date(unix * 1000).toLocaleDateString("en-GB", {
    day: "numeric",
    month: "short",
    year: "numeric",
    timeZone: "UTC",
  });
}

export function priceLabel(price: Price): string {
  const r = price.recurring;
  const per = !r ? "" : r.interval_count === 1 ? ` / ${r.interval}` : ` / every ${r.interval_count} ${r.interval}s`;
  return `${formatMoney(price.unit_amount, price.currency)}${per}`;
}

export interface NewInvoiceOptions {
  customer: Customer;
  currency: string;
  collectionMethod: CollectionMethod;
  daysUntilDue: number | null;
  dueDate: number | null;
  autoAdvance: boolean;
  description: string | null;
  metadata: Metadata;
  billingReason: Invoice["billing_reason"];
  subscription: Subscription | null;
  defaultPaymentMethod: string | null;
  period?: Period;
}

export function createInvoice(store: EmulatorStore, o: NewInvoiceOptions): Invoice {
  const now = store.nowSeconds();
  const id = store.newId("in");
  const sub = o.subscription;
  const inv: Invoice = {
    id,
    object: "invoice",
    account_country: "US",
    account_name: "Stripe Emulator",
    amount_due: 0,
    amount_overpaid: 0,
    amount_paid: 0,
    amount_remaining: 0,
    amount_shipping: 0,
    application: null,
    attempt_count: 0,
    attempted: false,
    auto_advance: o.autoAdvance,
    automatic_tax: { disabled_reason: null, enabled: false, liability: null, provider: null, status: null },
    automatically_finalizes_at: null,
    billing_reason: o.billingReason,
    collection_method: o.collectionMethod,
    created: now,
    currency: o.currency,
    custom_fields: null,
    customer: o.customer.id,
    customer_address: o.customer.address,
    customer_email: o.customer.email,
    customer_name: o.customer.name,
    customer_phone: o.customer.phone,
    customer_shipping: null,
    customer_tax_exempt: "none",
    customer_tax_ids: [],
    default_payment_method: o.defaultPaymentMethod,
    default_source: null,
    default_tax_rates: [],
    description: o.description,
    discounts: [],
    due_date: o.dueDate ?? (o.daysUntilDue !== null ? now + o.daysUntilDue * 86400 : null),
    effective_at: null,
    ending_balance: null,
    footer: null,
    from_invoice: null,
    hosted_invoice_url: null,
    invoice_pdf: null,
    issuer: { type: "self" },
    last_finalization_error: null,
    latest_revision: null,
    lines: { object: "list", data: [], has_more: false, url: `/v1/invoices/${id}/lines` },
    livemode: false,
    metadata: o.metadata,
    next_payment_attempt: null,
    number: null,
    on_behalf_of: null,
    paid: false,
    paid_out_of_band: false,
    parent: sub
      ? {
          type: "subscription_details",
          quote_details: null,
          subscription_details: { metadata: sub.metadata, subscription: sub.id },
        }
      : null,
    payment_settings: { default_mandate: null, payment_method_options: null, payment_method_types: null },
    period_end: o.period?.end ?? now,
    period_start: o.period?.start ?? now,
    post_payment_credit_notes_amount: 0,
    pre_payment_credit_notes_amount: 0,
    receipt_number: null,
    rendering: null,
    shipping_cost: null,
    shipping_details: null,
    starting_balance: 0,
    statement_descriptor: null,
    status: "draft",
    status_transitions: { finalized_at: null, marked_uncollectible_at: null, paid_at: null, voided_at: null },
    subscription: sub?.id ?? null,
    subtotal: 0,
    subtotal_excluding_tax: 0,
    tax: null,
    test_clock: null,
    total: 0,
    total_discount_amounts: [],
    total_excluding_tax: 0,
    total_pretax_credit_amounts: [],
    total_taxes: [],
    webhooks_delivered_at: now,
  };
  store.invoices.set(id, inv);
  recompute(store, inv);
  return inv;
}

function baseLine(inv: Invoice, amount: number, quantity: number, description: string | null, period: Period) {
  return {
    id: `il_${randomToken(24)}`,
    object: "line_item" as const,
    amount,
    currency: inv.currency,
    description,
    discount_amounts: [],
    discountable: true,
    discounts: [],
    invoice: inv.id,
    livemode: false as const,
    period,
    pretax_credit_amounts: [],
    quantity,
    quantity_decimal: String(quantity),
    subtotal: amount,
    taxes: [],
  };
}

/** Moves a pending invoice item onto a draft invoice as a line. */
export function addInvoiceItemLine(store: EmulatorStore, inv: Invoice, ii: InvoiceItem): void {
  const subscription = ii.parent?.subscription_details.subscription ?? null;
  ii.invoice = inv.id;
  inv.lines.data.push({
    ...baseLine(inv, ii.amount, ii.quantity, ii.description, ii.period),
    metadata: ii.metadata,
    parent: {
      type: "invoice_item_details",
      invoice_item_details: {
        invoice_item: ii.id,
        proration: ii.proration,
        proration_details: { credited_items: null },
        subscription,
      },
      subscription_item_details: null,
    },
    pricing: ii.pricing,
    subscription,
  });
  recompute(store, inv);
}

export function addSubscriptionItemLine(
  store: EmulatorStore,
  inv: Invoice,
  sub: Subscription,
  item: SubscriptionItem,
): void {
  const price = item.price;
  const productName = store.products.get(price.product)?.name ?? price.product;
  const description = `${item.quantity} × ${productName} (at ${priceLabel(price)})`;
  const period = { start: item.current_period_start, end: item.current_period_end };
  const line: InvoiceLineItem = {
    ...baseLine(inv, price.unit_amount * item.quantity, item.quantity, description, period),
    metadata: {},
    parent: {
      type: "subscription_item_details",
      invoice_item_details: null,
      subscription_item_details: {
        invoice_item: null,
        proration: false,
        proration_details: { credited_items: null },
        subscription: sub.id,
        subscription_item: item.id,
      },
    },
    pricing: {
      price_details: { price: price.id, product: price.product },
      type: "price_details",
      unit_amount_decimal: price.unit_amount_decimal,
    },
    subscription: sub.id,
  };
  inv.lines.data.push(line);
  recompute(store, inv);
}

/** Pulls the customer's pending invoice items in the invoice currency (one-off items, or this subscription's). */
export function includePendingItems(store: EmulatorStore, inv: Invoice): void {
  for (const ii of store.invoiceItems.values()) {
    const itemSub = ii.parent?.subscription_details.subscription ?? null;
    if (ii.invoice || ii.customer !== inv.customer || ii.currency !== inv.currency) continue;
    if (itemSub !== null && itemSub !== inv.subscription) continue;
    addInvoiceItemLine(store, inv, ii);
  }
}

/** Totals; drafts preview the current customer balance, finalized invoices keep theirs. */
export function recompute(store: EmulatorStore, inv: Invoice): void {
  const subtotal = inv.lines.data.reduce((sum, l) => sum + l.amount, 0);
  inv.subtotal = inv.subtotal_excluding_tax = inv.total = inv.total_excluding_tax = subtotal;
  if (inv.status !== "draft") return;
  const balance = store.customers.get(inv.customer)?.balance ?? 0;
  inv.starting_balance = balance;
  inv.amount_due = inv.amount_remaining = Math.max(0, subtotal + balance);
}

export function finalizeInvoice(store: EmulatorStore, inv: Invoice, baseUrl: string): Invoice {
  if (inv.status !== "draft") {
    throw invalidRequest("This invoice is already finalized, you can't re-finalize a non-draft invoice.", {
      code: "invoice_not_editable",
    });
  }
  const customer = store.customer(inv.customer);
  const now = store.nowSeconds();
  recompute(store, inv);
  inv.ending_balance = inv.starting_balance + inv.total - inv.amount_due;
  customer.balance = inv.ending_balance;
  customer.currency ??= inv.currency;
  inv.number = `${customer.invoice_prefix}-${String(customer.next_invoice_sequence++).padStart(4, "0")}`;
  inv.customer_email = customer.email;
  inv.customer_name = customer.name;
  inv.customer_address = customer.address;
  inv.customer_phone = customer.phone;
  inv.status = "open";
  inv.status_transitions.finalized_at = inv.effective_at = now;
  inv.hosted_invoice_url = `${baseUrl}/i/${inv.id}`;
  inv.invoice_pdf = `${baseUrl}/i/${inv.id}/pdf`;
  if (inv.amount_due === 0) {
    inv.attempted = true;
    markPaid(store, inv, false);
  }
  return inv;
}

function markPaid(store: EmulatorStore, inv: Invoice, outOfBand: boolean): void {
  inv.status = "paid";
  inv.paid = true;
  inv.paid_out_of_band = outOfBand;
  inv.amount_paid = inv.amount_due;
  inv.amount_remaining = 0;
  inv.next_payment_attempt = null;
  inv.status_transitions.paid_at = store.nowSeconds();
  const sub = inv.subscription ? store.subscriptions.get(inv.subscription) : undefined;
  if (sub && (sub.status === "incomplete" || sub.status === "past_due" || sub.status === "unpaid")) {
    sub.status = "active";
  }
}

/** The payment method Stripe would charge: explicit, invoice default, subscription default, customer default. */
function paymentMethodFor(store: EmulatorStore, inv: Invoice, explicit: string | undefined): string | null {
  if (explicit) return customerPaymentMethod(store, store.customer(inv.customer), explicit, "payment_method");
  const sub = inv.subscription ? store.subscriptions.get(inv.subscription) : undefined;
  return (
    inv.default_payment_method ??
    sub?.default_payment_method ??
    store.customers.get(inv.customer)?.invoice_settings.default_payment_method ??
    null
  );
}

export type CollectionResult =
  | { outcome: "paid" }
  | { outcome: "no_payment_method" }
  | { outcome: "declined"; error: Error };

/** One payment attempt on an open invoice. The first attempt of any kind sets attempt_count to 1. */
export function attemptPayment(store: EmulatorStore, inv: Invoice, explicitPm?: string): CollectionResult {
  if (inv.amount_due === 0) {
    markPaid(store, inv, false);
    return { outcome: "paid" };
  }
  const pmId = paymentMethodFor(store, inv, explicitPm);
  const pm = pmId ? store.paymentMethods.get(pmId) : undefined;
  if (!pm) return { outcome: "no_payment_method" };
  inv.attempted = true;
  if (inv.attempt_count === 0) inv.attempt_count = 1;
  const decline = chargeCard(store, pm);
  if (decline) store.failedPayments.push(inv.id);
  if (decline) return { outcome: "declined", error: cardError(decline, { payment_method: pm }) };
  markPaid(store, inv, false);
  return { outcome: "paid" };
}

export function payInvoice(
  store: EmulatorStore,
  inv: Invoice,
  opts: { baseUrl: string; paymentMethod?: string; paidOutOfBand?: boolean },
): Invoice {
  if (inv.status === "paid") throw invalidRequest("Invoice is already paid", { code: "invoice_not_editable" });
  if (inv.status === "void") {
    throw invalidRequest("This invoice has been voided and can no longer be paid.", { code: "invoice_not_editable" });
  }
  if (inv.status === "draft") {
    finalizeInvoice(store, inv, opts.baseUrl);
    if ((inv.status as InvoiceStatus) === "paid") return inv; // nothing was due
  }
  if (opts.paidOutOfBand) {
    markPaid(store, inv, true);
    return inv;
  }
  const result = attemptPayment(store, inv, opts.paymentMethod);
  if (result.outcome === "declined") throw result.error;
  if (result.outcome === "no_payment_method") {
    throw invalidRequest(
      "This customer has no attached payment source or default payment method. Please consider adding a default payment method. For more information, visit https://stripe.com/docs/billing/subscriptions/payment-methods-setting#payment-method-priority.",
    );
  }
  return inv;
}

export function voidInvoice(store: EmulatorStore, inv: Invoice): Invoice {
  if (inv.status !== "open" && inv.status !== "uncollectible") {
    throw invalidRequest(`You can only void invoices that are open or uncollectible; this invoice is ${inv.status}.`, {
      code: "invoice_not_editable",
    });
  }
  const customer = store.customers.get(inv.customer);
  if (customer && inv.ending_balance !== null) customer.balance += inv.starting_balance - inv.ending_balance;
  inv.status = "void";
  inv.next_payment_attempt = null;
  inv.status_transitions.voided_at = store.nowSeconds();
  return inv;
}

export function markUncollectible(store: EmulatorStore, inv: Invoice): Invoice {
  if (inv.status !== "open") {
    throw invalidRequest(`You can only mark open invoices as uncollectible; this invoice is ${inv.status}.`, {
      code: "invoice_not_editable",
    });
  }
  inv.status = "uncollectible";
  inv.next_payment_attempt = null;
  inv.status_transitions.marked_uncollectible_at = store.nowSeconds();
  return inv;
}
