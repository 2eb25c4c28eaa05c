import type { BillingMirrorWriter } from "@fleet/db";
import type Stripe from "stripe";
import { toCard, toInvoice } from "../../integrations/stripe/payments-gateway.ts";
import { toSubscriptionSnapshot } from "../../integrations/stripe/subscription-gateway.ts";

export type EventOutcome = "applied" | "duplicate" | "ignored";

const idOf = (value: unknown): string | null =>
  typeof value === "string" ? value : value && typeof value === "object" && "id" in value ? String(value.id) : null;

/** The processor customer an event is about (a detached card names it only in `previous_attributes`). */
const customerOf = (event: Stripe.Event): string | null => {
  const object = event.data.object as unknown as Record<string, unknown>;
  if (event.type.startsWith("customer.") && !event.type.startsWith("customer.subscription.")) return idOf(object.id);
  const previous = (event.data as { previous_attributes?: Record<string, unknown> }).previous_attributes;
  return idOf(object.customer) ?? idOf(previous?.customer);
};

/**
 * One event's effect on the mirror, inside the caller's transaction: the event id is recorded
 * first (a repeat changes nothing), then the object the event carries is written
 * (docs/billing.md "Webhooks"). Events about customers we do not know are acknowledged and ignored.
 */
export const applyStripeEvent = async (
  writer: BillingMirrorWriter,
  event: Stripe.Event,
  receivedAt: Date,
): Promise<EventOutcome> => {
  if (!(await writer.recordEvent(event.id, event.type, receivedAt))) return "duplicate";
  const customerId = customerOf(event);
  const account = customerId ? await writer.accountByCustomer(customerId) : null;
  if (!account) return "ignored";
  const object = event.data.object;
  switch (event.type) {
    case "payment_method.attached":
    case "payment_method.updated":
    case "payment_method.automatically_updated": {
      const pm = object as Stripe.PaymentMethod;
      if (pm.type !== "card") return "ignored";
      await writer.upsertCard(account.id, toCard(pm), receivedAt);
      return "applied";
    }
    case "payment_method.detached":
      await writer.removeCard((object as Stripe.PaymentMethod).id);
      return "applied";
    case "customer.updated": {
      const customer = object as Stripe.Customer;
      await writer.setDefaultCard(account.id, idOf(customer.invoice_settings?.default_payment_method));
      return "applied";
    }
    case "customer.subscription.created":
    case "customer.subscription.updated":
    case "customer.subscription.deleted":
    case "customer.subscription.paused":
    case "customer.subscription.resumed": {
      const snapshot = toSubscriptionSnapshot(object as Stripe.Subscription);
      await writer.upsertSubscription(account.id, { ...snapshot, at: new Date(event.created * 1000) });
      return "applied";
    }
    default:
      if (event.type.startsWith("invoice.")) {
        const invoice = object as Stripe.Invoice;
        if (!invoice.id) return "ignored";
        if (event.type === "invoice.deleted") {
          await writer.removeInvoice(invoice.id);
          return "applied";
        }
        await writer.upsertInvoice(account.id, toInvoice(invoice), receivedAt);
        return "applied";
      }
      return "ignored";
  }
};
