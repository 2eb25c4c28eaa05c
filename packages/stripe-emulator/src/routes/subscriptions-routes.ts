// /v1/subscriptions: create (first invoice finalized + charged), retrieve, update (with prorations), cancel, list.
import {
  addSubscriptionItemLine,
  attemptPayment,
  createInvoice,
  finalizeInvoice,
  formatDate,
  includePendingItems,
} from "../billing-service.ts";
import type { EmulatorStore } from "../emulator-store.ts";
import type { RouteHandler, Router } from "../http-router.ts";
import { paginate } from "../list-pagination.ts";
import { customerPaymentMethod } from "../payment-methods-service.ts";
import { applyMetadata, bool, int, list, obj, oneOf, reqStr, str } from "../request-params.ts";
import type { Params } from "../request-params.ts";
import { invalidParam, invalidRequest, missingParam, noSuch } from "../stripe-errors.ts";
import type { Interval, Invoice, Plan, Price, Subscription, SubscriptionItem } from "../stripe-types.ts";

const COLLECTION_METHODS = ["charge_automatically", "send_invoice"] as const;

export function addInterval(unix: number, interval: Interval, count: number): number {
  if (interval === "day") return unix + 86400 * count;
  if (interval === "week") return unix + 7 * 86400 * count;
  const d = new Date(unix * 1000);
  const month = d.getUTCMonth() + (interval === "month" ? count : 12 * count);
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), month + 1, 0)).getUTCDate();
  const day = Math.min(d.getUTCDate(), lastDay);
  return Date.UTC(d.getUTCFullYear(), month, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()) / 1000;
}

function planFromPrice(price: Price): Plan {
  return {
    id: price.id,
    object: "plan",
    active: price.active,
    amount: price.unit_amount,
    amount_decimal: price.unit_amount_decimal,
    billing_scheme: "per_unit",
    created: price.created,
    currency: price.currency,
    interval: price.recurring?.interval ?? "month",
    interval_count: price.recurring?.interval_count ?? 1,
    livemode: false,
    metadata: price.metadata,
    nickname: price.nickname,
    product: price.product,
    tiers_mode: null,
    transform_usage: null,
    trial_period_days: null,
    usage_type: "licensed",
  };
}

function recurringPrice(store: EmulatorStore, id: string, label: string, currency?: string): Price {
  const price = store.price(id, label);
  if (!price.recurring) {
    throw invalidParam(
      label,
      "The price specified is set to `type=one_time` but this field only accepts prices with `type=recurring`.",
    );
  }
  if (currency && price.currency !== currency) {
    throw invalidParam(
      label,
      `The price's currency (${price.currency}) must match the subscription currency (${currency}).`,
    );
  }
  return price;
}

function newItem(store: EmulatorStore, sub: Subscription, price: Price, quantity: number, p: Params): SubscriptionItem {
  return {
    id: store.newId("si"),
    object: "subscription_item",
    created: store.nowSeconds(),
    current_period_end: sub.current_period_end,
    current_period_start: sub.current_period_start,
    discounts: [],
    metadata: applyMetadata(p),
    plan: planFromPrice(price),
    price,
    quantity,
    subscription: sub.id,
    tax_rates: [],
  };
}

/** Finalizes a subscription invoice and collects it the way `payment_behavior=allow_incomplete` does. */
function billSubscription(
  store: EmulatorStore,
  sub: Subscription,
  inv: Invoice,
  baseUrl: string,
  attempt: boolean,
): void {
  finalizeInvoice(store, inv, baseUrl);
  sub.latest_invoice = inv.id;
  const first = inv.billing_reason === "subscription_create";
  if (inv.status === "paid" || sub.collection_method === "send_invoice") {
    if (first) sub.status = "active";
    return;
  }
  if (!attempt) return;
  const result = attemptPayment(store, inv);
  if (result.outcome !== "paid") sub.status = first ? "incomplete" : "past_due";
}

/** Pending proration items for the unused (credit) and remaining (debit) part of the current period. */
function prorate(
  store: EmulatorStore,
  sub: Subscription,
  item: SubscriptionItem,
  before: { price: Price; quantity: number } | null,
  after: { price: Price; quantity: number } | null,
): void {
  const now = store.nowSeconds();
  const span = sub.current_period_end - sub.current_period_start;
  const fraction = span > 0 ? Math.min(1, Math.max(0, (sub.current_period_end - now) / span)) : 0;
  const add = (kind: "Unused" | "Remaining", side: { price: Price; quantity: number }, sign: number) => {
    const productName = store.products.get(side.price.product)?.name ?? side.price.product;
    const ii = {
      id: store.newId("ii"),
      object: "invoiceitem" as const,
      amount: sign * Math.round(side.price.unit_amount * side.quantity * fraction),
      currency: sub.currency,
      customer: sub.customer,
      date: now,
      description: `${kind} time on ${side.quantity} × ${productName} after ${formatDate(now)}`,
      discountable: false,
      discounts: [],
      invoice: null,
      livemode: false as const,
      metadata: {},
      parent: {
        type: "subscription_details" as const,
        subscription_details: { subscription: sub.id, subscription_item: item.id },
      },
      period: { start: now, end: sub.current_period_end },
      pricing: {
        price_details: { price: side.price.id, product: side.price.product },
        type: "price_details" as const,
        unit_amount_decimal: side.price.unit_amount_decimal,
      },
      proration: true,
      quantity: side.quantity,
      quantity_decimal: String(side.quantity),
      tax_rates: [],
      test_clock: null,
    };
    if (ii.amount !== 0) store.invoiceItems.set(ii.id, ii);
  };
  if (before) add("Unused", before, -1);
  if (after) add("Remaining", after, 1);
}

