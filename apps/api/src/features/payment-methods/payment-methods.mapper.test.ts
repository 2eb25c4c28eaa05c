import { describe, expect, it } from "vitest";
import { toCardBrand, toPaymentMethodResponse, toSetupIntentResponse } from "./payment-methods.mapper.ts";

describe("toCardBrand", () => {
  it.each([
    ["visa", "visa"],
    ["mastercard", "mastercard"],
    ["amex", "amex"],
    ["american_express", "amex"],
    ["diners", "diners"],
    ["diners_club", "diners"],
    ["Diners Club", "diners"],
    ["discover", "discover"],
    ["eftpos_au", "eftpos_au"],
    ["eftpos_australia", "eftpos_au"],
    ["jcb", "jcb"],
    ["unionpay", "unionpay"],
    ["union_pay", "unionpay"],
    ["cartes_bancaires", "unknown"],
    ["link", "unknown"],
    ["interac", "unknown"],
    ["", "unknown"],
    ["unknown", "unknown"],
  ])("%s -> %s", (brand, expected) => {
    expect(toCardBrand(brand)).toBe(expected);
  });
});

describe("payment method and setup intent responses", () => {
  const created = new Date("2026-11-21T15:04:05Z");

  it("has exactly the API doc's six fields", () => {
    const out = toPaymentMethodResponse(
      {
        id: "pm_1",
        customerId: "cus_1",
        type: "card",
        brand: "visa",
        last4: "4242",
        expMonth: 3,
        expYear: 2030,
        created,
      },
      "Europe/Berlin",
    );
    expect(out).toEqual({
      id: "pm_1",
      brand: "visa",
      last4: "4242",
      exp_month: 3,
      exp_year: 2030,
      created_at: "2026-11-21 16:04:05",
    });
  });

  it("carries the publishable key and client secret, created_at in UTC without a zone", () => {
    const out = toSetupIntentResponse(
      { id: "seti_1", clientSecret: "seti_1_secret_abc", status: "requires_payment_method", created },
      "pk_test_x",
      undefined,
    );
    expect(out).toEqual({
      id: "seti_1",
      publishable_key: "pk_test_x",
      client_secret: "seti_1_secret_abc",
      status: "requires_payment_method",
      created_at: "2026-11-21 15:04:05",
    });
  });
});
