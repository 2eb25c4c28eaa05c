// Stripe test cards: brand/funding detection, Luhn, decline behaviours and magic `pm_card_*` ids.
import type { CardBehavior } from "./emulator-store.ts";
import type { CardDecline } from "./stripe-errors.ts";

export interface CardInfo {
  brand: string;
  funding: "credit" | "debit" | "prepaid" | "unknown";
  country: string;
}

const GENERIC_DECLINE: CardDecline = {
  code: "card_declined",
  decline_code: "generic_decline",
  message: "Your card was declined.",
};

const DECLINES: Record<string, CardBehavior> = {
  "4000000000000002": { decline: GENERIC_DECLINE, declineOnSetup: true },
  "4000000000009995": {
    decline: {
      code: "card_declined",
      decline_code: "insufficient_funds",
      message: "Your card has insufficient funds.",
    },
    declineOnSetup: true,
  },
  "4000000000000069": {
    decline: { code: "expired_card", decline_code: "expired_card", message: "Your card has expired." },
    declineOnSetup: true,
  },
  "4000000000000127": {
    decline: {
      code: "incorrect_cvc",
      decline_code: "incorrect_cvc",
      message: "Your card's security code is incorrect.",
    },
    declineOnSetup: true,
  },
  "4000000000000119": {
    decline: {
      code: "processing_error",
      decline_code: "processing_error",
      message: "An error occurred while processing your card. Try again in a little bit.",
    },
    declineOnSetup: true,
  },
  // Attaches fine, fails when charged.
  "4000000000000341": { decline: GENERIC_DECLINE, declineOnSetup: false },
};

const FUNDING: Record<string, CardInfo["funding"]> = {
  "4000056655665556": "debit",
  "5200828282828210": "debit",
  "5105105105105100": "prepaid",
  "6011981111111113": "debit",
  "6200000000000047": "debit",
};

/** Stripe's magic test PaymentMethod ids; each use creates a fresh PaymentMethod. */
export const MAGIC_PAYMENT_METHODS: Record<string, string> = {
  pm_card_visa: "4242424242424242",
  pm_card_visa_debit: "4000056655665556",
  pm_card_mastercard: "5555555555554444",
  pm_card_mastercard_debit: "5200828282828210",
  pm_card_mastercard_prepaid: "5105105105105100",
  pm_card_amex: "378282246310005",
  pm_card_discover: "6011111111111117",
  pm_card_diners: "3056930009020004",
  pm_card_jcb: "3566002020360505",
  pm_card_unionpay: "6200000000000005",
  pm_card_chargeDeclined: "4000000000000002",
  pm_card_chargeDeclinedInsufficientFunds: "4000000000009995",
  pm_card_chargeDeclinedExpiredCard: "4000000000000069",
  pm_card_chargeDeclinedIncorrectCvc: "4000000000000127",
  pm_card_chargeDeclinedProcessingError: "4000000000000119",
  pm_card_chargeCustomerFail: "4000000000000341",
};

export function luhnValid(number: string): boolean {
  if (!/^\d{12,19}$/.test(number)) return false;
  let sum = 0;
  for (let i = 0; i < number.length; i++) {
    let d = Number(number[number.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

export function brandOf(number: string): string {
  const p2 = Number(number.slice(0, 2));
  const p3 = Number(number.slice(0, 3));
  const p4 = Number(number.slice(0, 4));
  if (number.startsWith("4")) return "visa";
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return "mastercard";
  if (p2 === 34 || p2 === 37) return "amex";
  if (p4 === 6011 || (p3 >= 644 && p3 <= 649) || p2 === 65) return "discover";
  if ((p3 >= 300 && p3 <= 305) || p2 === 36 || p2 === 38 || p2 === 39) return "diners";
  if (p4 >= 3528 && p4 <= 3589) return "jcb";
  if (p2 === 62 || p2 === 81) return "unionpay";
  return "unknown";
}

const DISPLAY_BRANDS: Record<string, string> = {
  amex: "american_express",
  diners: "diners_club",
  unionpay: "union_pay",
  unknown: "other",
};

export function displayBrand(brand: string): string {
  return DISPLAY_BRANDS[brand] ?? brand;
}

export function cardInfo(number: string): CardInfo {
  const brand = brandOf(number);
  return { brand, funding: FUNDING[number] ?? (brand === "unknown" ? "unknown" : "credit"), country: "US" };
}

export function cardBehavior(number: string): CardBehavior {
  return DECLINES[number] ?? { decline: null, declineOnSetup: false };
}
