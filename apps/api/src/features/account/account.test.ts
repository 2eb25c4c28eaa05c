import { databaseFingerprint, makeChildOrganization, makeUser } from "@fleet/db/testing";
import { ACCOUNT_LIMITS } from "@fleet/shared";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { EMULATOR_SECRET_KEY, emulatorSdk, loginWithAccount } from "../../testing/billing-fixtures.ts";

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.close();
});

const validBody = { name: "Acme Networks", email: "Billing@Acme.Example", address: { country: "DE" } };

/** Runs a request that must be refused and proves the database did not change. */
describe("GET /v1/account", () => {
  it("answers the exact no-account error before an account exists", async () => {
    const { token } = await h.login();
    const res = await h.request("GET", "/v1/account", { token });
    expect(res.status).toBe(422);
    expect(res.body.message).toMatch(/create/i);
    expect(res.body.documentation_url).toBe("http://localhost:3000/docs");
  });

  it("returns the account after creation, with created_at in the token's time zone", async () => {
    const { token } = await h.login(undefined, { timezone: "Asia/Tokyo" });
    const created = await h.request("POST", "/v1/account", { token, body: validBody });
    expect(created.status).toBe(201);
    const res = await h.request("GET", "/v1/account", { token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created.body);
    const rows = await h.db.query<{ ms: number }>(
      "select (extract(epoch from created_at) * 1000)::float8 as ms from billing_accounts where id = $1",
      [res.body.id],
    );
    const utc = new Date(Number(rows[0]?.ms));
    const tokyo = new Date(utc.getTime() + 9 * 3600_000).toISOString().slice(0, 19).replace("T", " ");
    expect(res.body.created_at).toBe(tokyo);
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  });

  it("renders UTC for an unknown time zone claim", async () => {
    const { token } = await h.login();
    await h.request("POST", "/v1/account", { token, body: validBody });
    const res = await h.request("GET", "/v1/account", { token });
    const now = new Date().toISOString().slice(0, 16).replace("T", " ");
    expect(res.body.created_at.slice(0, 16) <= now).toBe(true);
    expect(Math.abs(Date.parse(`${res.body.created_at.replace(" ", "T")}Z`) - Date.now())).toBeLessThan(60_000);
  });
});

describe("POST /v1/account", () => {
  it("creates the account and the processor customer; currency empty, email lowercased", async () => {
    const { token, organizationId } = await h.login();
    const res = await h.request("POST", "/v1/account", {
      token,
      body: {
        ...validBody,
        address: { country: "de", city: "Ignored", line1: "Ignored" },
        currency: "eur",
        balance: 99,
        unknown: true,
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: "Acme Networks",
      email: "billing@acme.example",
      currency: "",
      balance: 0,
      address: { city: "", country: "DE", line1: "", line2: "", postal_code: "", state: "" },
    });
    expect(Object.keys(res.body).sort()).toEqual([
      "address",
      "balance",
      "created_at",
      "currency",
      "email",
      "id",
      "name",
    ]);
    const rows = await h.db.query<{ stripe_customer_id: string }>(
      "select stripe_customer_id from billing_accounts where organization_id = $1",
      [organizationId],
    );
    const stripe = new Stripe("sk_test_fleet_emulator", {
      host: new URL(h.api.stripeEmulatorUrl ?? "").hostname,
      port: new URL(h.api.stripeEmulatorUrl ?? "").port,
      protocol: "http",
    });
    const customer = await stripe.customers.retrieve(rows[0]?.stripe_customer_id ?? "");
    expect(customer).toMatchObject({ email: "billing@acme.example", name: "Acme Networks" });
    expect((customer as Stripe.Customer).metadata.organization_id).toBe(organizationId);
  });

  it("refuses a second account for the same organization with 409", async () => {
    const { token } = await h.login();
    expect((await h.request("POST", "/v1/account", { token, body: validBody })).status).toBe(201);
    const res = await h.refused("POST", "/v1/account", { token, body: validBody });
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/already has a billing account/);
  });

  it("creates exactly one account under concurrent creates", async () => {
    const { token, organizationId } = await h.login();
    const results = await Promise.all(
      Array.from({ length: 5 }, () => h.request("POST", "/v1/account", { token, body: validBody })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(4);
    const rows = await h.db.query("select id from billing_accounts where organization_id = $1", [organizationId]);
    expect(rows).toHaveLength(1);
  });

  it.each([
    ["name missing", { email: "a@b.co", address: { country: "US" } }, "name"],
    ["email missing", { name: "A", address: { country: "US" } }, "email"],
    ["address missing", { name: "A", email: "a@b.co" }, "address.country"],
    ["country missing", { name: "A", email: "a@b.co", address: {} }, "address.country"],
    ["country not ISO", { name: "A", email: "a@b.co", address: { country: "XX" } }, "address.country"],
    ["country three letters", { name: "A", email: "a@b.co", address: { country: "DEU" } }, "address.country"],
    ["email invalid", { name: "A", email: "not-an-email", address: { country: "US" } }, "email"],
    ["name empty", { name: "", email: "a@b.co", address: { country: "US" } }, "name"],
    ["name a number", { name: 42, email: "a@b.co", address: { country: "US" } }, "name"],
    ["email a number", { name: "A", email: 42, address: { country: "US" } }, "email"],
    ["address a string", { name: "A", email: "a@b.co", address: "US" }, "address"],
    ["country a number", { name: "A", email: "a@b.co", address: { country: 49 } }, "address.country"],
  ])("refuses %s with 422 naming the field, writing nothing", async (_case, body, field) => {
    const { token } = await h.login();
    const res = await h.refused("POST", "/v1/account", { token, body });
    expect(res.status).toBe(422);
    expect(typeof res.body.message).toBe("string");
    expect(Object.keys(res.body.errors)).toContain(field);
    expect(res.body.errors[field][0]).toEqual(expect.any(String));
  });

  it("words a missing field and a field of the wrong type the same everywhere", async () => {
    const { token } = await h.login();
    const missing = await h.refused("POST", "/v1/account", { token, body: { email: "a@b.co", address: {} } });
    expect(missing.body.errors).toMatchObject({ name: ["is required"], "address.country": ["is required"] });
    const wrong = await h.refused("POST", "/v1/account", {
      token,
      body: { name: 42, email: "a@b.co", address: { country: 1 } },
    });
    expect(wrong.body.errors).toMatchObject({ name: ["must be a string"], "address.country": ["must be a string"] });
    // dev-login too: no validator's own text ("Invalid input: expected string ...").
    const login = await h.request("POST", "/v1/auth/dev-login", { body: { scope: 7 } });
    expect(login.status).toBe(422);
    expect(login.body.errors).toEqual({ email: ["is required"], scope: ["must be a string"] });
    expect(JSON.stringify(login.body)).not.toContain("Invalid input");
  });

  it("accepts name and email exactly at their limits and refuses one more", async () => {
    const name = "n".repeat(ACCOUNT_LIMITS.name);
    const local = "e".repeat(64);
    const domainLength = ACCOUNT_LIMITS.email - local.length - 1 - 4;
    const labels: string[] = [];
    let remaining = domainLength;
    while (remaining > 0) {
      const size = Math.min(60, remaining);
      labels.push("d".repeat(size));
      remaining -= size + 1;
    }
    let domain = labels.join(".");
    domain = domain.slice(0, domainLength);
    if (domain.endsWith(".")) domain = `${domain.slice(0, -1)}d`;
    const email = `${local}@${domain}.com`;
    expect(email).toHaveLength(ACCOUNT_LIMITS.email);
    const ok = await h.login();
    const res = await h.request("POST", "/v1/account", {
      token: ok.token,
      body: { name, email, address: { country: "US" } },
    });
    expect(res.status).toBe(201);
    expect(res.body.name).toHaveLength(100);
    expect(res.body.email).toHaveLength(250);

    const tooLong = await h.login();
    const r1 = await h.refused("POST", "/v1/account", {
      token: tooLong.token,
      body: { name: `${name}n`, email: "a@b.co", address: { country: "US" } },
    });
    expect(r1.status).toBe(422);
    expect(r1.body.errors.name).toBeDefined();
    const r2 = await h.refused("POST", "/v1/account", {
      token: tooLong.token,
      body: { name: "A", email: `e${email}`, address: { country: "US" } },
    });
    expect(r2.status).toBe(422);
    expect(r2.body.errors.email).toBeDefined();
  });
});

describe("PATCH and PUT /v1/account", () => {
  const setup = async () => {
    const login = await h.login();
    const created = await h.request("POST", "/v1/account", { token: login.token, body: validBody });
    expect(created.status).toBe(201);
    return login;
  };

  it("changes only supplied fields and unsets with an empty string", async () => {
    const { token } = await setup();
    const full = await h.request("PATCH", "/v1/account", {
      token,
      body: { address: { city: "Berlin", line1: "Street 1", line2: "Suite 2", postal_code: "10115", state: "BE" } },
    });
    expect(full.status).toBe(200);
    expect(full.body.address).toEqual({
      city: "Berlin",
      country: "DE",
      line1: "Street 1",
      line2: "Suite 2",
      postal_code: "10115",
      state: "BE",
    });
    expect(full.body.name).toBe("Acme Networks");

    const unset = await h.request("PATCH", "/v1/account", { token, body: { address: { line2: "" }, name: "Acme 2" } });
    expect(unset.status).toBe(200);
    expect(unset.body.address).toEqual({
      city: "Berlin",
      country: "DE",
      line1: "Street 1",
      line2: "",
      postal_code: "10115",
      state: "BE",
    });
    expect(unset.body.name).toBe("Acme 2");
    expect((await h.request("GET", "/v1/account", { token })).body).toEqual(unset.body);
  });

  it("accepts PUT with the same body", async () => {
    const { token } = await setup();
    const res = await h.request("PUT", "/v1/account", {
      token,
      body: { email: "NEW@Example.com", address: { country: "fr" } },
    });
    expect(res.status).toBe(200);
    expect(res.body.email).toBe("new@example.com");
    expect(res.body.address.country).toBe("FR");
  });

  it("an empty body changes nothing and answers the account", async () => {
    const { token } = await setup();
    const before = await h.request("GET", "/v1/account", { token });
    const res = await h.refused("PATCH", "/v1/account", { token, body: {} });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(before.body);
  });

  it.each([
    ["address.city", 50],
    ["address.state", 50],
    ["address.line1", 100],
    ["address.line2", 100],
    ["address.postal_code", 10],
    ["name", 100],
  ])("%s: %i characters ok, one more refused", async (field, max) => {
    const { token } = await setup();
    const body = (value: string) => {
      const [a, b] = field.split(".");
      return b ? { [a as string]: { [b]: value } } : { [a as string]: value };
    };
    const ok = await h.request("PATCH", "/v1/account", { token, body: body("x".repeat(max)) });
    expect(ok.status).toBe(200);
    const res = await h.refused("PATCH", "/v1/account", { token, body: body("y".repeat(max + 1)) });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors)).toEqual([field]);
  });

  it("refuses a non-string with 422 naming the field, and unsetting a required field", async () => {
    const { token } = await setup();
    const res = await h.refused("PATCH", "/v1/account", { token, body: { address: { postal_code: 12345 } } });
    expect(res.status).toBe(422);
    expect(res.body.errors["address.postal_code"]).toBeDefined();
    const empty = await h.refused("PATCH", "/v1/account", { token, body: { email: "" } });
    expect(empty.status).toBe(422);
    expect(empty.body.errors.email).toBeDefined();
    const country = await h.refused("PATCH", "/v1/account", { token, body: { address: { country: "" } } });
    expect(country.status).toBe(422);
  });

  it("answers the no-account error when there is no account", async () => {
    const { token } = await h.login();
    const res = await h.refused("PATCH", "/v1/account", { token, body: { name: "X" } });
    expect(res.status).toBe(422);
    expect(res.body.documentation_url).toEqual(expect.any(String));
  });
});

describe("organization trees", () => {
  it("a child organization is billed by the top of its tree and cannot create its own account", async () => {
    const root = await makeUser(h.db);
    const child = await makeChildOrganization(h.db, root.organizationId);
    const token = await signFor(child.organizationId);
    const get = await h.request("GET", "/v1/account", { token });
    expect(get.status).toBe(409);
    expect(get.body.message).toMatch(/billed by the top of its organization tree/);
    expect(get.body.billing_organization_id).toBe(root.organizationId);
    const post = await h.refused("POST", "/v1/account", { token, body: validBody });
    expect(post.status).toBe(409);
  });
});

describe("DELETE /v1/account", () => {
  it("is not offered: 405 pointing to support", async () => {
    const { token } = await h.login();
    const res = await h.refused("DELETE", "/v1/account", { token });
    expect(res.status).toBe(405);
    expect(res.body.message).toMatch(/support/i);
  });
});

// An unreachable processor (502, nothing written) is AccountService's: account.service.test.ts.

const signFor = async (organizationId: string): Promise<string> => {
  const { SignJWT } = await import("jose");
  const { createSecretKey } = await import("node:crypto");
  const secret = h.config.auth.jwtSecret;
  if (!secret) throw new Error("harness must run with a known JWT secret");
  return new SignJWT({ id: organizationId, scope: "account:read account:write" })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(crypto.randomUUID())
    .setExpirationTime("10m")
    .sign(createSecretKey(Buffer.from(secret)));
};

describe("an account update never leaves the processor and the database different", () => {
  const customerName = async (customerId: string) => {
    const stripe = emulatorSdk(h, EMULATOR_SECRET_KEY);
    return ((await stripe.customers.retrieve(customerId)) as Stripe.Customer).name;
  };

  it("the processor refuses: the database keeps the old values", async () => {
    const owner = await loginWithAccount(h);
    // The customer is gone at the processor, so its update fails there.
    await emulatorSdk(h, EMULATOR_SECRET_KEY).customers.del(owner.customerId);
    const res = await h.refused("PATCH", "/v1/account", { token: owner.token, body: { name: "Renamed Co" } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    const account = await h.request("GET", "/v1/account", { token: owner.token });
    expect(account.body.name).toBe("Card Co");
  });

  it("the database refuses after the processor accepted: the processor customer is reverted", async () => {
    const owner = await loginWithAccount(h);
    // A real database failure on exactly this write (a trigger), after the processor call succeeded.
    await h.db.query(`create or replace function refuse_account_write() returns trigger language plpgsql as $$
      begin if new.name = 'Refused By Database' then raise exception 'refused by test trigger'; end if; return new; end $$`);
    await h.db.query(
      "create trigger refuse_account_write before update on billing_accounts for each row execute function refuse_account_write()",
    );
    try {
      // The processor's own events about the update and its revert are recorded as received
      // (stripe_webhook_events); every other table must be as it was.
      const withoutEventLog = async () =>
        (await databaseFingerprint(h.db))
          .split(",")
          .filter((part) => !part.startsWith("stripe_webhook_events:"))
          .join(",");
      await h.stripeEmulator?.webhooksIdle();
      const before = await withoutEventLog();
      const res = await h.request("PATCH", "/v1/account", {
        token: owner.token,
        body: { name: "Refused By Database", address: { city: "Utrecht" } },
      });
      expect(res.status).toBe(500);
      await h.stripeEmulator?.webhooksIdle();
      expect(await withoutEventLog()).toBe(before);
      expect(await customerName(owner.customerId)).toBe("Card Co");
      const stripe = emulatorSdk(h, EMULATOR_SECRET_KEY);
      const customer = (await stripe.customers.retrieve(owner.customerId)) as Stripe.Customer;
      expect(customer.address?.city ?? "").toBe("");
    } finally {
      await h.db.query("drop trigger refuse_account_write on billing_accounts");
      await h.db.query("drop function refuse_account_write()");
    }
    // The same update goes through once the database accepts it, on both sides.
    const ok = await h.request("PATCH", "/v1/account", { token: owner.token, body: { name: "Accepted Co" } });
    expect(ok.status).toBe(200);
    expect(await customerName(owner.customerId)).toBe("Accepted Co");
  });
});
