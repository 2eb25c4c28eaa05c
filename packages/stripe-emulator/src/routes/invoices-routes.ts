// /v1/invoices: create, retrieve, update, delete (draft), list, lines, finalize, pay, send, void, mark_uncollectible.
import {
  createInvoice,
  finalizeInvoice,
  includePendingItems,
  markUncollectible,
  payInvoice,
  voidInvoice,
} from "../billing-service.ts";
import type { RouteHandler, Router } from "../http-router.ts";
import { listOf, paginate } from "../list-pagination.ts";
import { customerPaymentMethod } from "../payment-methods-service.ts";
import { applyMetadata, bool, currency, has, int, oneOf, reqStr, str } from "../request-params.ts";
import { invalidRequest, missingParam } from "../stripe-errors.ts";

const COLLECTION_METHODS = ["charge_automatically", "send_invoice"] as const;
const STATUSES = ["draft", "open", "paid", "uncollectible", "void"] as const;

const createInvoiceRoute: RouteHandler = ({ store, params }) => {
  const customer = store.customer(reqStr(params, "customer"), "customer");
  const collectionMethod = oneOf(params, "collection_method", COLLECTION_METHODS) ?? "charge_automatically";
  const daysUntilDue = int(params, "days_until_due") ?? null;
  const dueDate = int(params, "due_date") ?? null;
  if (collectionMethod === "charge_automatically" && (daysUntilDue !== null || dueDate !== null)) {
    throw invalidRequest("Invoices with `collection_method=charge_automatically` cannot have a due date.", {
      param: daysUntilDue !== null ? "days_until_due" : "due_date",
    });
  }
  if (collectionMethod === "send_invoice" && daysUntilDue === null && dueDate === null) {
    throw missingParam("days_until_due");
  }
  const subscriptionId = str(params, "subscription");
  const subscription = subscriptionId ? store.subscription(subscriptionId, "subscription") : null;
  const pm = str(params, "default_payment_method");
  const invoice = createInvoice(store, {
    customer,
    currency: currency(params) ?? subscription?.currency ?? customer.currency ?? "usd",
    collectionMethod,
    daysUntilDue,
    dueDate,
    autoAdvance: bool(params, "auto_advance") ?? false,
    description: str(params, "description") ?? null,
    metadata: applyMetadata(params),
    billingReason: "manual",
    subscription,
    defaultPaymentMethod: pm ? customerPaymentMethod(store, customer, pm, "default_payment_method") : null,
  });
  const pending = oneOf(params, "pending_invoice_items_behavior", ["include", "exclude"] as const) ?? "include";
  if (pending === "include") includePendingItems(store, invoice);
  return invoice;
};

const updateInvoice: RouteHandler = ({ store, path, params }) => {
  const inv = store.invoice(path.id ?? "");
  inv.metadata = applyMetadata(params, inv.metadata);
  inv.auto_advance = bool(params, "auto_advance") ?? inv.auto_advance;
  const draftOnly = ["description", "collection_method", "days_until_due", "due_date", "default_payment_method"];
  const touched = draftOnly.filter((k) => has(params, k));
  if (touched.length === 0) return inv;
  if (inv.status !== "draft") {
    throw invalidRequest(`Finalized invoices can't be updated in this way (${touched.join(", ")}).`, {
      code: "invoice_not_editable",
    });
  }
  const description = str(params, "description");
  if (description !== undefined) inv.description = description;
  inv.collection_method = oneOf(params, "collection_method", COLLECTION_METHODS) ?? inv.collection_method;
  const days = int(params, "days_until_due");
  const due = int(params, "due_date");
  if (due !== undefined) inv.due_date = due;
  else if (days !== undefined) inv.due_date = inv.created + days * 86400;
  if (inv.collection_method === "charge_automatically") inv.due_date = null;
  const pm = str(params, "default_payment_method");
  if (pm !== undefined) {
    inv.default_payment_method =
      pm && customerPaymentMethod(store, store.customer(inv.customer), pm, "default_payment_method");
  }
  return inv;
};

const deleteDraftInvoice: RouteHandler = ({ store, path }) => {
  const inv = store.invoice(path.id ?? "");
  if (inv.status !== "draft") {
    throw invalidRequest("You can only delete draft invoices.", { code: "invoice_not_editable" });
  }
  for (const ii of store.invoiceItems.values()) if (ii.invoice === inv.id) ii.invoice = null;
  store.invoices.delete(inv.id);
  return { id: inv.id, object: "invoice", deleted: true };
};

const listInvoices: RouteHandler = ({ store, params }) => {
  const customer = str(params, "customer");
  const subscription = str(params, "subscription");
  const status = oneOf(params, "status", STATUSES);
  const collection = oneOf(params, "collection_method", COLLECTION_METHODS);
  const all = [...store.invoices.values()].filter(
    (inv) =>
      (!customer || inv.customer === customer) &&
      (!subscription || inv.subscription === subscription) &&
      (!status || inv.status === status) &&
      (!collection || inv.collection_method === collection),
  );
  return paginate(all, params, "/v1/invoices", "invoice");
};

const listInvoiceLines: RouteHandler = ({ store, path }) => {
  const inv = store.invoice(path.id ?? "");
  return listOf(inv.lines.data, inv.lines.url);
};

const finalizeInvoiceRoute: RouteHandler = ({ store, path, params, baseUrl }) => {
  const inv = store.invoice(path.id ?? "");
  inv.auto_advance = bool(params, "auto_advance") ?? inv.auto_advance;
  return finalizeInvoice(store, inv, baseUrl);
};

const sendInvoice: RouteHandler = ({ store, path, baseUrl }) => {
  const inv = store.invoice(path.id ?? "");
  if (inv.collection_method !== "send_invoice") {
    throw invalidRequest("You can only manually send an invoice if its collection method is 'send_invoice'.");
  }
  return inv.status === "draft" ? finalizeInvoice(store, inv, baseUrl) : inv;
};

export function registerInvoiceRoutes(router: Router): void {
  router.post("/v1/invoices", createInvoiceRoute);

  router.get("/v1/invoices/:id", ({ store, path }) => store.invoice(path.id ?? ""));

  router.post("/v1/invoices/:id", updateInvoice);

  router.delete("/v1/invoices/:id", deleteDraftInvoice);

  router.get("/v1/invoices", listInvoices);

  router.get("/v1/invoices/:id/lines", listInvoiceLines);

  router.post("/v1/invoices/:id/finalize", finalizeInvoiceRoute);

  router.post("/v1/invoices/:id/pay", ({ store, path, params, baseUrl }) =>
    payInvoice(store, store.invoice(path.id ?? ""), {
      baseUrl,
      paymentMethod: str(params, "payment_method") ?? undefined,
      paidOutOfBand: bool(params, "paid_out_of_band") ?? false,
    }),
  );

  router.post("/v1/invoices/:id/send", sendInvoice);

  router.post("/v1/invoices/:id/void", ({ store, path }) => voidInvoice(store, store.invoice(path.id ?? "")));

  router.post("/v1/invoices/:id/mark_uncollectible", ({ store, path }) =>
    markUncollectible(store, store.invoice(path.id ?? "")),
  );
}
