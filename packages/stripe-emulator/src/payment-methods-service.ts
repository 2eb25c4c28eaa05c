// PaymentMethod creation (card numbers and magic ids), attach/detach, and the card verification/charge simulation.
import { createHash } from "node:crypto";
import { MAGIC_PAYMENT_METHODS, cardBehavior, cardInfo, displayBrand, luhnValid } from "./card-catalog.ts";
import type { EmulatorStore } from "./emulator-store.ts";
import { address, applyMetadata, int, obj, reqStr, str } from "./request-params.ts";
import type { Params } from "./request-params.ts";
import { cardError, invalidParam, invalidRequest, missingParam } from "./stripe-errors.ts";
import type { CardDecline } from "./stripe-errors.ts";
import type { Customer, PaymentMethod } from "./stripe-types.ts";

const EMPTY_ADDRESS = { city: null, country: null, line1: null, line2: null, postal_code: null, state: null };

/** Creates a card PaymentMethod from `type=card&card[number]=...` style params (`prefix` names nested params in errors). */
export function createCardPaymentMethod(store: EmulatorStore, p: Params, prefix = ""): PaymentMethod {
  const label = (k: string) => (prefix ? `${prefix}[${k}]` : k);
  const type = reqStr(p, "type", label("type"));
  if (type !== "card") throw invalidParam(label("type"), `Invalid type: the emulator only supports card`);
  const card = obj(p, "card");
  if (!card) throw missingParam(label("card"));
  const cardLabel = (k: string) => `${label("card")}[${k}]`;
  const number = reqStr(card, "number", cardLabel("number")).replace(/[\s-]/g, "");
  const expMonth = int(card, "exp_month", cardLabel("exp_month"));
  if (expMonth === undefined) throw missingParam(cardLabel("exp_month"));
  let expYear = int(card, "exp_year", cardLabel("exp_year"));
  if (expYear === undefined) throw missingParam(cardLabel("exp_year"));
  if (expYear < 100) expYear += 2000;
  const cvc = str(card, "cvc", cardLabel("cvc"));

  if (!luhnValid(number)) {
    throw cardError(
      { code: "incorrect_number", message: "Your card number is incorrect." },
      { param: cardLabel("number") },
    );
  }
  const today = new Date(store.nowSeconds() * 1000);
  const year = today.getUTCFullYear();
  if (expMonth < 1 || expMonth > 12) {
    throw cardError(
      { code: "invalid_expiry_month", message: "Your card's expiration month is invalid." },
      { param: cardLabel("exp_month") },
    );
  }
  if (expYear < year || expYear > year + 50) {
    throw cardError(
      { code: "invalid_expiry_year", message: "Your card's expiration year is invalid." },
      { param: cardLabel("exp_year") },
    );
  }
  if (expYear === year && expMonth < today.getUTCMonth() + 1) {
    throw cardError(
      { code: "invalid_expiry_month", message: "Your card's expiration month is invalid." },
      { param: cardLabel("exp_month") },
    );
  }
  return insertCard(store, number, expMonth, expYear, cvc ? "pass" : null, p);
}

function insertCard(
  store: EmulatorStore,
  number: string,
  expMonth: number,
  expYear: number,
  cvcCheck: "pass" | null,
  p: Params = {},
): PaymentMethod {
  const info = cardInfo(number);
  const billing = obj(p, "billing_details") ?? {};
  const pm: PaymentMethod = {
    id: store.newId("pm"),
    object: "payment_method",
    allow_redisplay: "unspecified",
    billing_details: {
      address: address(billing, "address") ?? EMPTY_ADDRESS,
      email: str(billing, "email") ?? null,
      name: str(billing, "name") ?? null,
      phone: str(billing, "phone") ?? null,
      tax_id: null,
    },
    card: {
      brand: info.brand,
      checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: cvcCheck },
      country: info.country,
      display_brand: displayBrand(info.brand),
      exp_month: expMonth,
      exp_year: expYear,
      fingerprint: createHash("sha256").update(number).digest("base64url").slice(0, 16),
      funding: info.funding,
      generated_from: null,
      last4: number.slice(-4),
      networks: { available: [info.brand], preferred: null },
      regulated_status: "unregulated",
      three_d_secure_usage: { supported: true },
      wallet: null,
    },
    created: store.nowSeconds(),
    customer: null,
    livemode: false,
    metadata: applyMetadata(p),
    type: "card",
  };
  store.paymentMethods.set(pm.id, pm);
  store.cardBehaviors.set(pm.id, cardBehavior(number));
  return pm;
}

/** Resolves a PaymentMethod id; Stripe's magic test ids (`pm_card_visa`...) mint a fresh PaymentMethod each time. */
export function resolvePaymentMethod(store: EmulatorStore, id: string, param?: string): PaymentMethod {
  const magic = MAGIC_PAYMENT_METHODS[id];
  if (magic) {
    const year = new Date(store.nowSeconds() * 1000).getUTCFullYear() + 1;
    return insertCard(store, magic, 12, year, "pass");
  }
  return store.paymentMethod(id, param);
}

/** The check Stripe runs when a card is saved (SetupIntent confirm, attach). */
export function verifyCard(store: EmulatorStore, pm: PaymentMethod): CardDecline | null {
  const behavior = store.cardBehaviors.get(pm.id);
  return behavior?.declineOnSetup ? behavior.decline : null;
}

/** Simulates a charge; returns the decline, or null when the charge succeeds. */
export function chargeCard(store: EmulatorStore, pm: PaymentMethod): CardDecline | null {
  return store.cardBehaviors.get(pm.id)?.decline ?? null;
}

export function attachPaymentMethod(store: EmulatorStore, pm: PaymentMethod, customer: Customer): PaymentMethod {
  if (pm.customer === customer.id) return pm;
  if (pm.customer) {
    throw invalidRequest("The payment method you provided has already been attached to a customer.", {
      code: "payment_method_unexpected_state",
    });
  }
  const decline = verifyCard(store, pm);
  if (decline) throw cardError(decline, { payment_method: pm });
  pm.customer = customer.id;
  return pm;
}

export function detachPaymentMethod(store: EmulatorStore, pm: PaymentMethod): PaymentMethod {
  if (!pm.customer) {
    throw invalidRequest("The payment method you provided is not attached to a customer so detachment is impossible.", {
      code: "payment_method_unexpected_state",
    });
  }
  const customer = store.customers.get(pm.customer);
  if (customer?.invoice_settings.default_payment_method === pm.id) {
    customer.invoice_settings.default_payment_method = null;
  }
  for (const sub of store.subscriptions.values()) {
    if (sub.default_payment_method === pm.id) sub.default_payment_method = null;
  }
  pm.customer = null;
  return pm;
}

/**
 * Resolves a PaymentMethod that must belong to `customer` (default payment methods):
 * magic ids are minted and attached, real ids must already be attached.
 */
export function customerPaymentMethod(store: EmulatorStore, customer: Customer, id: string, param: string): string {
  if (MAGIC_PAYMENT_METHODS[id]) return attachPaymentMethod(store, resolvePaymentMethod(store, id, param), customer).id;
  const pm = store.paymentMethods.get(id);
  if (!pm || pm.customer !== customer.id) {
    throw invalidRequest(
      `The customer does not have a payment method with the ID ${id}. The payment method must be attached to the customer.`,
      { code: "resource_missing", param },
    );
  }
  return pm.id;
}
