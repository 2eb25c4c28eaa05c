import {
  currencySymbol,
  formatDateTime,
  formatDayMonthYear,
  fromMinorUnits,
  INVOICE_STATUSES,
  type TInvoice,
} from "@fleet/shared";
import type { InvoiceSnapshot } from "../../integrations/stripe/payments-gateway.ts";

const STATUSES = new Set<string>(INVOICE_STATUSES);

/** `YYYY-MM-DD` in UTC: docs/api.md gives due_date the type "date" without a form; ISO is unambiguous. */
const isoDay = (date: Date): string => date.toISOString().slice(0, 10);

/**
 * docs/api.md "Invoice": processor minor units -> major units of the invoice currency (zero- and
 * three-decimal currencies honoured), upper-case code with its symbol, periods as "21 Nov 2026",
 * `created_at` in the token's zone; nulls kept where the processor has none.
 */
export const toInvoiceResponse = (
  invoice: Omit<InvoiceSnapshot, "customerId" | "subscriptionId">,
  timezone: string | undefined,
): TInvoice => {
  const currency = invoice.currency.toUpperCase();
  const money = (minor: number) => fromMinorUnits(minor, currency);
  return {
    id: invoice.id,
    number: invoice.number,
    description: invoice.description,
    amount_due: money(invoice.amountDue),
    amount_paid: money(invoice.amountPaid),
    amount_remaining: money(invoice.amountRemaining),
    subtotal: money(invoice.subtotal),
    subtotal_excluding_tax: money(invoice.subtotalExcludingTax),
    total: money(invoice.total),
    tax: money(invoice.tax),
    total_excluding_tax: money(invoice.totalExcludingTax),
    currency,
    currency_symbol: currencySymbol(currency),
    due_date: invoice.dueDate ? isoDay(invoice.dueDate) : null,
    invoice_pdf: invoice.invoicePdf,
    status: (STATUSES.has(invoice.status) ? invoice.status : "draft") as TInvoice["status"],
    period_start: formatDayMonthYear(invoice.periodStart),
    period_end: formatDayMonthYear(invoice.periodEnd),
    paid: invoice.paid,
    attempt_count: invoice.attemptCount,
    attempted: invoice.attempted,
    created_at: formatDateTime(invoice.created, timezone),
  };
};
