// /v1/payment_methods: create (Stripe.js, publishable key), retrieve, update, attach, detach, list.
import type { Router } from "../http-router.ts";
import { paginate } from "../list-pagination.ts";
import {
  attachPaymentMethod,
  createCardPaymentMethod,
  detachPaymentMethod,
  resolvePaymentMethod,
} from "../payment-methods-service.ts";
import { address, applyMetadata, int, obj, reqStr, str } from "../request-params.ts";

export function registerPaymentMethodRoutes(router: Router): void {
  router.post("/v1/payment_methods", ({ store, params }) => createCardPaymentMethod(store, params), {
    publishable: true,
  });

  // Stripe's test ids (`pm_card_visa`...) can be retrieved too; each retrieval is a fresh card.
  router.get("/v1/payment_methods/:id", ({ store, path }) => resolvePaymentMethod(store, path.id ?? ""));

  router.post("/v1/payment_methods/:id", ({ store, path, params }) => {
    const pm = store.paymentMethod(path.id ?? "");
    pm.metadata = applyMetadata(params, pm.metadata);
    const billing = obj(params, "billing_details");
    if (billing) {
      for (const key of ["email", "name", "phone"] as const) {
        const v = str(billing, key, `billing_details[${key}]`);
        if (v !== undefined) pm.billing_details[key] = v;
      }
      const addr = address(billing, "address");
      if (addr) pm.billing_details.address = addr;
    }
    const card = obj(params, "card");
    if (card) {
      pm.card.exp_month = int(card, "exp_month", "card[exp_month]") ?? pm.card.exp_month;
      pm.card.exp_year = int(card, "exp_year", "card[exp_year]") ?? pm.card.exp_year;
    }
    return pm;
  });

  router.post("/v1/payment_methods/:id/attach", ({ store, path, params }) => {
    const customer = store.customer(reqStr(params, "customer"), "customer");
    return attachPaymentMethod(store, resolvePaymentMethod(store, path.id ?? ""), customer);
  });

  router.post("/v1/payment_methods/:id/detach", ({ store, path }) =>
    detachPaymentMethod(store, store.paymentMethod(path.id ?? "")),
  );

  router.get("/v1/payment_methods", ({ store, params }) => {
    const customer = str(params, "customer");
    if (customer) store.customer(customer, "customer");
    const type = str(params, "type");
    const pms = [...store.paymentMethods.values()].filter(
      (pm) => (!customer || pm.customer === customer) && (!type || pm.type === type),
    );
    return paginate(pms, params, "/v1/payment_methods", "PaymentMethod");
  });
}
