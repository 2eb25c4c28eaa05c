import { Writable } from "node:stream";
import { REDACT_PATHS } from "@fleet/shared";
import pino from "pino";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import {
  EMULATOR_SECRET_KEY,
  emulatorSdk,
  loginWithAccount,
  startUnreachableProcessorApi,
  testCard,
} from "../../testing/billing-fixtures.ts";

/** Every log line of the API, as written. */
const lines: string[] = [];
const memory = new Writable({
  write(chunk, _encoding, done) {
    lines.push(...String(chunk).split("\n").filter(Boolean));
    done();
  },
});
// The production logger's options (main.ts), at the most verbose level.
const logger = pino({ level: "trace", redact: REDACT_PATHS }, memory);

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness({}, { logger });
});
afterAll(async () => {
  await h?.close();
});

describe("secrets never reach the logs", () => {
  it("a full payment flow, a decline, a processor outage and errors log no client secret and no key", async () => {
    const browser = emulatorSdk(h, h.api.publishableKey);
    const secrets: string[] = [];
    const { token } = await loginWithAccount(h);

    const addCard = async (number: string) => {
      const intent = await h.request("POST", "/v1/account/setup-intent", { token });
      expect(intent.status).toBe(201);
      secrets.push(intent.body.client_secret);
      const pm = await browser.paymentMethods.create({ type: "card", card: testCard(number) });
      await browser.setupIntents
        .confirm(intent.body.id, {
          payment_method: pm.id,
          client_secret: intent.body.client_secret,
        } as Stripe.SetupIntentConfirmParams)
        .catch((error: unknown) => {
          if (!(error instanceof Stripe.errors.StripeCardError)) throw error;
        });
      return pm.id;
    };

    const first = await addCard("4242424242424242");
    expect((await h.request("POST", "/v1/account/payment-methods", { token, body: { id: first } })).status).toBe(201);
    const second = await addCard("5555555555554444");
    expect((await h.request("POST", "/v1/account/tax", { token, body: { id: second } })).status).toBe(201);
    expect((await h.request("GET", "/v1/account/payment-methods", { token })).status).toBe(200);
    expect((await h.request("DELETE", `/v1/account/payment-methods/${second}`, { token })).status).toBe(409);
    expect((await h.request("DELETE", `/v1/account/payment-methods/${first}`, { token })).status).toBe(204);
    const declined = await addCard("4000000000000002");
    expect((await h.request("POST", "/v1/account/tax", { token, body: { id: declined } })).status).toBe(402);
    expect((await h.request("POST", "/v1/account/tax", { token, body: { id: "" } })).status).toBe(422);
    expect((await h.request("GET", "/v1/account/invoices", { token })).status).toBe(200);

    // The same flow over tRPC.
    const client = createClient({ url: h.api.url, token });
    const intent = await client.paymentMethods.createSetupIntent.mutate();
    secrets.push(intent.client_secret);
    expect((await client.paymentMethods.list.query()).length).toBe(1);

    // A processor outage is logged as a server error, with its cause.
    const broken = await startUnreachableProcessorApi(h, logger);
    try {
      const res = await fetch(`${broken.url}/v1/account/setup-intent`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(502);
    } finally {
      await broken.close();
    }

    const log = lines.join("\n");
    // The capture works: requests and the outage are there.
    expect(lines.filter((l) => JSON.parse(l).msg === "request").length).toBeGreaterThanOrEqual(12);
    expect(log).toContain('"path":"/v1/account/setup-intent"');
    expect(lines.some((l) => JSON.parse(l).msg === "procedure failed")).toBe(true);

    expect(secrets).toHaveLength(4);
    for (const secret of secrets) expect(log).not.toContain(secret);
    expect(log).not.toMatch(/seti_\w+_secret_/);
    expect(log).not.toContain('client_secret":"seti');
    expect(log).not.toContain(EMULATOR_SECRET_KEY);
    expect(log).not.toContain("sk_test_unreachable_processor");
    expect(log).not.toMatch(/sk_(test|live)_/);
    expect(log).not.toContain(token);
  });
});
