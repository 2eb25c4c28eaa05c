import { databaseFingerprint, makeAccount, makeChildOrganization, makeUser } from "@fleet/db/testing";
import { PAYMENT_METHOD_ID_MAX } from "@fleet/shared";
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

let h: ApiHarness;
/** Server-side view of the processor, to check what the API did there. */
let server: Stripe;
/** What Stripe.js does in the browser: publishable key only. */
let browser: Stripe;

beforeAll(async () => {
  h = await startApiHarness();
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

describe("the whole flow a frontend performs", () => {
  it("setup intent, client-side card and confirm, save, list, second card, delete rules", async () => {
    const { token, customerId } = await withAccount({ timezone: "Asia/Tokyo" });

    // 1. Setup intent: exactly the API doc fields, created for this account's customer.
    const intent = await h.request("POST", "/v1/account/setup-intent", { token });
    expect(intent.status).toBe(201);
    expect(Object.keys(intent.body).sort()).toEqual(["client_secret", "created_at", "id", "publishable_key", "status"]);
    expect(intent.body.id).toMatch(/^seti_/);
    expect(intent.body.publishable_key).toBe(h.api.publishableKey);
    expect(intent.body.publishable_key).toMatch(/^pk_test_/);
    expect(intent.body.client_secret).toMatch(new RegExp(`^${intent.body.id}_secret_\\w+$`));
    expect(intent.body.status).toBe("requires_payment_method");
    const stored = await server.setupIntents.retrieve(intent.body.id);
    expect(stored.customer).toBe(customerId);
    expect(intent.body.created_at).toBe(inZone(stored.created, "Asia/Tokyo"));

    // 2. Browser: card with the publishable key, confirm with the client secret.
    const visa = await browser.paymentMethods.create({ type: "card", card: card("4242424242424242") });
    const confirmed = await browser.setupIntents.confirm(intent.body.id, {
      payment_method: visa.id,
      client_secret: intent.body.client_secret,
    } as Stripe.SetupIntentConfirmParams);
    expect(confirmed.status).toBe("succeeded");

    // 3. Save it: the exact Payment Method, and it is the default.
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
    expect(await defaultOf(customerId)).toBe(visa.id);

    // 4. List it.
    const one = await h.request("GET", "/v1/account/payment-methods", { token });
    expect(one.status).toBe(200);
    expect(one.body).toEqual([saved.body]);

    // 5. A second card (through the /tax path) becomes the default.
    const second = await addCardClientSide(token, "5555555555554444");
    expect(second.confirmed.status).toBe("succeeded");
    const master = await h.request("POST", "/v1/account/tax", { token, body: { id: second.pm.id } });
    expect(master.status).toBe(201);
    expect(master.body).toMatchObject({ id: second.pm.id, brand: "mastercard", last4: "4444" });
    expect(await defaultOf(customerId)).toBe(second.pm.id);
    const two = await h.request("GET", "/v1/account/payment-methods", { token });
    expect(two.body.map((p: { id: string }) => p.id).sort()).toEqual([visa.id, second.pm.id].sort());

    // 6. The default cannot be deleted; the answer says what to do.
    const refuseDefault = await h.refused("DELETE", `/v1/account/payment-methods/${second.pm.id}`, { token });
    expect(refuseDefault.status).toBe(409);
    expect(refuseDefault.body.message).toMatch(/default payment method/);
    expect(refuseDefault.body.message).toMatch(/Make another card the default first/);
    expect((await server.paymentMethods.retrieve(second.pm.id)).customer).toBe(customerId);

    // 7. The other one can.
    const deleted = await h.request("DELETE", `/v1/account/payment-methods/${visa.id}`, { token });
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expect((await server.paymentMethods.retrieve(visa.id)).customer).toBeNull();
    const left = await h.request("GET", "/v1/account/payment-methods", { token });
    expect(left.body.map((p: { id: string }) => p.id)).toEqual([second.pm.id]);

    // 8. The only one cannot.
    const refuseOnly = await h.refused("DELETE", `/v1/account/payment-methods/${second.pm.id}`, { token });
    expect(refuseOnly.status).toBe(409);
    expect(refuseOnly.body.message).toMatch(/only payment method/);
    expect(refuseOnly.body.message).toMatch(/Add another card/);
    expect((await server.paymentMethods.retrieve(second.pm.id)).customer).toBe(customerId);
  });

  it("re-sending an already saved card makes it the default again", async () => {
    const { token, customerId } = await withAccount();
    const first = await addCardClientSide(token, "4242424242424242");
    expect((await h.request("POST", "/v1/account/tax", { token, body: { id: first.pm.id } })).status).toBe(201);
    const second = await addCardClientSide(token, "378282246310005");
    const amex = await h.request("POST", "/v1/account/tax", { token, body: { id: second.pm.id } });
    expect(amex.body.brand).toBe("amex");
    expect(await defaultOf(customerId)).toBe(second.pm.id);

    const again = await h.request("POST", "/v1/account/payment-methods", { token, body: { id: first.pm.id } });
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.pm.id);
    expect(await defaultOf(customerId)).toBe(first.pm.id);
    // Now the amex is not the default and can go.
    expect((await h.request("DELETE", `/v1/account/payment-methods/${second.pm.id}`, { token })).status).toBe(204);
  });

  it("saves a card created but never confirmed by attaching it", async () => {
    const { token, customerId } = await withAccount();
    const pm = await browser.paymentMethods.create({ type: "card", card: card("6011111111111117") });
    const saved = await h.request("POST", "/v1/account/tax", { token, body: { id: pm.id } });
    expect(saved.status).toBe(201);
    expect(saved.body.brand).toBe("discover");
    expect((await server.paymentMethods.retrieve(pm.id)).customer).toBe(customerId);
    expect(await defaultOf(customerId)).toBe(pm.id);
  });

  it.each([
    ["3056930009020004", "diners"],
    ["3566002020360505", "jcb"],
    ["6200000000000005", "unionpay"],
  ])("maps the brand of %s to %s", async (number, brand) => {
    const { token } = await withAccount();
    const { pm } = await addCardClientSide(token, number);
    const saved = await h.request("POST", "/v1/account/tax", { token, body: { id: pm.id } });
    expect(saved.body.brand).toBe(brand);
  });
});

describe("declined cards", () => {
  it("a declined card fails at confirm and saving it answers 402 with the reason, changing nothing", async () => {
    const { token, customerId } = await withAccount();
    const intent = await h.request("POST", "/v1/account/setup-intent", { token });
    const pm = await browser.paymentMethods.create({ type: "card", card: card("4000000000000002") });
    const error = await browser.setupIntents
      .confirm(intent.body.id, {
        payment_method: pm.id,
        client_secret: intent.body.client_secret,
      } as Stripe.SetupIntentConfirmParams)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect((error as Stripe.errors.StripeCardError).decline_code).toBe("generic_decline");

    const res = await h.refused("POST", "/v1/account/payment-methods", { token, body: { id: pm.id } });
    expect(res.status).toBe(402);
    expect(res.body.message).toBe("Your card was declined.");
    expect(res.body.decline_code).toBe("generic_decline");
    expect((await server.paymentMethods.retrieve(pm.id)).customer).toBeNull();
    expect(await defaultOf(customerId)).toBeNull();
    expect((await h.request("GET", "/v1/account/payment-methods", { token })).body).toEqual([]);
  });

  it("names the decline reason (insufficient funds)", async () => {
    const { token } = await withAccount();
    const pm = await browser.paymentMethods.create({ type: "card", card: card("4000000000009995") });
    const res = await h.refused("POST", "/v1/account/tax", { token, body: { id: pm.id } });
    expect(res.status).toBe(402);
    expect(res.body.message).toBe("Your card has insufficient funds.");
    expect(res.body.decline_code).toBe("insufficient_funds");
  });
});

describe("tenancy", () => {
  it("another organization never sees, saves or deletes these payment methods", async () => {
    const a = await withAccount();
    const { pm } = await addCardClientSide(a.token, "4242424242424242");
    expect((await h.request("POST", "/v1/account/tax", { token: a.token, body: { id: pm.id } })).status).toBe(201);
    const other = await addCardClientSide(a.token, "5555555555554444");
    expect((await h.request("POST", "/v1/account/tax", { token: a.token, body: { id: other.pm.id } })).status).toBe(
      201,
    );

    const b = await withAccount();
    expect((await h.request("GET", "/v1/account/payment-methods", { token: b.token })).body).toEqual([]);
    const save = await h.refused("POST", "/v1/account/payment-methods", { token: b.token, body: { id: pm.id } });
    expect(save.status).toBe(404);
    expect(save.body.message).toBe(`This account has no payment method with id "${pm.id}".`);
    const unknown = await h.refused("POST", "/v1/account/payment-methods", {
      token: b.token,
      body: { id: "pm_doesnotexist" },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe(save.body.message.replace(pm.id, "pm_doesnotexist"));
    const del = await h.refused("DELETE", `/v1/account/payment-methods/${pm.id}`, { token: b.token });
    expect(del.status).toBe(404);

    expect((await server.paymentMethods.retrieve(pm.id)).customer).toBe(a.customerId);
    expect(await defaultOf(a.customerId)).toBe(other.pm.id);
    expect(await defaultOf(b.customerId)).toBeNull();
  });

  it("deleting an unknown or unattached id answers 404", async () => {
    const { token } = await withAccount();
    const loose = await browser.paymentMethods.create({ type: "card", card: card("4242424242424242") });
    expect((await h.refused("DELETE", `/v1/account/payment-methods/${loose.id}`, { token })).status).toBe(404);
    expect((await h.refused("DELETE", "/v1/account/payment-methods/pm_nope", { token })).status).toBe(404);
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

describe("processor down", () => {
  it("answers 502 on every payment write and writes nothing; the lists answer from the mirror", async () => {
    const broken = await startUnreachableProcessorApi(h);
    try {
      const login = await h.login();
      await makeAccount(h.db, login.organizationId);
      const call = (method: string, path: string, body?: unknown) =>
        fetch(`${broken.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${login.token}`, ...(body ? { "content-type": "application/json" } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
      const before = await databaseFingerprint(h.db);
      const results = await Promise.all([
        call("POST", "/v1/account/setup-intent"),
        call("POST", "/v1/account/tax", { id: "pm_123" }),
        call("POST", "/v1/account/payment-methods", { id: "pm_123" }),
        call("DELETE", "/v1/account/payment-methods/pm_123"),
      ]);
      for (const path of ["/v1/account/payment-methods", "/v1/account/invoices"]) {
        const listed = await call("GET", path);
        expect(listed.status).toBe(200);
        expect(await listed.json()).toEqual([]);
      }
      for (const res of results) {
        expect(res.status).toBe(502);
        const text = await res.text();
        expect(JSON.parse(text).message).toBe(
          "The payment processor could not be reached or refused the request; nothing was changed. Try again shortly.",
        );
        expect(text).not.toContain("sk_test_unreachable_processor");
      }
      expect(await databaseFingerprint(h.db)).toBe(before);
    } finally {
      await broken.close();
    }
  });
});
