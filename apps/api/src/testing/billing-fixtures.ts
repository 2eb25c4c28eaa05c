import { eventually } from "@fleet/shared/testing";
import pino, { type Logger } from "pino";
import Stripe from "stripe";
import { loadApiConfig } from "../config.ts";
import { type RunningApi, startApi } from "../start-api.ts";
import type { ApiHarness } from "./api-harness.ts";

/** Secret key the API uses against its built-in emulator (start-api.ts). */
export const EMULATOR_SECRET_KEY = "sk_test_fleet_emulator";

/** A `stripe` SDK pointed at the harness's emulator: secret key = server side, publishable = Stripe.js. */
export const emulatorSdk = (h: ApiHarness, key: string): Stripe => {
  const url = new URL(h.api.stripeEmulatorUrl ?? "");
  return new Stripe(key, { host: url.hostname, port: url.port, protocol: "http", maxNetworkRetries: 0 });
};

export const CARD_EXP_YEAR = new Date().getUTCFullYear() + 3;
export const testCard = (number: string) => ({ number, exp_month: 12, exp_year: CARD_EXP_YEAR, cvc: "123" });

/**
 * Waits until the harness's emulator has delivered every webhook event it holds: changes made
 * directly at the processor reach the billing mirror through them (docs/billing.md "Webhooks").
 */
export const settleWebhooks = async (h: ApiHarness): Promise<void> => {
  const emulator = h.stripeEmulator;
  if (!emulator) return;
  await eventually(async () => {
    await emulator.webhooksIdle();
    return emulator.store.outbox.length === 0;
  }, "the emulator to deliver its webhook events");
};

/** A user with a billing account made through the API; returns the token and the processor customer id. */
export const loginWithAccount = async (
  h: ApiHarness,
  options: { timezone?: string; country?: string } = {},
): Promise<{ token: string; organizationId: string; teamId: string; customerId: string }> => {
  const login = await h.login(undefined, options.timezone ? { timezone: options.timezone } : {});
  const created = await h.request("POST", "/v1/account", {
    token: login.token,
    body: {
      name: "Card Co",
      email: `${crypto.randomUUID()}@example.com`,
      address: { country: options.country ?? "US" },
    },
  });
  if (created.status !== 201)
    throw new Error(`account creation failed: ${created.status} ${JSON.stringify(created.body)}`);
  const rows = await h.db.query<{ stripe_customer_id: string }>(
    "select stripe_customer_id from billing_accounts where organization_id = $1",
    [login.organizationId],
  );
  return { ...login, customerId: rows[0]?.stripe_customer_id ?? "" };
};

/** `YYYY-MM-DD HH:MM:SS` of a unix time in a zone, computed independently of the service. */
export const unixInZone = (unix: number, timeZone: string): string => {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-CA", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    })
      .formatToParts(new Date(unix * 1000))
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
};

/**
 * A second API over the harness's own database whose processor is unreachable (nothing listens on
 * port 9): same JWT secret, so the harness's tokens work on it.
 */
export const startUnreachableProcessorApi = async (
  h: ApiHarness,
  logger: Logger = pino({ level: "silent" }),
): Promise<RunningApi> => {
  const config = loadApiConfig({
    PORT: "0",
    DATA_DIR: "memory",
    LOG_LEVEL: "silent",
    JWT_SECRET: h.config.auth.jwtSecret ?? "",
    STRIPE_API_BASE: "http://127.0.0.1:9",
    STRIPE_SECRET_KEY: "sk_test_unreachable_processor",
    STRIPE_PUBLISHABLE_KEY: "pk_test_unreachable_processor",
  });
  return startApi({ config, db: h.db, logger });
};
