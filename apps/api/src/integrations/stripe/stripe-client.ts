import Stripe from "stripe";
import { countStripeCall } from "../../metrics/api-metrics.ts";

export interface StripeConnection {
  secretKey: string;
  publishableKey: string;
  /** Where the SDK sends requests: the emulator, a Stripe-compatible server, or real Stripe. */
  apiBase: URL | undefined;
}

/** The one configured SDK instance: network retries on, bounded timeouts, no telemetry. */
export const createStripeClient = (connection: StripeConnection): Stripe => {
  const base = connection.apiBase;
  const client = new Stripe(connection.secretKey, {
    maxNetworkRetries: 2,
    timeout: 10_000,
    telemetry: false,
    ...(base
      ? {
          host: base.hostname,
          port: base.port || (base.protocol === "https:" ? 443 : 80),
          protocol: base.protocol === "https:" ? "https" : "http",
        }
      : {}),
  });
  // docs/operations.md "Metrics and probes": every answered call, whichever code made it.
  client.on("response", (event: Stripe.ResponseEvent) => countStripeCall(event.status < 400 ? "ok" : "error"));
  return client;
};
