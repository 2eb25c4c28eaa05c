import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { BillingAccount } from "./billing-account.entity.ts";

/** A card as the processor last told us (docs/billing.md): what `GET /v1/account/payment-methods` lists. */
export const BillingPaymentMethod = defineEntity({
  name: "BillingPaymentMethod",
  tableName: "billing_payment_methods",
  properties: {
    /** The processor's id (`pm_...`). */
    id: p.string().length(255).primary(),
    account: () => p.manyToOne(BillingAccount).deleteRule("cascade").index(),
    type: p.string().length(32),
    brand: p.string().length(64),
    last4: p.string().length(4),
    expMonth: p.integer(),
    expYear: p.integer(),
    isDefault: p.boolean().default(false),
    createdAt: p.datetime(),
    syncedAt: p.datetime(),
  },
});
export type TBillingPaymentMethod = InferEntity<typeof BillingPaymentMethod>;

/** An invoice as the processor last told us, in its minor units (docs/billing.md). */
export const BillingInvoice = defineEntity({
  name: "BillingInvoice",
  tableName: "billing_invoices",
  properties: {
    /** The processor's id (`in_...`). */
    id: p.string().length(255).primary(),
    account: () => p.manyToOne(BillingAccount).deleteRule("cascade").index(),
    stripeSubscriptionId: p.string().length(255).nullable(),
    number: p.string().length(255).nullable(),
    description: p.text().nullable(),
    currency: p.string().length(3),
    amountDue: p.bigint("number"),
    amountPaid: p.bigint("number"),
    amountRemaining: p.bigint("number"),
    subtotal: p.bigint("number"),
    subtotalExcludingTax: p.bigint("number"),
    total: p.bigint("number"),
    tax: p.bigint("number"),
    totalExcludingTax: p.bigint("number"),
    dueDate: p.datetime().nullable(),
    invoicePdf: p.text().nullable(),
    status: p.string().length(32),
    periodStart: p.datetime(),
    periodEnd: p.datetime(),
    paid: p.boolean(),
    attempted: p.boolean(),
    attemptCount: p.integer(),
    createdAt: p.datetime(),
    syncedAt: p.datetime(),
  },
});
export type TBillingInvoice = InferEntity<typeof BillingInvoice>;

/** When an account's mirror was last rebuilt from the processor; no row = never (rebuilt on first read). */
export const BillingMirrorSync = defineEntity({
  name: "BillingMirrorSync",
  tableName: "billing_mirror_syncs",
  properties: {
    account: () => p.oneToOne(BillingAccount).primary().owner().deleteRule("cascade"),
    syncedAt: p.datetime(),
  },
});
export type TBillingMirrorSync = InferEntity<typeof BillingMirrorSync>;

/** A processor webhook event already processed: the unique key that makes each event count once. */
export const StripeWebhookEvent = defineEntity({
  name: "StripeWebhookEvent",
  tableName: "stripe_webhook_events",
  properties: {
    /** The processor's event id (`evt_...`). */
    id: p.string().length(255).primary(),
    type: p.string().length(255),
    receivedAt: p.datetime(),
  },
});
export type TStripeWebhookEvent = InferEntity<typeof StripeWebhookEvent>;
