import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { databaseFingerprint } from "@fleet/db/testing";
import pino from "pino";
import Stripe from "stripe";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startApiHarness } from "../../testing/api-harness.ts";
import {
  EMULATOR_SECRET_KEY,
  emulatorSdk,
  loginWithAccount,
  settleWebhooks,
  startUnreachableProcessorApi,
  testCard,
} from "../../testing/billing-fixtures.ts";
import { type RunningApi, startApi } from "../../start-api.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const harness = async (env: Record<string, string> = {}) => {
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

describe("the processor unreachable", () => {
  it("lists cards and invoices from the mirror; writes answer 502 and change nothing", async () => {
    const h = await harness();
    const { token, customerId } = await loginWithAccount(h);
    const cardId = await saveCard(h.api, token);
    expect((await h.request("POST", "/api/routers", { token, body: {} })).status).toBe(201);
    await settleWebhooks(h);
    const cards = await h.request("GET", "/v1/account/payment-methods", { token });
    const invoices = await h.request("GET", "/v1/account/invoices", { token });
    expect(cards.body.map((c: { id: string }) => c.id)).toEqual([cardId]);
    expect(invoices.body).toHaveLength(1);
    expect(invoices.body[0]).toMatchObject({ status: "paid" });

    // STRIPE_API_BASE points at a closed port.
    const down = await startUnreachableProcessorApi(h);
    cleanups.push(() => down.close());
    expect(await call(down, token, "GET", "/v1/account/payment-methods")).toEqual({ status: 200, body: cards.body });
    expect(await call(down, token, "GET", "/v1/account/invoices")).toEqual({ status: 200, body: invoices.body });
    const before = await databaseFingerprint(h.db);
    for (const [method, path, body] of [
      ["POST", "/v1/account/setup-intent", undefined],
      ["POST", "/v1/account/payment-methods", { id: cardId }],
      ["DELETE", `/v1/account/payment-methods/${cardId}`, undefined],
      ["PATCH", "/v1/account", { name: "Not Now" }],
    ] as const) {
      const res = await call(down, token, method, path, body);
      expect(res.status).toBe(502);
    }
    expect(await databaseFingerprint(h.db)).toBe(before);
    const server = emulatorSdk(h, EMULATOR_SECRET_KEY);
    expect((await server.paymentMethods.list({ customer: customerId, type: "card" })).data).toHaveLength(1);
  });
});

describe("the lists while the processor is reachable", () => {
  // docs/billing.md "Billing mirror": no webhook event reaches the API during this test, so every
  // answer below can only come from the processor itself, read right after each change.
  it("show the processor's current state right after each change, 20 rounds in a row", async () => {
    // A list that fell back to the mirror says so in the log: shown with any failure below.
    const warnings: string[] = [];
    const logger = pino(
      { level: "warn" },
      new Writable({
        write: (chunk, _encoding, done) => {
          if (String(chunk).includes("from the billing mirror")) warnings.push(String(chunk));
          done();
        },
      }),
    );
    const h = await startApiHarness({}, { logger });
    cleanups.push(() => h.close());
    const { token, customerId } = await loginWithAccount(h);
    const defaultCard = await saveCard(h.api, token);
    await settleWebhooks(h);
    const emulator = h.api.stripeEmulator;
    if (!emulator) throw new Error("the harness runs the emulator");
    emulator.setWebhookEndpoint(undefined);
    const server = emulatorSdk(h, EMULATOR_SECRET_KEY);
    const intent = await h.request("POST", "/v1/account/setup-intent", { token });
    const browser = emulatorSdk(h, intent.body.publishable_key);
    const invoiceStatus = async (id: string) => {
      const res = await h.request("GET", "/v1/account/invoices", { token });
      expect([res.status, warnings]).toEqual([200, []]);
      return res.body.find((i: { id: string }) => i.id === id)?.status ?? "absent";
    };
    const cardIds = async () => {
      const res = await h.request("GET", "/v1/account/payment-methods", { token });
      expect([res.status, warnings]).toEqual([200, []]);
      return res.body.map((c: { id: string }) => c.id);
    };
    const ends = ["paid", "void", "uncollectible"] as const;
    for (let round = 0; round < 20; round++) {
      await server.invoiceItems.create({ customer: customerId, amount: 500 + round, currency: "usd" });
      const invoice = await server.invoices.create({ customer: customerId });
      const id = invoice.id ?? "";
      expect([round, await invoiceStatus(id)]).toEqual([round, "draft"]);
      await server.invoices.finalizeInvoice(id);
      expect([round, await invoiceStatus(id)]).toEqual([round, "open"]);
      const end = ends[round % ends.length];
      if (end === "paid") await server.invoices.pay(id);
      else if (end === "void") await server.invoices.voidInvoice(id);
      else await server.invoices.markUncollectible(id);
      expect([round, await invoiceStatus(id)]).toEqual([round, end]);

      const pm = await browser.paymentMethods.create({ type: "card", card: testCard("5555555555554444") });
      await server.paymentMethods.attach(pm.id, { customer: customerId });
      expect([round, await cardIds()]).toEqual([round, [defaultCard, pm.id]]);
      await server.paymentMethods.detach(pm.id);
      expect([round, await cardIds()]).toEqual([round, [defaultCard]]);
    }
    // None of it came through events: the mirror has not seen a single one of these invoices.
    expect(await h.db.query("select id from billing_invoices where status = 'void'")).toEqual([]);
  }, 120_000);
});

