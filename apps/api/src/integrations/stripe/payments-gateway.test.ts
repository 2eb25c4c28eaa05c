import Stripe from "stripe";
import { describe, expect, it } from "vitest";
import { createPaymentsGateway } from "./payments-gateway.ts";
import { rejection } from "../../testing/rejections.ts";

/** A processor whose attach always fails with `error`: the one call these tests make. */
const failingAttach = (error: Error) =>
  createPaymentsGateway({
    paymentMethods: {
      attach: async () => {
        throw error;
      },
    },
  } as unknown as Stripe);

describe("attachPaymentMethod failures", () => {
  it("a card the processor will not attach (used up, or taken meanwhile) is a 409 telling the user what to do", async () => {
    const gateway = failingAttach(
      new Stripe.errors.StripeInvalidRequestError({
        type: "invalid_request_error",
        message:
          "This PaymentMethod was previously used without being attached to a Customer or was detached from a Customer, and may not be used again.",
        statusCode: 400,
      }),
    );
    const error = await rejection(gateway.attachPaymentMethod("pm_1", "cus_1"));
    expect(error.status).toBe(409);
    expect(error.message).toBe(
      "This payment method can no longer be saved to this account. Add the card again through a new setup intent (POST /v1/account/setup-intent).",
    );
  });

  it("a declined card is 402 with the processor's reason", async () => {
    const gateway = failingAttach(
      new Stripe.errors.StripeCardError({
        type: "card_error",
        message: "Your card was declined.",
        code: "card_declined",
        decline_code: "generic_decline",
        statusCode: 402,
      }),
    );
    const error = await rejection(gateway.attachPaymentMethod("pm_1", "cus_1"));
    expect(error.status).toBe(402);
    expect(error.message).toBe("Your card was declined.");
    expect(error.extra).toEqual({ decline_code: "generic_decline" });
  });

  it("a processor outage is 502", async () => {
    const gateway = failingAttach(
      new Stripe.errors.StripeAPIError({ type: "api_error", message: "boom", statusCode: 500 }),
    );
    expect((await rejection(gateway.attachPaymentMethod("pm_1", "cus_1"))).status).toBe(502);
  });
});
