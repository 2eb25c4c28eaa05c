// /v1/setup_intents: create, retrieve (client_secret for publishable keys), update, confirm, cancel, list.
import { randomToken } from "../emulator-store.ts";
import type { EmulatorStore } from "../emulator-store.ts";
import type { RouteContext, Router } from "../http-router.ts";
import { paginate } from "../list-pagination.ts";
import { createCardPaymentMethod, resolvePaymentMethod, verifyCard } from "../payment-methods-service.ts";
import { applyMetadata, bool, list, obj, oneOf, str } from "../request-params.ts";
import { cardError, invalidRequest, missingParam } from "../stripe-errors.ts";
import type { SetupIntent } from "../stripe-types.ts";

/** Publishable keys must present the intent's client_secret; secret keys may omit it. */
function loadIntent({ store, path, params, keyKind }: RouteContext): SetupIntent {
  const si = store.setupIntent(path.id ?? "");
  const secret = str(params, "client_secret");
  if (keyKind === "publishable" && !secret) throw missingParam("client_secret");
  if (secret && secret !== si.client_secret) {
    throw invalidRequest(
      "The client_secret provided does not match the client_secret associated with the SetupIntent.",
      { param: "client_secret" },
    );
  }
  return si;
}

function unexpectedState(si: SetupIntent, action: string) {
  return invalidRequest(`You cannot ${action} this SetupIntent because it has a status of ${si.status}.`, {
    code: "setup_intent_unexpected_state",
    setup_intent: si,
  });
}

function confirm(store: EmulatorStore, si: SetupIntent, ctx: RouteContext): SetupIntent {
  if (si.status !== "requires_payment_method" && si.status !== "requires_confirmation") {
    throw unexpectedState(si, "confirm");
  }
  const { params } = ctx;
  const pmData = obj(params, "payment_method_data");
  const pmId = str(params, "payment_method");
  const pm = pmData
    ? createCardPaymentMethod(store, pmData, "payment_method_data")
    : pmId
      ? resolvePaymentMethod(store, pmId, "payment_method")
      : si.payment_method
        ? store.paymentMethod(si.payment_method, "payment_method")
        : undefined;
  if (!pm) {
    throw invalidRequest(
      "You cannot confirm this SetupIntent because it's missing a payment method. Update the SetupIntent with a payment method and then confirm it again.",
      { code: "setup_intent_unexpected_state", setup_intent: si },
    );
  }
  if (pm.customer && si.customer && pm.customer !== si.customer) {
    throw invalidRequest("The provided PaymentMethod is attached to another customer.", { param: "payment_method" });
  }
  const decline = verifyCard(store, pm);
  if (decline) {
    si.status = "requires_payment_method";
    si.payment_method = null;
    si.last_setup_error = {
      ...decline,
      doc_url: `https://stripe.com/docs/error-codes/${decline.code}`,
      payment_method: pm,
      type: "card_error",
    };
    throw cardError(decline, { payment_method: pm, setup_intent: si });
  }
  if (si.customer) pm.customer = si.customer;
  si.payment_method = pm.id;
  si.last_setup_error = null;
  si.status = "succeeded";
  return si;
}

export function registerSetupIntentRoutes(router: Router): void {
  router.post("/v1/setup_intents", (ctx) => {
    const { store, params } = ctx;
    const customer = str(params, "customer");
    if (customer) store.customer(customer, "customer");
    const id = store.newId("seti");
    // `payment_method_types` (older API versions) or `allowed_payment_method_types` (current).
    const types = (
      list(params, "payment_method_types") ??
      list(params, "allowed_payment_method_types") ?? ["card"]
    ).map(String);
    const si: SetupIntent = {
      id,
      object: "setup_intent",
      allowed_payment_method_types: types,
      application: null,
      automatic_payment_methods: null,
      cancellation_reason: null,
      client_secret: `${id}_secret_${randomToken(32)}`,
      created: store.nowSeconds(),
      customer: customer ?? null,
      description: str(params, "description") ?? null,
      excluded_payment_method_types: null,
      last_setup_error: null,
      latest_attempt: null,
      livemode: false,
      mandate: null,
      metadata: applyMetadata(params),
      next_action: null,
      on_behalf_of: null,
      payment_method: null,
      payment_method_options: { card: { mandate_options: null, network: null, request_three_d_secure: "automatic" } },
      payment_method_types: types,
      single_use_mandate: null,
      status: "requires_payment_method",
      usage: oneOf(params, "usage", ["off_session", "on_session"] as const) ?? "off_session",
    };
    const pm = str(params, "payment_method");
    if (pm) {
      si.payment_method = resolvePaymentMethod(store, pm, "payment_method").id;
      si.status = "requires_confirmation";
    }
    store.setupIntents.set(id, si);
    return bool(params, "confirm") ? confirm(store, si, ctx) : si;
  });

  router.get("/v1/setup_intents/:id", (ctx) => loadIntent(ctx), { publishable: true });

  router.post("/v1/setup_intents/:id", ({ store, path, params }) => {
    const si = store.setupIntent(path.id ?? "");
    if (si.status === "succeeded" || si.status === "canceled") throw unexpectedState(si, "update");
    const customer = str(params, "customer");
    if (customer) si.customer = store.customer(customer, "customer").id;
    const description = str(params, "description");
    if (description !== undefined) si.description = description;
    const pm = str(params, "payment_method");
    if (pm) {
      si.payment_method = resolvePaymentMethod(store, pm, "payment_method").id;
      si.status = "requires_confirmation";
    }
    si.metadata = applyMetadata(params, si.metadata);
    return si;
  });

  router.post("/v1/setup_intents/:id/confirm", (ctx) => confirm(ctx.store, loadIntent(ctx), ctx), {
    publishable: true,
  });

  router.post("/v1/setup_intents/:id/cancel", ({ store, path, params }) => {
    const si = store.setupIntent(path.id ?? "");
    if (si.status === "succeeded" || si.status === "canceled") throw unexpectedState(si, "cancel");
    si.status = "canceled";
    si.cancellation_reason =
      oneOf(params, "cancellation_reason", ["abandoned", "requested_by_customer", "duplicate"] as const) ?? null;
    return si;
  });

  router.get("/v1/setup_intents", ({ store, params }) => {
    const customer = str(params, "customer");
    const all = [...store.setupIntents.values()].filter((si) => !customer || si.customer === customer);
    return paginate(all, params, "/v1/setup_intents", "setupintent");
  });
}