describe("reconciliation", () => {
  it("repairs the mirror after missed events", async () => {
    const h = await harness();
    const { token, customerId } = await loginWithAccount(h);
    const first = await saveCard(h.api, token);
    const second = await saveCard(h.api, token, "5555555555554444");
    await settleWebhooks(h);
    // The first read builds the account's mirror.
    const both = await h.request("GET", "/v1/account/payment-methods", { token });
    expect(both.body.map((c: { id: string }) => c.id)).toEqual([first, second]);
    const server = emulatorSdk(h, EMULATOR_SECRET_KEY);
    const emulator = h.api.stripeEmulator;
    if (!emulator) throw new Error("the harness runs the emulator");

    // Changes in the processor's dashboard whose events are lost.
    emulator.setWebhookEndpoint(undefined);
    await server.customers.update(customerId, { invoice_settings: { default_payment_method: second } });
    await server.paymentMethods.detach(first);
    await server.invoiceItems.create({ customer: customerId, amount: 700, currency: "usd" });
    const invoice = await server.invoices.create({ customer: customerId });
    await server.invoices.finalizeInvoice(invoice.id ?? "");
    emulator.store.outbox = [];

    // The lists show the processor's state at once; the mirror (what an outage would show, read
    // through an API whose processor is unreachable) is stale until reconciliation.
    const live = await h.request("GET", "/v1/account/payment-methods", { token });
    expect(live.body.map((c: { id: string }) => c.id)).toEqual([second]);
    const down = await startUnreachableProcessorApi(h);
    cleanups.push(() => down.close());
    const stale = await call(down, token, "GET", "/v1/account/payment-methods");
    expect(stale.body.map((c: { id: string }) => c.id)).toEqual([first, second]);
    expect((await call(down, token, "GET", "/v1/account/invoices")).body).toEqual([]);

    const result = await h.api.reconcileBilling();
    expect(result.failed).toBe(0);
    const repaired = await call(down, token, "GET", "/v1/account/payment-methods");
    expect(repaired.body.map((c: { id: string }) => c.id)).toEqual([second]);
    const listed = await call(down, token, "GET", "/v1/account/invoices");
    expect(listed.body).toEqual([expect.objectContaining({ id: invoice.id, status: "open", amount_due: 7 })]);
    expect((await h.request("GET", "/v1/account/invoices", { token })).body).toEqual(listed.body);
    const defaults = await h.db.query<{ id: string }>("select id from billing_payment_methods where is_default");
    expect(defaults.map((r) => r.id)).toEqual([second]);
  });
});
