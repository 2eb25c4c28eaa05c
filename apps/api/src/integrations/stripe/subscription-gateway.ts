import type Stripe from "stripe";
import { type InvoiceSnapshot, toInvoice } from "./payments-gateway.ts";
import { callStripe } from "./stripe-errors.ts";

/** What a price is made of; the product is named once per currency. */
export interface PriceSpec {
  /** Lower-case ISO code, as the processor uses it. */
  currency: string;
  /** Minor units per router per interval. */
  unitAmount: number;
  interval: "month" | "year";
  productName: string;
}

export interface SubscriptionSnapshot {
  id: string;
  itemId: string;
  currency: string;
  quantity: number;
  /** The processor's status: active, incomplete (first charge failed), past_due, unpaid, canceled, ... */
  status: string;
  /** The processor customer. */
  customerId: string;
  /** Set when the processor answered with it expanded (create). */
  latestInvoice: InvoiceSnapshot | null;
}

/** The subscription side of the processor, as billing for routers needs it. */
export interface SubscriptionGateway {
  /** The recurring price for `spec`: found by its lookup key, else created once. */
  ensurePrice(spec: PriceSpec): Promise<string>;
  /** A live subscription this service made earlier for the account (a create whose answer was lost). */
  findSubscription(customerId: string, accountId: string): Promise<SubscriptionSnapshot | null>;
  createSubscription(input: {
    customerId: string;
    accountId: string;
    priceId: string;
    quantity: number;
    /** The account's ended subscription this one replaces, if any (part of the idempotency key). */
    previous?: string | null;
  }): Promise<SubscriptionSnapshot>;
  updateQuantity(input: { subscriptionId: string; itemId: string; quantity: number }): Promise<void>;
  cancelSubscription(subscriptionId: string): Promise<void>;
  /** The account's subscription as the processor has it now, ended ones included (newest); null if none. */
  currentSubscription(customerId: string, accountId: string): Promise<SubscriptionSnapshot | null>;
  retrieve(subscriptionId: string): Promise<SubscriptionSnapshot>;
}

const ENDED = new Set(["canceled", "incomplete_expired"]);

/** Metadata key that ties a processor subscription to our billing account. */
const ACCOUNT_KEY = "fleet_account_id";

/** Stable per currency, amount and interval: a changed price table makes a new price, never edits one. */
export const priceLookupKey = (spec: PriceSpec): string =>
  `fleet_managed_router_${spec.currency}_${spec.unitAmount}_${spec.interval}`;

export const toSubscriptionSnapshot = (subscription: Stripe.Subscription): SubscriptionSnapshot => {
  const item = subscription.items.data[0];
  const latest = subscription.latest_invoice;
  return {
    id: subscription.id,
    itemId: item?.id ?? "",
    currency: subscription.currency,
    quantity: item?.quantity ?? 0,
    status: subscription.status,
    customerId: typeof subscription.customer === "string" ? subscription.customer : subscription.customer.id,
    latestInvoice: latest && typeof latest === "object" ? toInvoice(latest) : null,
  };
};
const toSnapshot = toSubscriptionSnapshot;

export const createSubscriptionGateway = (stripe: Stripe): SubscriptionGateway => {
  // Prices never change once made, so one lookup per currency and process is enough.
  const prices = new Map<string, string>();
  return {
    ensurePrice: (spec) =>
      callStripe(async () => {
        const key = priceLookupKey(spec);
        const known = prices.get(key);
        if (known) return known;
        const listed = await stripe.prices.list({ lookup_keys: [key], active: true, limit: 100 });
        // Filtered again here: a Stripe-compatible server may ignore `lookup_keys`.
        let price = listed.data.find((p) => p.lookup_key === key);
        price ??= await stripe.prices.create(
          {
            currency: spec.currency,
            unit_amount: spec.unitAmount,
            recurring: { interval: spec.interval },
            product_data: { name: spec.productName },
            lookup_key: key,
            metadata: { fleet_price: "managed_router" },
          },
          // Deterministic: two processes creating the first price of a currency make one.
          { idempotencyKey: `price-create:${key}` },
        );
        prices.set(key, price.id);
        return price.id;
      }),

    findSubscription: (customerId, accountId) =>
      callStripe(async () => {
        const page = await stripe.subscriptions.list({ customer: customerId, status: "all", limit: 100 });
        const found = page.data.find((s) => s.metadata?.[ACCOUNT_KEY] === accountId && !ENDED.has(s.status));
        return found ? toSnapshot(found) : null;
      }),

    createSubscription: ({ customerId, accountId, priceId, quantity, previous }) =>
      callStripe(async () => {
        const subscription = await stripe.subscriptions.create(
          {
            customer: customerId,
            items: [{ price: priceId, quantity }],
            // A missing or failing card must not block creating a service: the invoice stays open.
            payment_behavior: "allow_incomplete",
            metadata: { [ACCOUNT_KEY]: accountId },
            // The first invoice comes back with it: its outcome decides whether the service is created.
            expand: ["latest_invoice"],
          },
          // Deterministic per generation: concurrent creates make one; a replacement is a new key.
          { idempotencyKey: `subscription-create:${accountId}:${previous ?? "first"}:${priceId}:${quantity}` },
        );
        return toSnapshot(subscription);
      }),

    updateQuantity: ({ subscriptionId, itemId, quantity }) =>
      callStripe(async () => {
        await stripe.subscriptions.update(
          subscriptionId,
          { items: [{ id: itemId, quantity }], proration_behavior: "create_prorations" },
          { idempotencyKey: `subscription-quantity:${subscriptionId}:${crypto.randomUUID()}` },
        );
      }),

    currentSubscription: (customerId, accountId) =>
      callStripe(async () => {
        const page = await stripe.subscriptions.list({ customer: customerId, status: "all", limit: 100 });
        const ours = page.data.filter((s) => s.metadata?.[ACCOUNT_KEY] === accountId);
        const found = ours.find((s) => !ENDED.has(s.status)) ?? ours[0];
        return found ? toSnapshot(found) : null;
      }),
    retrieve: (subscriptionId) =>
      callStripe(async () => toSnapshot(await stripe.subscriptions.retrieve(subscriptionId))),
    cancelSubscription: (subscriptionId) =>
      callStripe(async () => {
        await stripe.subscriptions.cancel(
          subscriptionId,
          {},
          { idempotencyKey: `subscription-cancel:${subscriptionId}` },
        );
      }),
  };
};
