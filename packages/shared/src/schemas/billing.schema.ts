import { z } from "zod";
import { stringError, textRule } from "../rules/text-rules.ts";

/** Longest processor object id accepted in a request (Stripe ids are far shorter). */
export const PAYMENT_METHOD_ID_MAX = 255;

/** docs/api.md "Limits": the invoice list returns the most recent 100, no pagination. */
export const INVOICE_LIST_LIMIT = 100;

/**
 * A processor payment method id as sent by a client. Only the characters Stripe ids use, so the
 * value can never reshape the processor URL it ends up in.
 */
export const ZPaymentMethodId = textRule(
  z
    .string({ error: stringError })
    .min(1, { error: "is required and cannot be empty" })
    .max(PAYMENT_METHOD_ID_MAX, { error: `must be at most ${PAYMENT_METHOD_ID_MAX} characters` })
    .regex(/^[A-Za-z0-9_]+$/, { error: "must be a payment method id such as pm_1Abc..." }),
);

/** POST /v1/account/tax (and its alias POST /v1/account/payment-methods). */
export const ZSavePaymentMethodInput = z.object({ id: ZPaymentMethodId });
export type TSavePaymentMethodInput = z.infer<typeof ZSavePaymentMethodInput>;

/** DELETE /v1/account/payment-methods/{id}: the path parameter as a field (docs/api.md "tRPC"). */
export const ZDeletePaymentMethodInput = z.object({ id: ZPaymentMethodId });
export type TDeletePaymentMethodInput = z.infer<typeof ZDeletePaymentMethodInput>;

/** docs/api.md "Setup Intent" status values. */
export const SETUP_INTENT_STATUSES = [
  "requires_payment_method",
  "requires_confirmation",
  "requires_action",
  "processing",
  "canceled",
  "succeeded",
] as const;

export const ZSetupIntent = z
  .object({
    id: z.string(),
    publishable_key: z.string().meta({ description: "Publishable key for the processor's client-side library." }),
    client_secret: z.string().meta({
      description: "Completes the setup client-side. Shown to this user only; never stored or logged by the service.",
    }),
    status: z.enum(SETUP_INTENT_STATUSES),
    created_at: z.string().meta({ description: "YYYY-MM-DD HH:MM:SS in the token's time zone (UTC by default)." }),
  })
  .meta({ id: "SetupIntent" });
export type TSetupIntent = z.infer<typeof ZSetupIntent>;

/** docs/api.md "Payment Method" brand values; anything else the processor reports is `unknown`. */
export const CARD_BRANDS = [
  "amex",
  "diners",
  "discover",
  "eftpos_au",
  "jcb",
  "mastercard",
  "unionpay",
  "visa",
  "unknown",
] as const;
export type TCardBrand = (typeof CARD_BRANDS)[number];

export const ZPaymentMethod = z
  .object({
    id: z.string(),
    brand: z.enum(CARD_BRANDS),
    last4: z.string(),
    exp_month: z.number().int(),
    exp_year: z.number().int(),
    created_at: z.string().meta({ description: "YYYY-MM-DD HH:MM:SS in the token's time zone (UTC by default)." }),
  })
  .meta({ id: "PaymentMethod" });
export type TPaymentMethod = z.infer<typeof ZPaymentMethod>;

export const ZPaymentMethodList = z.array(ZPaymentMethod);

/** docs/api.md "Invoice" status values. */
export const INVOICE_STATUSES = ["draft", "open", "paid", "uncollectible", "void"] as const;

export const ZInvoice = z
  .object({
    id: z.string(),
    number: z.string().nullable().meta({ description: "Null only while the invoice is a draft." }),
    description: z.string().nullable(),
    amount_due: z.number(),
    amount_paid: z.number(),
    amount_remaining: z.number(),
    subtotal: z.number(),
    subtotal_excluding_tax: z.number(),
    total: z.number(),
    tax: z.number(),
    total_excluding_tax: z.number(),
    currency: z.string().meta({ description: "Three-letter ISO code, upper case." }),
    currency_symbol: z.string(),
    due_date: z.string().nullable().meta({
      description: "YYYY-MM-DD (UTC); null for invoices collected automatically.",
    }),
    invoice_pdf: z.string().nullable(),
    status: z.enum(INVOICE_STATUSES),
    period_start: z.string().meta({ description: 'Day, abbreviated month, year, e.g. "21 Nov 2026" (UTC).' }),
    period_end: z.string().meta({ description: 'Day, abbreviated month, year, e.g. "21 Nov 2026" (UTC).' }),
    paid: z.boolean(),
    attempt_count: z.number().int().min(0),
    attempted: z.boolean(),
    created_at: z.string().meta({ description: "YYYY-MM-DD HH:MM:SS in the token's time zone (UTC by default)." }),
  })
  .meta({ id: "Invoice" });
export type TInvoice = z.infer<typeof ZInvoice>;

export const ZInvoiceList = z.array(ZInvoice);