function applyCommonParams(store: EmulatorStore, sub: Subscription, p: Params): void {
  sub.metadata = applyMetadata(p, sub.metadata);
  const description = str(p, "description");
  if (description !== undefined) sub.description = description;
  const pm = str(p, "default_payment_method");
  if (pm !== undefined) {
    sub.default_payment_method =
      pm && customerPaymentMethod(store, store.customer(sub.customer), pm, "default_payment_method");
  }
  sub.collection_method = oneOf(p, "collection_method", COLLECTION_METHODS) ?? sub.collection_method;
  const days = int(p, "days_until_due");
  if (days !== undefined) sub.days_until_due = days;
  if (sub.collection_method === "send_invoice" && sub.days_until_due === null) throw missingParam("days_until_due");
  if (sub.collection_method === "charge_automatically") sub.days_until_due = null;
  const cancelAtEnd = bool(p, "cancel_at_period_end");
  if (cancelAtEnd !== undefined) {
    sub.cancel_at_period_end = cancelAtEnd;
    sub.cancel_at = cancelAtEnd ? sub.current_period_end : null;
  }
}

function itemEntries(p: Params): Params[] | undefined {
  return list(p, "items")?.map((e, i) => {
    if (typeof e !== "object" || e === null || Array.isArray(e)) throw invalidParam(`items[${i}]`, "Invalid object");
    return e as Params;
  });
}

function subscriptionInvoice(store: EmulatorStore, sub: Subscription, reason: Invoice["billing_reason"]): Invoice {
  return createInvoice(store, {
    customer: store.customer(sub.customer),
    currency: sub.currency,
    collectionMethod: sub.collection_method,
    daysUntilDue: sub.days_until_due,
    dueDate: null,
    autoAdvance: true,
    description: null,
    metadata: {},
    billingReason: reason,
    subscription: sub,
    defaultPaymentMethod: null,
    period: { start: sub.current_period_start, end: sub.current_period_end },
  });
}

/** A subscription as `POST /v1/subscriptions` starts it: incomplete until its first invoice is collected. */
function newSubscription(
  id: string,
  now: number,
  customer: string,
  currency: string,
  recurring: { interval: Interval; interval_count: number },
): Subscription {
  return {
    id,
    object: "subscription",
    application: null,
    billing_cycle_anchor: now,
    cancel_at: null,
    cancel_at_period_end: false,
    canceled_at: null,
    cancellation_details: { comment: null, feedback: null, reason: null },
    collection_method: "charge_automatically",
    created: now,
    currency,
    current_period_end: addInterval(now, recurring.interval, recurring.interval_count),
    current_period_start: now,
    customer,
    days_until_due: null,
    default_payment_method: null,
    default_source: null,
    description: null,
    discounts: [],
    ended_at: null,
    items: { object: "list", data: [], has_more: false, url: `/v1/subscription_items?subscription=${id}` },
    latest_invoice: null,
    livemode: false,
    metadata: {},
    pending_update: null,
    schedule: null,
    start_date: now,
    status: "incomplete",
    test_clock: null,
    trial_end: null,
    trial_start: null,
  };
}

/**
 * An update's `items[]`: deleted, changed or added items, applied to `sub` now; the proration of
 * each change is returned, to run once the rest of the update is accepted.
 */
function applyItemEntries(store: EmulatorStore, sub: Subscription, entries: Params[]): Array<() => void> {
  const changes: Array<() => void> = [];
  entries.forEach((e, i) => {
    const itemId = str(e, "id", `items[${i}][id]`);
    const item = itemId ? sub.items.data.find((it) => it.id === itemId) : undefined;
    if (itemId && !item) throw noSuch("subscription item", itemId, `items[${i}][id]`);
    const priceId = str(e, "price", `items[${i}][price]`);
    const price = priceId ? recurringPrice(store, priceId, `items[${i}][price]`, sub.currency) : item?.price;
    if (!price) throw missingParam(`items[${i}][price]`);
    const quantity = int(e, "quantity", `items[${i}][quantity]`) ?? item?.quantity ?? 1;
    if (item && bool(e, "deleted", `items[${i}][deleted]`)) {
      sub.items.data = sub.items.data.filter((it) => it !== item);
      changes.push(() => prorate(store, sub, item, { price: item.price, quantity: item.quantity }, null));
    } else if (item) {
      // By id: a store reloaded from DATA_DIR holds copies, not the same objects.
      if (price.id === item.price.id && quantity === item.quantity) return;
      const before = { price: item.price, quantity: item.quantity };
      item.price = price;
      item.plan = planFromPrice(price);
      item.quantity = quantity;
      item.metadata = applyMetadata(e, item.metadata);
      changes.push(() => prorate(store, sub, item, before, { price, quantity }));
    } else {
      const added = newItem(store, sub, price, quantity, e);
      sub.items.data.push(added);
      changes.push(() => prorate(store, sub, added, null, { price, quantity }));
    }
  });
  return changes;
}

