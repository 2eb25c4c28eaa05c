import { AppError } from "@fleet/shared";
import Stripe from "stripe";

/**
 * Processor failures become clear answers: a declined card is the user's problem (402), anything
 * else is ours or the processor's (502). The processor's own message is kept only for card errors,
 * which are written for end users.
 */
export const toAppError = (error: unknown): AppError => {
  if (error instanceof AppError) return error;
  if (error instanceof Stripe.errors.StripeCardError) {
    return new AppError("payment_required", error.message || "The card was declined.", {
      extra: { decline_code: error.decline_code ?? error.code ?? "card_declined" },
      cause: error,
    });
  }
  if (error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 404) {
    return new AppError("not_found", "The payment processor does not know this object.", { cause: error });
  }
  return new AppError(
    "upstream_failed",
    "The payment processor could not be reached or refused the request; nothing was changed. Try again shortly.",
    { cause: error },
  );
};

/** Runs a processor call and translates its failure. */
export const callStripe = async <T>(operation: () => Promise<T>): Promise<T> => {
  try {
    return await operation();
  } catch (error) {
    throw toAppError(error);
  }
};
