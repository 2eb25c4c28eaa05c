// Shared vitest setup: one emulator per test file, driven through the official stripe SDK.
import Stripe from "stripe";
import { startStripeEmulator } from "../emulator-server.ts";
import type { StripeEmulator, StripeEmulatorOptions } from "../emulator-server.ts";

export interface TestContext {
  emulator: StripeEmulator;
  /** Server-side client (secret key). */
  stripe: Stripe;
  /** Client-side client (publishable key), standing in for Stripe.js. */
  publishable: Stripe;
}

export function sdk(emulator: StripeEmulator, key: string): Stripe {
  return new Stripe(key, { host: "127.0.0.1", port: emulator.port, protocol: "http", maxNetworkRetries: 0 });
}

export async function startTestEmulator(opts: StripeEmulatorOptions = {}): Promise<TestContext> {
  const emulator = await startStripeEmulator(opts);
  return { emulator, stripe: sdk(emulator, "sk_test_emulator"), publishable: sdk(emulator, "pk_test_emulator") };
}

/** Awaits a rejected SDK call and returns the StripeError for assertions. */
export async function stripeError(promise: Promise<unknown>): Promise<InstanceType<typeof Stripe.errors.StripeError>> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof Stripe.errors.StripeError) return err;
    throw err;
  }
  throw new Error("expected the Stripe call to fail");
}

/** A future card expiry year. */
export const EXP_YEAR = new Date().getUTCFullYear() + 3;
