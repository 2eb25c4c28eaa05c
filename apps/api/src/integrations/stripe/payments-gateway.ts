import type { MirrorInvoice } from "@fleet/db";
import { AppError } from "@fleet/shared";
import Stripe from "stripe";
import { callStripe } from "./stripe-errors.ts";

/** A setup intent as the processor created it. `clientSecret` goes to the user and nowhere else. */
export interface SetupIntentSnapshot {
  id: string;
  clientSecret: string;
  status: string;
  created: Date;
}

/** A saved card, reduced to what the service shows. */
export interface CardSnapshot {
  id: string;
  /** The processor customer it is attached to; null when attached to none. */
  customerId: string | null;
  type: string;
  /** The processor's brand string, unmapped. */
  brand: string;
  last4: string;
  expMonth: number;
  expYear: number;
  created: Date;
}

/**
 * An invoice in the processor's minor units, before any presentation rule: the mirror's row
 * (one field list for both) plus the customer it bills.
 */
export interface InvoiceSnapshot extends MirrorInvoice {
  /** The processor customer billed. */
  customerId: string;
}

/** The payment-method and invoice side of the processor (docs/api.md "Payment methods", "Invoices"). */
export interface PaymentsGateway {
  createSetupIntent(customerId: string): Promise<SetupIntentSnapshot>;
  /** Null when the processor does not know the id. */
  findPaymentMethod(paymentMethodId: string): Promise<CardSnapshot | null>;
  attachPaymentMethod(paymentMethodId: string, customerId: string): Promise<CardSnapshot>;
  detachPaymentMethod(paymentMethodId: string): Promise<void>;
  listCards(customerId: string): Promise<CardSnapshot[]>;
  defaultPaymentMethodId(customerId: string): Promise<string | null>;
  setDefaultPaymentMethod(customerId: string, paymentMethodId: string): Promise<void>;
  /** Newest first, at most `limit`. */
  listInvoices(customerId: string, limit: number): Promise<InvoiceSnapshot[]>;
  /**
   * Retries every open invoice of the customer with its current default card; answers each
   * invoice as it is afterwards (paid, or still open after a decline).
   */
  retryOpenInvoices(customerId: string): Promise<InvoiceSnapshot[]>;
}

/** Cards a customer may hold before listing stops paging (far above any real account). */
const MAX_CARDS = 1000;

const fromUnix = (seconds: number): Date => new Date(seconds * 1000);

export const toCard = (pm: Stripe.PaymentMethod): CardSnapshot => ({
  id: pm.id,
  customerId: typeof pm.customer === "string" ? pm.customer : (pm.customer?.id ?? null),
  type: pm.type,
  brand: pm.card?.brand ?? "unknown",
  last4: pm.card?.last4 ?? "",
  expMonth: pm.card?.exp_month ?? 0,
  expYear: pm.card?.exp_year ?? 0,
  created: fromUnix(pm.created),
});

/**
 * Fields older API versions (and the emulator) still send but the pinned SDK types dropped:
 * `paid` became derivable from `status`, `tax` became `total_taxes`.
 */
type LegacyInvoiceFields = { paid?: unknown; tax?: unknown; subscription?: string | { id: string } | null };

const idOf = (value: string | { id?: string } | null | undefined): string | null =>
  typeof value === "string" ? value : (value?.id ?? null);

export const toInvoice = (invoice: Stripe.Invoice): InvoiceSnapshot => {
  const legacy = invoice as unknown as LegacyInvoiceFields;
  const taxes = invoice.total_taxes?.reduce((sum, t) => sum + t.amount, 0);
  const status = invoice.status ?? "draft";
  const legacySubscription = legacy.subscription;
  return {
    id: invoice.id ?? "",
    customerId: idOf(invoice.customer as string | { id: string } | null) ?? "",
    subscriptionId:
      idOf(invoice.parent?.subscription_details?.subscription as string | { id: string } | null | undefined) ??
      idOf(legacySubscription),
    number: invoice.number,
    description: invoice.description ?? null,
    currency: invoice.currency,
    amountDue: invoice.amount_due,
    amountPaid: invoice.amount_paid,
    amountRemaining: invoice.amount_remaining,
    subtotal: invoice.subtotal,
    subtotalExcludingTax: invoice.subtotal_excluding_tax ?? invoice.subtotal,
    total: invoice.total,
    tax: typeof legacy.tax === "number" ? legacy.tax : (taxes ?? 0),
    totalExcludingTax: invoice.total_excluding_tax ?? invoice.total,
    dueDate: invoice.due_date === null ? null : fromUnix(invoice.due_date),
    invoicePdf: invoice.invoice_pdf ?? null,
    status,
    periodStart: fromUnix(invoice.period_start),
    periodEnd: fromUnix(invoice.period_end),
    paid: typeof legacy.paid === "boolean" ? legacy.paid : status === "paid",
    attempted: invoice.attempted,
    attemptCount: invoice.attempt_count,
    created: fromUnix(invoice.created),
  };
};

