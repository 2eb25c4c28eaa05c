// /v1/invoiceitems: pending items picked up by the customer's next invoice, or added to a draft invoice.
import { addInvoiceItemLine, recompute } from "../billing-service.ts";
import type { RouteHandler, Router } from "../http-router.ts";
import { paginate } from "../list-pagination.ts";
import { applyMetadata, bool, currency, int, obj, reqStr, str } from "../request-params.ts";
import { invalidRequest, missingParam } from "../stripe-errors.ts";
import type { InvoiceItem } from "../stripe-types.ts";

const createInvoiceItem: RouteHandler = ({ store, params }) => {
  const customer = store.customer(reqStr(params, "customer"), "customer");
  const invoiceId = str(params, "invoice");
  const invoice = invoiceId ? store.invoice(invoiceId, "invoice") : undefined;
  if (invoice && invoice.customer !== customer.id) {
    throw invalidRequest("The invoice belongs to a different customer.", { param: "invoice" });
  }
  if (invoice && invoice.status !== "draft") {
    throw invalidRequest(`You can only add invoice items to draft invoices; ${invoice.id} is ${invoice.status}.`, {
      code: "invoice_not_editable",
      param: "invoice",
    });
  }
  // `price` (older API versions) or `pricing[price]` (current); `price_data` for inline amounts.
  const pricing = obj(params, "pricing");
  const priceParam = str(params, "price") ? "price" : "pricing[price]";
  const priceId = str(params, "price") ?? (pricing && str(pricing, "price", "pricing[price]"));
  const price = priceId ? store.price(priceId, priceParam) : undefined;
  if (price?.type === "recurring") {
    throw invalidRequest(
      "The price specified is set to `type=recurring` but this field only accepts prices with `type=one_time`.",
      { param: priceParam },
    );
  }
  const priceData = obj(params, "price_data");
  if (priceData) store.product(reqStr(priceData, "product", "price_data[product]"), "price_data[product]");
  const quantity = int(params, "quantity") ?? 1;
  const unitAmount =
    price?.unit_amount ??
    (priceData ? int(priceData, "unit_amount", "price_data[unit_amount]") : undefined) ??
    int(params, "unit_amount");
  const amount = unitAmount !== undefined ? unitAmount * quantity : int(params, "amount");
  if (amount === undefined) throw missingParam("amount");
  const cur =
    price?.currency ??
    (priceData ? currency(priceData) : undefined) ??
    currency(params) ??
    invoice?.currency ??
    customer.currency;
  if (!cur) throw missingParam("currency");
  if (invoice && invoice.currency !== cur) {
    throw invalidRequest(
      `The currency of the invoice item (${cur}) must match the currency of the invoice (${invoice.currency}).`,
      { param: "currency" },
    );
  }
  const subscriptionId = str(params, "subscription");
  const subscription = subscriptionId ? store.subscription(subscriptionId, "subscription") : undefined;
  const period = obj(params, "period");
  const now = store.nowSeconds();
  const ii: InvoiceItem = {
    id: store.newId("ii"),
    object: "invoiceitem",
    amount,
    currency: cur,
    customer: customer.id,
    date: now,
    description: str(params, "description") ?? (price ? (store.products.get(price.product)?.name ?? null) : null),
    discountable: bool(params, "discountable") ?? true,
    discounts: [],
    invoice: null,
    livemode: false,
    metadata: applyMetadata(params),
    parent: subscription
      ? {
          type: "subscription_details",
          subscription_details: { subscription: subscription.id, subscription_item: null },
        }
      : null,
    period: {
      start: (period && int(period, "start", "period[start]")) ?? now,
      end: (period && int(period, "end", "period[end]")) ?? now,
    },
    pricing: price
      ? {
          price_details: { price: price.id, product: price.product },
          type: "price_details",
          unit_amount_decimal: price.unit_amount_decimal,
        }
      : null,
    proration: false,
    quantity,
    quantity_decimal: String(quantity),
    tax_rates: [],
    test_clock: null,
  };
  store.invoiceItems.set(ii.id, ii);
  if (invoice) addInvoiceItemLine(store, invoice, ii);
  return ii;
};

const deleteInvoiceItem: RouteHandler = ({ store, path }) => {
  const ii = store.invoiceItem(path.id ?? "");
  const invoice = ii.invoice ? store.invoices.get(ii.invoice) : undefined;
  if (invoice && invoice.status !== "draft") {
    throw invalidRequest("Invoice items on finalized invoices cannot be deleted.", { code: "invoice_not_editable" });
  }
  if (invoice) {
    invoice.lines.data = invoice.lines.data.filter((l) => l.parent.invoice_item_details?.invoice_item !== ii.id);
    recompute(store, invoice);
  }
  store.invoiceItems.delete(ii.id);
  return { id: ii.id, object: "invoiceitem", deleted: true };
};

const listInvoiceItems: RouteHandler = ({ store, params }) => {
  const customer = str(params, "customer");
  const invoice = str(params, "invoice");
  const pending = bool(params, "pending");
  const all = [...store.invoiceItems.values()].filter(
    (ii) =>
      (!customer || ii.customer === customer) &&
      (!invoice || ii.invoice === invoice) &&
      (pending === undefined || (ii.invoice === null) === pending),
  );
  return paginate(all, params, "/v1/invoiceitems", "invoiceitem", (ii) => ii.date);
};

export function registerInvoiceItemRoutes(router: Router): void {
  router.post("/v1/invoiceitems", createInvoiceItem);

  router.get("/v1/invoiceitems/:id", ({ store, path }) => store.invoiceItem(path.id ?? ""));

  router.delete("/v1/invoiceitems/:id", deleteInvoiceItem);

  router.get("/v1/invoiceitems", listInvoiceItems);
}