const createSubscription: RouteHandler = ({ store, params, baseUrl }) => {
  const customer = store.customer(reqStr(params, "customer"), "customer");
  const entries = itemEntries(params);
  if (!entries || entries.length === 0) throw missingParam("items");
  const first = entries[0] ?? {};
  const firstPrice = recurringPrice(store, reqStr(first, "price", "items[0][price]"), "items[0][price]");
  const recurring = firstPrice.recurring ?? { interval: "month" as const, interval_count: 1 };
  const now = store.nowSeconds();
  const id = store.newId("sub");
  const sub = newSubscription(id, now, customer.id, firstPrice.currency, recurring);
  applyCommonParams(store, sub, params);
  sub.items.data = entries.map((e, i) => {
    const label = `items[${i}][price]`;
    const price = recurringPrice(store, reqStr(e, "price", label), label, sub.currency);
    const r = price.recurring;
    if (r && (r.interval !== recurring.interval || r.interval_count !== recurring.interval_count)) {
      throw invalidParam(
        label,
        "All prices on a subscription must have the same `recurring.interval` and `recurring.interval_count`.",
      );
    }
    return newItem(store, sub, price, int(e, "quantity", `items[${i}][quantity]`) ?? 1, e);
  });
  const behavior = oneOf(params, "payment_behavior", [
    "allow_incomplete",
    "default_incomplete",
    "error_if_incomplete",
    "pending_if_incomplete",
  ] as const);
  store.subscriptions.set(id, sub);
  const inv = subscriptionInvoice(store, sub, "subscription_create");
  for (const item of sub.items.data) addSubscriptionItemLine(store, inv, sub, item);
  includePendingItems(store, inv);
  customer.currency ??= sub.currency;
  billSubscription(store, sub, inv, baseUrl, behavior !== "default_incomplete");
  return sub;
};

const updateSubscription: RouteHandler = ({ store, path, params, baseUrl }) => {
  const sub = store.subscription(path.id ?? "");
  if (sub.status === "canceled") {
    const allowed = ["metadata", "cancellation_details", "expand"];
    if (Object.keys(params).some((k) => !allowed.includes(k))) {
      throw invalidRequest("A canceled subscription can only update its cancellation_details and metadata.", {
        code: "invalid_canceled_subscription_fields",
      });
    }
    sub.metadata = applyMetadata(params, sub.metadata);
    return sub;
  }
  const behavior =
    oneOf(params, "proration_behavior", ["none", "create_prorations", "always_invoice"] as const) ??
    "create_prorations";
  const changes = applyItemEntries(store, sub, itemEntries(params) ?? []);
  if (sub.items.data.length === 0) throw invalidParam("items", "A subscription must have at least one active plan.");
  applyCommonParams(store, sub, params);
  if (behavior !== "none") for (const change of changes) change();
  if (behavior === "always_invoice" && changes.length > 0) {
    const inv = subscriptionInvoice(store, sub, "subscription_update");
    includePendingItems(store, inv);
    billSubscription(store, sub, inv, baseUrl, true);
  }
  return sub;
};

const cancelSubscription: RouteHandler = ({ store, path, params }) => {
  const sub = store.subscription(path.id ?? "");
  if (sub.status === "canceled") {
    throw invalidRequest("This subscription has already been canceled.");
  }
  const now = store.nowSeconds();
  const details = obj(params, "cancellation_details");
  sub.status = "canceled";
  sub.canceled_at = sub.ended_at = now;
  sub.cancellation_details = {
    comment: (details && str(details, "comment")) ?? null,
    feedback: (details && str(details, "feedback")) ?? null,
    reason: "cancellation_requested",
  };
  return sub;
};

const listSubscriptions: RouteHandler = ({ store, params }) => {
  const customer = str(params, "customer");
  const price = str(params, "price");
  const status = str(params, "status");
  const all = [...store.subscriptions.values()].filter(
    (s) =>
      (!customer || s.customer === customer) &&
      (!price || s.items.data.some((it) => it.price.id === price)) &&
      (status === "all" ||
        (status === "ended" && (s.status === "canceled" || s.status === "incomplete_expired")) ||
        (status ? s.status === status : s.status !== "canceled" && s.status !== "incomplete_expired")),
  );
  return paginate(all, params, "/v1/subscriptions", "subscription");
};

export function registerSubscriptionRoutes(router: Router): void {
  router.post("/v1/subscriptions", createSubscription);
  router.get("/v1/subscriptions/:id", ({ store, path }) => store.subscription(path.id ?? ""));
  router.post("/v1/subscriptions/:id", updateSubscription);
  router.delete("/v1/subscriptions/:id", cancelSubscription);
  router.get("/v1/subscriptions", listSubscriptions);
}
