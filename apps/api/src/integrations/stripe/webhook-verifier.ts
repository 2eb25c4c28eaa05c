import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { AppError, type Clock, systemClock } from "@fleet/shared";
import Stripe from "stripe";

/**
 * Stripe's default: a signature older than five minutes is refused (replays); so is one more than
 * five minutes in the future (a clock-skewed or forged timestamp the SDK alone would accept).
 */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** The `t=` of a `Stripe-Signature` header, or undefined when it has none or it is not a number. */
const signedAt = (header: string): number | undefined => {
  for (const part of header.split(",")) {
    const [key, value] = part.split("=", 2);
    if (key?.trim() === "t" && value !== undefined && /^\d{1,12}$/.test(value.trim())) return Number(value.trim());
  }
  return undefined;
};

/** Checks a delivery's `Stripe-Signature` over the exact bytes received and returns the event. */
export type WebhookVerifier = (rawBody: Buffer, signature: string | undefined) => Stripe.Event;

/**
 * The `stripe` SDK's own check (`webhooks.constructEvent`): HMAC-SHA256 of "<t>.<body>" with the
 * endpoint secret, and `t` within the tolerance of the clock's time. Any failure is a 400 that says which.
 */
export const createWebhookVerifier = (secret: string | undefined, clock: Clock = systemClock): WebhookVerifier => {
  // No API call is made: any key builds the SDK's webhook helpers.
  const webhooks = new Stripe("sk_test_webhook_verifier").webhooks;
  return (rawBody, signature) => {
    if (!secret) {
      throw new AppError("bad_request", "Webhooks are not configured: set STRIPE_WEBHOOK_SECRET.");
    }
    if (!signature) throw new AppError("bad_request", "The Stripe-Signature header is missing.");
    let event: Stripe.Event;
    try {
      event = webhooks.constructEvent(
        rawBody,
        signature,
        secret,
        SIGNATURE_TOLERANCE_SECONDS,
        undefined,
        // The SDK takes the receipt time in milliseconds.
        clock.nowMs(),
      );
    } catch (error) {
      const old = error instanceof Error && /tolerance/i.test(error.message);
      throw new AppError(
        "bad_request",
        old
          ? "The Stripe-Signature timestamp is more than 5 minutes old."
          : "The Stripe-Signature header does not match the body.",
      );
    }
    // The SDK refuses only old timestamps; a signature dated ahead of now would stay replayable.
    const t = signedAt(signature);
    if (t !== undefined && t - clock.nowMs() / 1000 > SIGNATURE_TOLERANCE_SECONDS) {
      throw new AppError("bad_request", "The Stripe-Signature timestamp is more than 5 minutes in the future.");
    }
    return event;
  };
};

/**
 * The emulator's endpoint secret when STRIPE_WEBHOOK_SECRET is unset: generated once and kept in
 * DATA_DIR, so the emulator and every API process of one machine agree (`memory`: this process only).
 */
export const resolveEmulatorWebhookSecret = (dataDir: string): string => {
  const fresh = () => `whsec_${randomBytes(24).toString("base64url")}`;
  if (dataDir === "memory") return fresh();
  const file = path.resolve(dataDir, "stripe-webhook-secret");
  try {
    const existing = readFileSync(file, "utf8").trim();
    if (existing.startsWith("whsec_")) return existing;
  } catch {
    // First start: create it.
  }
  mkdirSync(path.dirname(file), { recursive: true });
  const secret = fresh();
  try {
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: "wx" });
    return secret;
  } catch {
    return readFileSync(file, "utf8").trim();
  }
};
