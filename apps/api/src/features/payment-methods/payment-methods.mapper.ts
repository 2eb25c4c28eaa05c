import {
  CARD_BRANDS,
  formatDateTime,
  SETUP_INTENT_STATUSES,
  type TCardBrand,
  type TPaymentMethod,
  type TSetupIntent,
} from "@fleet/shared";
import type { CardSnapshot, SetupIntentSnapshot } from "../../integrations/stripe/payments-gateway.ts";

const KNOWN_BRANDS = new Set<string>(CARD_BRANDS);

// Display-style names some API versions and wallets report for the same networks.
const BRAND_ALIASES: Record<string, TCardBrand> = {
  american_express: "amex",
  diners_club: "diners",
  eftpos_australia: "eftpos_au",
  union_pay: "unionpay",
};

/** The processor's brand -> the API doc's enum; anything it does not list (cartes_bancaires, link, ...) is `unknown`. */
export const toCardBrand = (brand: string): TCardBrand => {
  const normalized = brand.toLowerCase().replace(/[\s-]+/g, "_");
  if (KNOWN_BRANDS.has(normalized)) return normalized as TCardBrand;
  return BRAND_ALIASES[normalized] ?? "unknown";
};

const SETUP_STATUSES = new Set<string>(SETUP_INTENT_STATUSES);

/** docs/api.md "Setup Intent". The only place a `client_secret` is ever put into an answer. */
export const toSetupIntentResponse = (
  intent: SetupIntentSnapshot,
  publishableKey: string,
  timezone: string | undefined,
): TSetupIntent => ({
  id: intent.id,
  publishable_key: publishableKey,
  client_secret: intent.clientSecret,
  status: (SETUP_STATUSES.has(intent.status) ? intent.status : "requires_payment_method") as TSetupIntent["status"],
  created_at: formatDateTime(intent.created, timezone),
});

/** docs/api.md "Payment Method": nothing beyond its six fields (no default flag, no fingerprint). */
export const toPaymentMethodResponse = (
  card: Pick<CardSnapshot, "id" | "brand" | "last4" | "expMonth" | "expYear" | "created"> & Partial<CardSnapshot>,
  timezone: string | undefined,
): TPaymentMethod => ({
  id: card.id,
  brand: toCardBrand(card.brand),
  last4: card.last4,
  exp_month: card.expMonth,
  exp_year: card.expYear,
  created_at: formatDateTime(card.created, timezone),
});
