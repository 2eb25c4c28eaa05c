import { describe, expect, it } from "vitest";
import type { InvoiceSnapshot } from "../../integrations/stripe/payments-gateway.ts";
import { toInvoiceResponse } from "./invoices.mapper.ts";

const at = (iso: string) => new Date(iso);

const snapshot = (overrides: Partial<InvoiceSnapshot> = {}): InvoiceSnapshot => ({
  id: "in_1",
  customerId: "cus_1",
  subscriptionId: null,
  number: "ABC-0001",
  description: null,
  currency: "usd",
  amountDue: 1999,
  amountPaid: 0,
  amountRemaining: 1999,
  subtotal: 2099,
  subtotalExcludingTax: 2099,
  total: 1999,
  tax: 150,
  totalExcludingTax: 1849,
  dueDate: null,
  invoicePdf: null,
  status: "open",
  periodStart: at("2026-11-21T23:59:59Z"),
  periodEnd: at("2026-12-01T00:00:00Z"),
  paid: false,
  attempted: false,
  attemptCount: 0,
  created: at("2026-11-21T23:30:05Z"),
  ...overrides,
});

describe("toInvoiceResponse", () => {
  it("renders every field of the API doc's Invoice from minor units", () => {
    expect(toInvoiceResponse(snapshot(), "Asia/Tokyo")).toEqual({
      id: "in_1",
      number: "ABC-0001",
      description: null,
      amount_due: 19.99,
      amount_paid: 0,
      amount_remaining: 19.99,
      subtotal: 20.99,
      subtotal_excluding_tax: 20.99,
      total: 19.99,
      tax: 1.5,
      total_excluding_tax: 18.49,
      currency: "USD",
      currency_symbol: "$",
      due_date: null,
      invoice_pdf: null,
      status: "open",
      period_start: "21 Nov 2026",
      period_end: "1 Dec 2026",
      paid: false,
      attempt_count: 0,
      attempted: false,
      created_at: "2026-11-22 08:30:05",
    });
  });

  it.each([
    ["jpy", 1500, 1500, "JPY", "¥"],
    ["krw", 13000, 13000, "KRW", "₩"],
    ["kwd", 12345, 12.345, "KWD", "KWD"],
    ["bhd", 10, 0.01, "BHD", "BHD"],
    ["eur", 5, 0.05, "EUR", "€"],
    ["gbp", 0, 0, "GBP", "£"],
  ])("%s %i minor units -> %d %s", (currency, minor, major, code, symbol) => {
    const out = toInvoiceResponse(snapshot({ currency, amountDue: minor, total: minor }), undefined);
    expect(out.amount_due).toBe(major);
    expect(out.total).toBe(major);
    expect(out.currency).toBe(code);
    expect(out.currency_symbol).toBe(symbol);
  });

  it("renders due_date as the UTC day, keeps description and pdf, and passes payment facts through", () => {
    const out = toInvoiceResponse(
      snapshot({
        dueDate: at("2026-12-21T23:59:59Z"),
        description: "Fleet, November",
        invoicePdf: "https://pay.example/pdf",
        status: "paid",
        paid: true,
        attempted: true,
        attemptCount: 3,
      }),
      "Pacific/Kiritimati",
    );
    expect(out).toMatchObject({
      due_date: "2026-12-21",
      description: "Fleet, November",
      invoice_pdf: "https://pay.example/pdf",
      status: "paid",
      paid: true,
      attempted: true,
      attempt_count: 3,
    });
  });

  it("falls back to UTC for an unknown zone and to draft for an unknown status", () => {
    const out = toInvoiceResponse(snapshot({ status: "something_new" }), "Not/AZone");
    expect(out.created_at).toBe("2026-11-21 23:30:05");
    expect(out.status).toBe("draft");
  });
});