const isMissing = (error: unknown): boolean =>
  error instanceof Stripe.errors.StripeInvalidRequestError &&
  (error.statusCode === 404 || error.code === "resource_missing");

/**
 * Every write carries an idempotency key: a fresh one per logical operation, so the SDK's own
 * network retries replay it safely while a later, deliberate repeat (make A default again after B)
 * really runs.
 *
 * `reads`: request options of the list calls (`listCards`, `defaultPaymentMethodId`,
 * `listInvoices`), e.g. a short timeout and no retries for a gateway whose reads fall back to the
 * billing mirror when the processor does not answer (docs/billing.md "Billing mirror").
 */
export const createPaymentsGateway = (stripe: Stripe, reads: Stripe.RequestOptions = {}): PaymentsGateway => ({
  createSetupIntent: (customerId) =>
    callStripe(async () => {
      const intent = await stripe.setupIntents.create(
        { customer: customerId, usage: "off_session", allowed_payment_method_types: ["card"] },
        { idempotencyKey: `setup-intent:${customerId}:${crypto.randomUUID()}` },
      );
      return {
        id: intent.id,
        clientSecret: intent.client_secret ?? "",
        status: intent.status,
        created: fromUnix(intent.created),
      };
    }),

  findPaymentMethod: (paymentMethodId) =>
    callStripe(async () => {
      try {
        return toCard(await stripe.paymentMethods.retrieve(paymentMethodId));
      } catch (error) {
        if (isMissing(error)) return null;
        throw error;
      }
    }),

  attachPaymentMethod: (paymentMethodId, customerId) =>
    callStripe(async () => {
      try {
        return toCard(
          await stripe.paymentMethods.attach(
            paymentMethodId,
            { customer: customerId },
            { idempotencyKey: `pm-attach:${customerId}:${paymentMethodId}:${crypto.randomUUID()}` },
          ),
        );
      } catch (error) {
        // The processor refuses this card for this customer (attached elsewhere meanwhile, or
        // detached once and so never reusable): the user's problem, not an outage.
        if (error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 400) {
          throw new AppError(
            "conflict",
            "This payment method can no longer be saved to this account. Add the card again through a new setup intent (POST /v1/account/setup-intent).",
            { cause: error },
          );
        }
        throw error;
      }
    }),

  detachPaymentMethod: (paymentMethodId) =>
    callStripe(async () => {
      await stripe.paymentMethods.detach(
        paymentMethodId,
        {},
        { idempotencyKey: `pm-detach:${paymentMethodId}:${crypto.randomUUID()}` },
      );
    }),

  listCards: (customerId) =>
    callStripe(async () => {
      const cards = await stripe.paymentMethods
        .list({ customer: customerId, type: "card", limit: 100 }, reads)
        .autoPagingToArray({ limit: MAX_CARDS });
      return cards.map(toCard);
    }),

  defaultPaymentMethodId: (customerId) =>
    callStripe(async () => {
      const customer = await stripe.customers.retrieve(customerId, {}, reads);
      if (customer.deleted) return null;
      const value = customer.invoice_settings?.default_payment_method;
      return typeof value === "string" ? value : (value?.id ?? null);
    }),

  setDefaultPaymentMethod: (customerId, paymentMethodId) =>
    callStripe(async () => {
      await stripe.customers.update(
        customerId,
        { invoice_settings: { default_payment_method: paymentMethodId } },
        { idempotencyKey: `pm-default:${customerId}:${paymentMethodId}:${crypto.randomUUID()}` },
      );
    }),

  listInvoices: (customerId, limit) =>
    callStripe(async () => {
      const page = await stripe.invoices.list({ customer: customerId, limit }, reads);
      return page.data.map(toInvoice);
    }),
  retryOpenInvoices: (customerId) =>
    callStripe(async () => {
      const open = await stripe.invoices.list({ customer: customerId, status: "open", limit: 100 });
      const results: InvoiceSnapshot[] = [];
      for (const invoice of open.data) {
        try {
          results.push(
            toInvoice(
              await stripe.invoices.pay(
                invoice.id ?? "",
                {},
                { idempotencyKey: `invoice-retry:${crypto.randomUUID()}` },
              ),
            ),
          );
        } catch (error) {
          // Declined again: the invoice stays open with the processor's attempt recorded.
          if (!(error instanceof Stripe.errors.StripeCardError)) throw error;
          results.push(toInvoice(await stripe.invoices.retrieve(invoice.id ?? "")));
        }
      }
      return results;
    }),
});
