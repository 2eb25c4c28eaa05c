import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import Stripe from "stripe";
import { afterEach, describe, expect, it } from "vitest";
import { startApiHarness } from "../../testing/api-harness.ts";
import { EMULATOR_SECRET_KEY, loginWithAccount, testCard } from "../../testing/billing-fixtures.ts";
import { type RunningApi, startApi } from "../../start-api.ts";

// What the billing mirror does is tested on the services (billing-mirror.service.test.ts); this
// file keeps what needs a restarted API process: the emulator's state kept in DATA_DIR.

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const _harness = async (env: Record<string, string> = {}) => {
  const h = await startApiHarness(env);
  cleanups.push(() => h.close());
  return h;
};

const call = async (api: RunningApi, token: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

/** A card saved the way a browser does it: setup intent, Stripe.js card + confirm, then the API. */
const saveCard = async (api: RunningApi, token: string, number = "4242424242424242") => {
  const intent = await call(api, token, "POST", "/v1/account/setup-intent");
  const url = new URL(api.stripeEmulatorUrl ?? "");
  const browser = new Stripe(intent.body.publishable_key, {
    host: url.hostname,
    port: url.port,
    protocol: "http",
    maxNetworkRetries: 0,
  });
  const pm = await browser.paymentMethods.create({ type: "card", card: testCard(number) });
  await browser.setupIntents.confirm(intent.body.id, {
    payment_method: pm.id,
    client_secret: intent.body.client_secret,
  } as Stripe.SetupIntentConfirmParams);
  const saved = await call(api, token, "POST", "/v1/account/payment-methods", { id: pm.id });
  expect(saved.status).toBe(201);
  return pm.id;
};

describe("restart with the same DATA_DIR", () => {
  it("keeps the emulator's customers and cards: the card list and PATCH /v1/account work after a restart", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "fleet-billing-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const h = await startApiHarness({ DATA_DIR: dataDir });
    cleanups.push(() => h.db.close());
    const { token, customerId } = await loginWithAccount(h);
    const cardId = await saveCard(h.api, token);
    await h.api.close();

    const api = await startApi({ config: h.config, db: h.db, logger: pino({ level: "silent" }) });
    cleanups.push(() => api.close());
    // The mirror would answer anyway; a rebuilt one must agree with the restarted processor.
    await h.db.query("delete from billing_mirror_syncs");
    await h.db.query("delete from billing_payment_methods");
    const listed = await call(api, token, "GET", "/v1/account/payment-methods");
    expect(listed.status).toBe(200);
    expect(listed.body.map((c: { id: string }) => c.id)).toEqual([cardId]);
    const patched = await call(api, token, "PATCH", "/v1/account", { name: "Renamed After Restart" });
    expect(patched.status).toBe(200);
    expect(patched.body.name).toBe("Renamed After Restart");
    // Through the real SDK: the restarted emulator knows the customer and its default card.
    const url = new URL(api.stripeEmulatorUrl ?? "");
    const stripe = new Stripe(EMULATOR_SECRET_KEY, { host: url.hostname, port: url.port, protocol: "http" });
    const customer = (await stripe.customers.retrieve(customerId)) as Stripe.Customer;
    expect(customer.name).toBe("Renamed After Restart");
    expect(customer.invoice_settings.default_payment_method).toBe(cardId);
  });
});
