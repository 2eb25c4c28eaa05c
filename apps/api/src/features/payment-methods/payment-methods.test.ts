import { Writable } from "node:stream";
import { makeAccount, makeChildOrganization, makeUser } from "@fleet/db/testing";
import { PAYMENT_METHOD_ID_MAX, REDACT_PATHS } from "@fleet/shared";
import pino from "pino";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client.ts";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import {
  CARD_EXP_YEAR as EXP_YEAR,
  EMULATOR_SECRET_KEY,
  emulatorSdk,
  loginWithAccount,
  startUnreachableProcessorApi,
  testCard as card,
  unixInZone as inZone,
} from "../../testing/billing-fixtures.ts";

// The HTTP face of payment methods and invoices; their rules are tested on the services
// (payment-methods.service.test.ts, invoices.service.test.ts).

/** Every log line of the API, as written (the last test checks that no secret reaches them). */
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
/** Server-side view of the processor, to check what the API did there. */
let server: Stripe;
/** What Stripe.js does in the browser: publishable key only. */
let browser: Stripe;

beforeAll(async () => {
  h = await startApiHarness({}, { logger });
  server = emulatorSdk(h, EMULATOR_SECRET_KEY);
  browser = emulatorSdk(h, h.api.publishableKey);
});
afterAll(async () => {
  await h?.close();
});

const withAccount = (extra: { timezone?: string } = {}) => loginWithAccount(h, extra);

/** The browser part of the flow: setup intent from the API, card and confirm with the publishable key. */
const addCardClientSide = async (token: string, number: string) => {
  const intent = await h.request("POST", "/v1/account/setup-intent", { token });
  expect(intent.status).toBe(201);
  const pm = await browser.paymentMethods.create({ type: "card", card: card(number) });
  const confirmed = await browser.setupIntents.confirm(intent.body.id, {
    payment_method: pm.id,
    client_secret: intent.body.client_secret,
  } as Stripe.SetupIntentConfirmParams);
  return { intent: intent.body, pm, confirmed };
};

const defaultOf = async (customerId: string) => {
  const customer = (await server.customers.retrieve(customerId)) as Stripe.Customer;
  return customer.invoice_settings.default_payment_method;
};

describe("the REST face of the flow a frontend performs", () => {
  it("setup intent 201, save 201 on both paths, list 200, delete 409 and 204 without a body", async () => {
    const { token, customerId } = await withAccount({ timezone: "Asia/Tokyo" });

    const intent = await h.request("POST", "/v1/account/setup-intent", { token });
    expect(intent.status).toBe(201);
    expect(Object.keys(intent.body).sort()).toEqual(["client_secret", "created_at", "id", "publishable_key", "status"]);
    expect(intent.body.publishable_key).toBe(h.api.publishableKey);
    expect(intent.body.publishable_key).toMatch(/^pk_test_/);
    const visa = await browser.paymentMethods.create({ type: "card", card: card("4242424242424242") });
    const confirmed = await browser.setupIntents.confirm(intent.body.id, {
      payment_method: visa.id,
      client_secret: intent.body.client_secret,
    } as Stripe.SetupIntentConfirmParams);
    expect(confirmed.status).toBe("succeeded");

    const saved = await h.request("POST", "/v1/account/payment-methods", { token, body: { id: visa.id } });
    expect(saved.status).toBe(201);
    expect(saved.body).toEqual({
      id: visa.id,
      brand: "visa",
      last4: "4242",
      exp_month: 12,
      exp_year: EXP_YEAR,
      created_at: inZone(visa.created, "Asia/Tokyo"),
    });
    const one = await h.request("GET", "/v1/account/payment-methods", { token });
    expect(one.status).toBe(200);
    expect(one.body).toEqual([saved.body]);

    // The /tax path is the same save.
    const second = await addCardClientSide(token, "5555555555554444");
    const master = await h.request("POST", "/v1/account/tax", { token, body: { id: second.pm.id } });
    expect(master.status).toBe(201);
    expect(master.body).toMatchObject({ id: second.pm.id, brand: "mastercard", last4: "4444" });
    expect(await defaultOf(customerId)).toBe(second.pm.id);

    const refuseDefault = await h.refused("DELETE", `/v1/account/payment-methods/${second.pm.id}`, { token });
    expect(refuseDefault.status).toBe(409);
    expect(refuseDefault.body.message).toMatch(/default payment method/);
    const deleted = await h.request("DELETE", `/v1/account/payment-methods/${visa.id}`, { token });
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expect((await server.paymentMethods.retrieve(visa.id)).customer).toBeNull();
  });
});

