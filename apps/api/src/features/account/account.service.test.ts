import { AccountsRepository } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeUser, type TestDatabase } from "@fleet/db/testing";
import { type StripeEmulator, startStripeEmulator } from "@fleet/stripe-emulator";
import type Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCustomerGateway } from "../../integrations/stripe/billing-gateway.ts";
import { createStripeClient } from "../../integrations/stripe/stripe-client.ts";
import { rejection } from "../../testing/rejections.ts";
import type { AuthClaims } from "../auth/token-verifier.ts";
import { AccountService, ORPHAN_CUSTOMER_GRACE_MS } from "./account.service.ts";

// The service tier (docs/contributing.md "Add a test"): AccountService on a real database with the
// real repository and the Stripe SDK against the emulator (or an address where nothing listens).

let db: TestDatabase;
let emulator: StripeEmulator;
let stripe: Stripe;

beforeAll(async () => {
  [db, emulator] = await Promise.all([createTestDatabase(), startStripeEmulator({ port: 0 })]);
  stripe = createStripeClient({
    secretKey: "sk_test_account",
    publishableKey: "pk_test_account",
    apiBase: new URL(emulator.url),
  });
});
afterAll(async () => {
  await emulator?.close();
  await db?.close();
});

const serviceOn = (client: Stripe) =>
  new AccountService({
    accounts: new AccountsRepository(db),
    customers: createCustomerGateway(client),
    docsUrl: "http://localhost:3000/docs",
  });

const claims = (owner: { userId: string; organizationId: string; teamId: string }): AuthClaims => ({
  userId: owner.userId,
  organizationId: owner.organizationId,
  teamId: owner.teamId,
  scopes: new Set(["account:read", "account:write"]),
  timezone: undefined,
  exp: Math.floor(Date.now() / 1000) + 600,
  credential: { type: "token", id: owner.userId },
});

const validBody = { name: "Acme Networks", email: "billing@acme.example", address: { country: "DE" } };

describe("AccountService (service tier)", () => {
  it("creates the account with its processor customer; a second one is refused, changing nothing", async () => {
    const accounts = serviceOn(stripe);
    const owner = claims(await makeUser(db));
    const email = `billing-${crypto.randomUUID()}@acme.example`;
    const created = await accounts.create(owner, { ...validBody, email });
    const stored = (await new AccountsRepository(db).billingContext(owner.organizationId))?.account;
    expect(stored?.stripeCustomerId).toMatch(/^cus_/);
    const customer = (await stripe.customers.retrieve(stored?.stripeCustomerId ?? "")) as Stripe.Customer;
    expect(customer).toMatchObject({ name: "Acme Networks", email });
    expect(created).toMatchObject({ name: "Acme Networks" });
    const before = await databaseFingerprint(db);
    // Another body (the processor call's idempotency key would otherwise answer the first customer again).
    const second = await rejection(accounts.create(owner, { ...validBody, email, name: "Another Name" }));
    expect(second).toMatchObject({ code: "conflict", message: expect.stringMatching(/already has a billing account/) });
    expect(await databaseFingerprint(db)).toBe(before);
    // Nor at the processor: the refusal comes before a second customer is made.
    expect((await stripe.customers.list({ email })).data).toHaveLength(1);
  });

  it("creates exactly one account under concurrent creates", async () => {
    const accounts = serviceOn(stripe);
    const owner = claims(await makeUser(db));
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => accounts.create(owner, validBody)));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(
      results.filter((r) => r.status === "rejected" && (r.reason as { code?: string }).code === "conflict"),
    ).toHaveLength(4);
  });

  it("leaves one processor customer when concurrent creates carry different details (the losers' customers are deleted)", async () => {
    // Every create passes the "no account yet" check before any inserts: the processor's answers
    // are held until all four have asked, so the race is certain, not left to the scheduler.
    const gateway = createCustomerGateway(stripe);
    const racers = 4;
    let asked = 0;
    let release = () => {};
    const allAsked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const accounts = new AccountService({
      accounts: new AccountsRepository(db),
      customers: {
        ...gateway,
        createCustomer: async (input) => {
          if (++asked === racers) release();
          await allAsked;
          return gateway.createCustomer(input);
        },
      },
      docsUrl: "http://localhost:3000/docs",
    });
    const owner = claims(await makeUser(db));
    const emails = Array.from({ length: racers }, (_, i) => `race-${i}-${crypto.randomUUID()}@acme.example`);
    const results = await Promise.allSettled(emails.map((email) => accounts.create(owner, { ...validBody, email })));
    expect(asked).toBe(racers);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const stored = (await new AccountsRepository(db).billingContext(owner.organizationId))?.account;
    const live = (await Promise.all(emails.map((email) => stripe.customers.list({ email })))).flatMap((l) => l.data);
    expect(live.map((c) => c.id)).toEqual([stored?.stripeCustomerId]);
  });

  it("answers upstream_failed (502) naming the payment processor when it cannot be reached, and writes nothing", async () => {
    const unreachable = createStripeClient({
      secretKey: "sk_test_x",
      publishableKey: "pk_test_x",
      apiBase: new URL("http://127.0.0.1:9"),
    });
    const owner = claims(await makeUser(db));
    const before = await databaseFingerprint(db);
    const refused = await rejection(serviceOn(unreachable).create(owner, validBody));
    expect(refused).toMatchObject({
      code: "upstream_failed",
      status: 502,
      message: expect.stringMatching(/payment processor/),
    });
    expect(await databaseFingerprint(db)).toBe(before);
  });
});

