import type { Outputs } from "./trpc.ts";

/**
 * The card processor's client-side flow (docs/console.md "Billing"), the only code in the console
 * that talks HTTP itself: card data goes to the processor, never to this system. With real keys it
 * is Stripe.js; with the built-in emulator, the same two calls Stripe.js makes (create the card,
 * confirm the setup intent), sent to the emulator through the API's origin.
 */
type SetupIntent = Outputs["paymentMethods"]["createSetupIntent"];

export interface CardDetails {
  number: string;
  exp_month: string;
  exp_year: string;
  cvc: string;
}

/** A refusal by the processor, with the card field it is about when it names one. */
export class ProcessorError extends Error {
  readonly field: keyof CardDetails | undefined;
  constructor(message: string, field: keyof CardDetails | undefined) {
    super(message);
    this.field = field;
  }
}

interface StripeErrorBody {
  error?: { message?: string; param?: string; code?: string; type?: string };
}

const FIELD_OF_PARAM: Record<string, keyof CardDetails> = {
  "card[number]": "number",
  "card[exp_month]": "exp_month",
  "card[exp_year]": "exp_year",
  "card[cvc]": "cvc",
};
const FIELD_OF_CODE: Record<string, keyof CardDetails> = {
  incorrect_number: "number",
  invalid_number: "number",
  card_declined: "number",
  expired_card: "exp_year",
  invalid_expiry_month: "exp_month",
  invalid_expiry_year: "exp_year",
  invalid_cvc: "cvc",
  incorrect_cvc: "cvc",
};

const post = async (url: string, key: string, form: Record<string, string>): Promise<Record<string, unknown>> => {
  const answer = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form),
  });
  const body = (await answer.json().catch(() => ({}))) as StripeErrorBody & Record<string, unknown>;
  if (!answer.ok) {
    const error = body.error ?? {};
    const field =
      (error.param && FIELD_OF_PARAM[error.param]) || (error.code && FIELD_OF_CODE[error.code]) || undefined;
    throw new ProcessorError(error.message ?? `The card processor answered ${answer.status}.`, field);
  }
  return body;
};

/** Emulator: create the card with the publishable key, then confirm the intent with it. Returns `pm_...`. */
export const confirmCardWithEmulator = async (
  base: string,
  intent: SetupIntent,
  card: CardDetails,
): Promise<string> => {
  const paymentMethod = await post(`${base}/v1/payment_methods`, intent.publishable_key, {
    type: "card",
    "card[number]": card.number.replace(/\s+/g, ""),
    "card[exp_month]": card.exp_month.trim(),
    "card[exp_year]": card.exp_year.trim(),
    "card[cvc]": card.cvc.trim(),
  });
  const id = String(paymentMethod.id ?? "");
  const confirmed = await post(
    `${base}/v1/setup_intents/${encodeURIComponent(intent.id)}/confirm`,
    intent.publishable_key,
    { payment_method: id, client_secret: intent.client_secret },
  );
  if (confirmed.status !== "succeeded") throw new ProcessorError("The card was declined.", "number");
  return id;
};

// ---- Stripe.js (real keys) ---------------------------------------------------------------------

/** The part of Stripe.js the console uses. */
export interface StripeCardElement {
  mount(element: HTMLElement): void;
  destroy(): void;
}
interface StripeJs {
  elements(): { create(type: "card", options?: Record<string, unknown>): StripeCardElement };
  confirmCardSetup(
    clientSecret: string,
    data: { payment_method: { card: StripeCardElement } },
  ): Promise<{ setupIntent?: { payment_method?: string | { id: string } | null }; error?: { message?: string } }>;
}
declare global {
  interface Window {
    Stripe?: (publishableKey: string) => StripeJs;
  }
}

let loading: Promise<void> | undefined;
/** Stripe.js must come from Stripe's own origin (the one foreign origin the page's policy allows then). */
const loadStripeJs = (): Promise<void> => {
  loading ??= new Promise<void>((resolve, reject) => {
    const script = document.createElement("script");
    script.src = "https://js.stripe.com/v3/";
    script.onload = () => resolve();
    script.onerror = () => reject(new Error("Stripe.js could not be loaded."));
    document.head.append(script);
  });
  return loading;
};

export const stripeJs = async (publishableKey: string): Promise<StripeJs> => {
  await loadStripeJs();
  if (!window.Stripe) throw new Error("Stripe.js did not start.");
  return window.Stripe(publishableKey);
};

export const confirmCardWithStripe = async (
  stripe: StripeJs,
  card: StripeCardElement,
  intent: SetupIntent,
): Promise<string> => {
  const result = await stripe.confirmCardSetup(intent.client_secret, { payment_method: { card } });
  if (result.error) throw new ProcessorError(result.error.message ?? "The card was declined.", undefined);
  const pm = result.setupIntent?.payment_method;
  const id = typeof pm === "string" ? pm : pm?.id;
  if (!id) throw new ProcessorError("The card was not confirmed.", undefined);
  return id;
};
