// /v1/customers: create, retrieve, update, delete, list (email filter), list payment methods.
import { randomToken } from "../emulator-store.ts";
import type { EmulatorStore } from "../emulator-store.ts";
import type { Router } from "../http-router.ts";
import { paginate } from "../list-pagination.ts";
import { attachPaymentMethod, customerPaymentMethod, resolvePaymentMethod } from "../payment-methods-service.ts";
import { address, applyMetadata, has, int, obj, str } from "../request-params.ts";
import type { Params } from "../request-params.ts";
import type { Customer } from "../stripe-types.ts";

function applyCustomerParams(store: EmulatorStore, c: Customer, p: Params): void {
  for (const key of ["email", "name", "description", "phone"] as const) {
    const v = str(p, key);
    if (v !== undefined) c[key] = v;
  }
  const addr = address(p, "address");
  if (addr !== undefined) c.address = addr;
  const balance = int(p, "balance");
  if (balance !== undefined) c.balance = balance;
  c.metadata = applyMetadata(p, c.metadata);
  // `payment_method` attaches at create; a magic id used for both attach and default resolves to one PaymentMethod.
  const attachId = str(p, "payment_method");
  let attached: string | undefined;
  if (attachId) attached = attachPaymentMethod(store, resolvePaymentMethod(store, attachId, "payment_method"), c).id;
  const settings = obj(p, "invoice_settings");
  if (settings) {
    const label = "invoice_settings[default_payment_method]";
    const pm = str(settings, "default_payment_method", label);
    if (pm === null) c.invoice_settings.default_payment_method = null;
    else if (pm !== undefined) {
      c.invoice_settings.default_payment_method =
        pm === attachId && attached ? attached : customerPaymentMethod(store, c, pm, label);
    }
    const footer = str(settings, "footer", "invoice_settings[footer]");
    if (footer !== undefined) c.invoice_settings.footer = footer;
  }
}

export function registerCustomerRoutes(router: Router): void {
  router.post("/v1/customers", ({ store, params }) => {
    const c: Customer = {
      id: store.newId("cus"),
      object: "customer",
      address: null,
      balance: 0,
      created: store.nowSeconds(),
      currency: null,
      default_source: null,
      delinquent: false,
      description: null,
      discount: null,
      email: null,
      invoice_prefix: randomToken(8, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
      invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
      livemode: false,
      metadata: {},
      name: null,
      next_invoice_sequence: 1,
      phone: null,
      preferred_locales: [],
      shipping: null,
      tax_exempt: "none",
      test_clock: null,
    };
    applyCustomerParams(store, c, params);
    store.customers.set(c.id, c);
    return c;
  });

  router.get("/v1/customers/:id", ({ store, path }) => {
    const id = path.id ?? "";
    if (store.deletedCustomers.has(id)) return { id, object: "customer", deleted: true };
    return store.customer(id);
  });

  router.post("/v1/customers/:id", ({ store, path, params }) => {
    const c = store.customer(path.id ?? "");
    applyCustomerParams(store, c, params);
    return c;
  });

  router.delete("/v1/customers/:id", ({ store, path }) => {
    const c = store.customer(path.id ?? "");
    store.customers.delete(c.id);
    store.deletedCustomers.add(c.id);
    for (const pm of store.paymentMethods.values()) if (pm.customer === c.id) pm.customer = null;
    for (const sub of store.subscriptions.values()) {
      if (sub.customer === c.id && sub.status !== "canceled") {
        sub.status = "canceled";
        sub.canceled_at = sub.ended_at = store.nowSeconds();
      }
    }
    return { id: c.id, object: "customer", deleted: true };
  });

  router.get("/v1/customers", ({ store, params }) => {
    const email = str(params, "email");
    const all = [...store.customers.values()].filter((c) => !has(params, "email") || c.email === email);
    return paginate(all, params, "/v1/customers", "customer");
  });

  router.get("/v1/customers/:id/payment_methods", ({ store, path, params }) => {
    const c = store.customer(path.id ?? "");
    const type = str(params, "type");
    const pms = [...store.paymentMethods.values()].filter((pm) => pm.customer === c.id && (!type || pm.type === type));
    return paginate(pms, params, `/v1/customers/${c.id}/payment_methods`, "PaymentMethod");
  });
}