/** The crash injected between the two steps: the next `crashes` inserts die before writing. */
class CrashingAccounts extends AccountsRepository {
  #crashes: number;
  constructor(database: TestDatabase, crashes: number) {
    super(database);
    this.#crashes = crashes;
  }
  override async insert(input: Parameters<AccountsRepository["insert"]>[0]) {
    if (this.#crashes-- > 0) throw new Error("killed between the customer and the account insert");
    return super.insert(input);
  }
}

describe("orphan processor customers (scheduled reconciliation)", () => {
  it("removes the customer of a create that crashed between the processor and the insert, and nothing else", async () => {
    const repository = new AccountsRepository(db);
    // The crash: the processor's customer exists, then the process dies before the account is stored.
    const crashing = new AccountService({
      accounts: new CrashingAccounts(db, 1),
      customers: createCustomerGateway(stripe),
      docsUrl: "http://localhost:3000/docs",
    });
    const crashed = claims(await makeUser(db));
    const orphanEmail = `orphan-${crypto.randomUUID()}@acme.example`;
    await expect(crashing.create(crashed, { ...validBody, email: orphanEmail })).rejects.toThrow(/killed/);
    const [orphan] = (await stripe.customers.list({ email: orphanEmail })).data;
    expect(orphan?.metadata).toMatchObject({ organization_id: crashed.organizationId });
    // A healthy account's customer, made at the same time.
    const healthy = claims(await makeUser(db));
    await serviceOn(stripe).create(healthy, { ...validBody, email: `kept-${crypto.randomUUID()}@acme.example` });
    const kept = (await repository.billingContext(healthy.organizationId))?.account?.stripeCustomerId ?? "";
    // A customer not made by this system (no organization id).
    const foreign = await stripe.customers.create({ email: `foreign-${crypto.randomUUID()}@acme.example` });

    const accounts = serviceOn(stripe);
    // Within the grace (an identical retry would still reuse it), nothing is removed.
    expect((await accounts.removeOrphanCustomers(new Date())).removed).toEqual([]);
    const later = new Date(Date.now() + ORPHAN_CUSTOMER_GRACE_MS + 60_000);
    const first = await accounts.removeOrphanCustomers(later);
    expect(first.removed).toEqual([orphan?.id]);
    expect(((await stripe.customers.retrieve(orphan?.id ?? "")) as { deleted?: boolean }).deleted).toBe(true);
    expect(((await stripe.customers.retrieve(kept)) as { deleted?: boolean }).deleted).toBeUndefined();
    expect(((await stripe.customers.retrieve(foreign.id)) as { deleted?: boolean }).deleted).toBeUndefined();
    // Done once: the next run finds nothing.
    expect((await accounts.removeOrphanCustomers(later)).removed).toEqual([]);
  });

  it("within the grace, an identical retry of the crashed create reuses its customer: nothing is left to remove", async () => {
    const flaky = new AccountService({
      accounts: new CrashingAccounts(db, 1),
      customers: createCustomerGateway(stripe),
      docsUrl: "http://localhost:3000/docs",
    });
    const owner = claims(await makeUser(db));
    const body = { ...validBody, email: `retry-${crypto.randomUUID()}@acme.example` };
    await expect(flaky.create(owner, body)).rejects.toThrow(/killed/);
    await flaky.create(owner, body);
    expect((await stripe.customers.list({ email: body.email })).data).toHaveLength(1);
    const later = new Date(Date.now() + ORPHAN_CUSTOMER_GRACE_MS + 60_000);
    expect((await serviceOn(stripe).removeOrphanCustomers(later)).removed).toEqual([]);
  });
});