describe("declined cards", () => {
  it("saving a declined card answers 402 with the reason and its decline_code", async () => {
    const { token } = await withAccount();
    const pm = await browser.paymentMethods.create({ type: "card", card: card("4000000000009995") });
    const res = await h.refused("POST", "/v1/account/tax", { token, body: { id: pm.id } });
    expect(res.status).toBe(402);
    expect(res.body.message).toBe("Your card has insufficient funds.");
    expect(res.body.decline_code).toBe("insufficient_funds");
  });
});

describe("GET /v1/account/invoices", () => {
  it("answers 200 with the API doc's Invoice fields, in the token's zone", async () => {
    const { token, customerId } = await withAccount({ timezone: "America/New_York" });
    await server.invoiceItems.create({ customer: customerId, amount: 1999, currency: "usd" });
    const draft = await server.invoices.create({ customer: customerId, currency: "usd" });
    const open = await server.invoices.finalizeInvoice(draft.id);
    const res = await h.request("GET", "/v1/account/invoices", { token });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(1);
    expect(Object.keys(res.body[0]).sort()).toEqual(
      [
        "amount_due",
        "amount_paid",
        "amount_remaining",
        "attempt_count",
        "attempted",
        "created_at",
        "currency",
        "currency_symbol",
        "description",
        "due_date",
        "id",
        "invoice_pdf",
        "number",
        "paid",
        "period_end",
        "period_start",
        "status",
        "subtotal",
        "subtotal_excluding_tax",
        "tax",
        "total",
        "total_excluding_tax",
      ].sort(),
    );
    expect(res.body[0]).toMatchObject({
      id: open.id,
      status: "open",
      total: 19.99,
      created_at: inZone(open.created, "America/New_York"),
    });
  });
});

describe("validation", () => {
  let token: string;
  beforeAll(async () => {
    token = (await withAccount()).token;
  });

  it.each([
    ["missing", {}],
    ["empty", { id: "" }],
    ["a number", { id: 42 }],
    ["null", { id: null }],
    ["with a slash", { id: "pm_1/../../customers" }],
    ["one character too long", { id: `pm_${"x".repeat(PAYMENT_METHOD_ID_MAX - 2)}` }],
  ])("refuses an id that is %s with 422 naming id", async (_case, body) => {
    for (const path of ["/v1/account/tax", "/v1/account/payment-methods"]) {
      const res = await h.refused("POST", path, { token, body });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.errors)).toEqual(["id"]);
    }
  });

  it("accepts an id of exactly the maximum length (then it is simply unknown)", async () => {
    const id = `pm_${"x".repeat(PAYMENT_METHOD_ID_MAX - 3)}`;
    expect(id).toHaveLength(PAYMENT_METHOD_ID_MAX);
    expect((await h.refused("POST", "/v1/account/tax", { token, body: { id } })).status).toBe(404);
    expect((await h.refused("DELETE", `/v1/account/payment-methods/${id}`, { token })).status).toBe(404);
    const tooLong = await h.refused("DELETE", `/v1/account/payment-methods/${id}x`, { token });
    expect(tooLong.status).toBe(422);
    expect(Object.keys(tooLong.body.errors)).toEqual(["id"]);
  });
});

