import { text } from "@fleet/shared";
import type Stripe from "stripe";
import { z } from "zod";

/**
 * The shape of the processor's events, as far as this system reads them (docs/billing.md
 * "Webhooks"). A correctly signed body is still data from outside: `{}`, `data.object: null`, a
 * number where an id belongs or an amount past what the mirror's columns hold is refused here,
 * before anything is written, instead of failing half-way in SQL (a 5xx). Unknown keys pass.
 */

const ZId = text({ min: 1, max: 255 });
/** Unix seconds from 1970 to the year 9999. */
const ZUnix = z.number().int().min(0).max(253_402_300_799);
const ZInt32 = z.number().int().min(-2_147_483_648).max(2_147_483_647);
const ZAmount = z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);
/** An id, or the object it names expanded (`{"id": ...}`). */
const ZRef = z.union([ZId, z.looseObject({ id: ZId })]);

const ZCard = z.looseObject({
  id: ZId,
  type: text({ min: 1, max: 32 }),
  customer: ZRef.nullish(),
  created: ZUnix,
  card: z
    .looseObject({
      brand: text({ max: 64 }).nullish(),
      last4: text({ max: 4 }).nullish(),
      exp_month: ZInt32.nullish(),
      exp_year: ZInt32.nullish(),
    })
    .nullish(),
});

const ZDetachedCard = z.looseObject({ id: ZId, customer: ZRef.nullish() });

const ZCustomer = z.looseObject({
  id: ZId,
  invoice_settings: z.looseObject({ default_payment_method: ZRef.nullish() }).nullish(),
});

const ZInvoice = z.looseObject({
  // `invoice.upcoming` describes an invoice that does not exist yet: no id (acknowledged, ignored).
  id: ZId.nullish(),
  customer: ZRef,
  number: text({ max: 255 }).nullish(),
  description: text({ multiline: true, max: 10_000 }).nullish(),
  currency: text({ min: 3, max: 3 }),
  amount_due: ZAmount,
  amount_paid: ZAmount,
  amount_remaining: ZAmount,
  subtotal: ZAmount,
  subtotal_excluding_tax: ZAmount.nullish(),
  total: ZAmount,
  total_excluding_tax: ZAmount.nullish(),
  total_taxes: z.array(z.looseObject({ amount: ZAmount })).nullish(),
  tax: ZAmount.nullish(),
  due_date: ZUnix.nullish(),
  invoice_pdf: text({ max: 2_048 }).nullish(),
  status: text({ min: 1, max: 32 }).nullish(),
  period_start: ZUnix,
  period_end: ZUnix,
  paid: z.boolean().nullish(),
  attempted: z.boolean(),
  attempt_count: ZInt32,
  created: ZUnix,
  subscription: ZRef.nullish(),
  parent: z.looseObject({ subscription_details: z.looseObject({ subscription: ZRef.nullish() }).nullish() }).nullish(),
});

const ZSubscription = z.looseObject({
  id: ZId,
  currency: text({ min: 3, max: 3 }),
  status: text({ min: 1, max: 32 }),
  customer: ZRef,
  items: z.looseObject({ data: z.array(z.looseObject({ id: ZId, quantity: ZInt32.nullish() })) }),
  latest_invoice: z.union([ZId, ZInvoice]).nullish(),
});

const ZEnvelope = z.looseObject({
  id: ZId,
  type: text({ min: 1, max: 255 }),
  created: ZUnix,
  data: z.looseObject({
    object: z.record(z.string(), z.unknown()),
    previous_attributes: z.looseObject({ customer: ZRef.nullish() }).nullish(),
  }),
});

/** The object schema of each event type the system acts on; any other type is ignored. */
const objectSchemaFor = (type: string): z.ZodType | undefined => {
  switch (type) {
    case "payment_method.attached":
    case "payment_method.updated":
    case "payment_method.automatically_updated":
      return ZCard;
    case "payment_method.detached":
      return ZDetachedCard;
    case "customer.updated":
      return ZCustomer;
    case "customer.subscription.created":
    case "customer.subscription.updated":
    case "customer.subscription.deleted":
    case "customer.subscription.paused":
    case "customer.subscription.resumed":
      return ZSubscription;
    default:
      return type.startsWith("invoice.") ? ZInvoice : undefined;
  }
};

export type TStripeEventCheck = { ok: true; event: Stripe.Event; handled: boolean } | { ok: false; problem: string };

/**
 * Checks a verified event: the envelope always, the object for the types the system acts on
 * (`handled`). The first problem is named (`data.object.card.exp_month: ...`) for the 400 answer.
 */
export const checkStripeEvent = (value: unknown): TStripeEventCheck => {
  const envelope = ZEnvelope.safeParse(value);
  if (!envelope.success) return { ok: false, problem: describe(envelope.error) };
  const schema = objectSchemaFor(envelope.data.type);
  if (!schema) return { ok: true, event: value as Stripe.Event, handled: false };
  const object = schema.safeParse(envelope.data.data.object);
  if (!object.success) return { ok: false, problem: describe(object.error, "data.object.") };
  return { ok: true, event: value as Stripe.Event, handled: true };
};

const describe = (error: z.ZodError, prefix = ""): string => {
  const issue = error.issues[0];
  if (!issue) return "not a well-formed event";
  const path = issue.path.map(String).join(".");
  return `${prefix}${path || "body"}: ${issue.message}`;
};