describe("access", () => {
  const endpoints: Array<[string, string, "account:read" | "account:write"]> = [
    ["POST", "/v1/account/setup-intent", "account:write"],
    ["POST", "/v1/account/tax", "account:write"],
    ["POST", "/v1/account/payment-methods", "account:write"],
    ["GET", "/v1/account/payment-methods", "account:read"],
    ["DELETE", "/v1/account/payment-methods/pm_123", "account:write"],
    ["GET", "/v1/account/invoices", "account:read"],
  ];
  const bodyFor = (method: string) => (method === "POST" ? { id: "pm_123" } : undefined);

  it.each(endpoints)("%s %s answers the no-account error without an account", async (method, path) => {
    const { token } = await h.login();
    const res = await h.refused(method, path, { token, body: bodyFor(method) });
    expect(res.status).toBe(422);
    expect(res.body.message).toMatch(/Create one first with POST \/v1\/account/);
    expect(res.body.documentation_url).toBe("http://localhost:3000/docs");
    expect(res.body.errors).toBeUndefined();
  });

  it.each(endpoints)("%s %s needs the %s scope (403)", async (method, path, scope) => {
    const other = scope === "account:read" ? "account:write" : "account:read";
    // Same user and organization, with an account, but a token lacking the scope.
    const email = `${crypto.randomUUID()}@example.com`;
    const full = await h.login(email);
    const created = await h.request("POST", "/v1/account", {
      token: full.token,
      body: { name: "Scoped", email, address: { country: "US" } },
    });
    expect(created.status).toBe(201);
    const narrow = await h.login(email, { scope: other });
    expect(narrow.organizationId).toBe(full.organizationId);
    const res = await h.refused(method, path, { token: narrow.token, body: bodyFor(method) });
    expect(res.status).toBe(403);
    expect(res.body.message).toContain(scope);
    expect((await h.refused(method, path, { body: bodyFor(method) })).status).toBe(401);
  });

  it("a child organization is billed by its root: 409 naming the root", async () => {
    const root = await makeUser(h.db);
    await makeAccount(h.db, root.organizationId);
    const child = await makeChildOrganization(h.db, root.organizationId);
    const { SignJWT } = await import("jose");
    const { createSecretKey } = await import("node:crypto");
    const token = await new SignJWT({ id: child.organizationId, scope: "account:read account:write" })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(crypto.randomUUID())
      .setExpirationTime("10m")
      .sign(createSecretKey(Buffer.from(h.config.auth.jwtSecret ?? "")));
    const res = await h.refused("GET", "/v1/account/payment-methods", { token });
    expect(res.status).toBe(409);
    expect(res.body.billing_organization_id).toBe(root.organizationId);
  });
});

describe("tRPC and OpenAPI faces", () => {
  it("serves the procedures under the contract's names", async () => {
    const { token } = await withAccount();
    const client = createClient({ url: h.api.url, token });
    const intent = await client.paymentMethods.createSetupIntent.mutate();
    expect(intent.status).toBe("requires_payment_method");
    const pm = await browser.paymentMethods.create({ type: "card", card: card("4242424242424242") });
    await browser.setupIntents.confirm(intent.id, {
      payment_method: pm.id,
      client_secret: intent.client_secret,
    } as Stripe.SetupIntentConfirmParams);
    const saved = await client.paymentMethods.save.mutate({ id: pm.id });
    expect(saved.last4).toBe("4242");
    expect(await client.paymentMethods.list.query()).toEqual([saved]);
    await expect(client.paymentMethods.delete.mutate({ id: pm.id })).rejects.toMatchObject({
      data: { httpStatus: 409 },
    });
    expect(await client.invoices.list.query()).toEqual([]);
  });

  it("documents both save paths, the 201s and the 204", async () => {
    const doc = (await h.request("GET", "/openapi.json")).body;
    expect(doc.paths["/v1/account/tax"].post.responses["201"]).toBeDefined();
    expect(doc.paths["/v1/account/payment-methods"].post.responses["201"]).toBeDefined();
    expect(doc.paths["/v1/account/payment-methods"].get.responses["200"]).toBeDefined();
    expect(doc.paths["/v1/account/setup-intent"].post.responses["201"]).toBeDefined();
    expect(doc.paths["/v1/account/payment-methods/{id}"].delete.responses["204"]).toBeDefined();
    expect(doc.paths["/v1/account/invoices"].get.responses["200"]).toBeDefined();
  });
});

describe("secrets never reach the logs", () => {
  it("a full payment flow, a decline, a processor outage and errors log no client secret and no key", async () => {
    const secrets: string[] = [];
    const { token } = await loginWithAccount(h);

    const addCard = async (number: string) => {
      const intent = await h.request("POST", "/v1/account/setup-intent", { token });
      expect(intent.status).toBe(201);
      secrets.push(intent.body.client_secret);
      const pm = await browser.paymentMethods.create({ type: "card", card: card(number) });
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
      const text = await res.text();
      expect(JSON.parse(text).message).toBe(
        "The payment processor could not be reached or refused the request; nothing was changed. Try again shortly.",
      );
      expect(text).not.toContain("sk_test_unreachable_processor");
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
