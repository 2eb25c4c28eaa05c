import { BillingMirror } from "../subscriptions/billing-mirror.ts";
import { createHash } from "node:crypto";
import {
  AccountsRepository,
  AdoptionsRepository,
  acquireJobEngine,
  acquireStatusFeed,
  type JobEngine,
  listRouterJobs,
  OemRepository,
  queryOf,
  RoutersRepository,
  routerJobsQueue,
  type StatusFeedHandle,
  SubscriptionsRepository,
  SYSTEM_ORIGIN,
  TunnelAddressesRepository,
} from "@fleet/db";
import {
  createTestDatabase,
  databaseFingerprint,
  makeAccount,
  makeChildOrganization,
  makeRouter,
  makeUser,
  type TestDatabase,
} from "@fleet/db/testing";
import {
  ManualClock,
  metadataBytes,
  parseTunnelNetwork,
  ROUTER_LIMITS,
  systemClock,
  type TListRoutersInput,
  type TRouterStatusEvent,
  type TunnelNetwork,
} from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { type StripeEmulator, startStripeEmulator } from "@fleet/stripe-emulator";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPaymentsGateway } from "../../integrations/stripe/payments-gateway.ts";
import { createStripeClient } from "../../integrations/stripe/stripe-client.ts";
import { createSubscriptionGateway } from "../../integrations/stripe/subscription-gateway.ts";
import { rejection } from "../../testing/rejections.ts";
import type { AuthClaims } from "../auth/token-verifier.ts";
import { BillingMirrorService } from "../subscriptions/billing-mirror.service.ts";
import { SubscriptionService } from "../subscriptions/subscription.service.ts";
import { AdoptionService } from "./adoption/adoption.service.ts";
import { RouterService } from "./routers.service.ts";

// The service tier (docs/contributing.md "Add a test"): RouterService called directly on a real
// database with the real migrations, repositories, job engine, status feed and subscription
// service (on the Stripe emulator); only time is faked.

let db: TestDatabase;
let engine: JobEngine;
let feed: StatusFeedHandle;
let emulator: StripeEmulator;
const T0 = new Date("2026-12-01T09:00:00Z");
const DAY_MS = 86_400_000;
const logger = pino({ level: "silent" });

beforeAll(async () => {
  [db, emulator] = await Promise.all([createTestDatabase(), startStripeEmulator({ port: 0 })]);
  engine = await acquireJobEngine(db);
  await engine.defineQueue(routerJobsQueue());
  feed = await acquireStatusFeed(db);
});
afterAll(async () => {
  await feed?.release();
  await engine?.stop();
  await emulator?.close();
  await db?.close();
});

const network = (cidr: string): TunnelNetwork => {
  const parsed = parseTunnelNetwork(cidr);
  if (typeof parsed === "string") throw new Error(parsed);
  return parsed;
};

/** The subscription check enrollment calls, as start-api wires it, on the Stripe emulator. */
const clearance = (trialRouters: number) => {
  const stripe = createStripeClient({
    secretKey: "sk_test_routers",
    publishableKey: "pk_test_routers",
    apiBase: new URL(emulator.url),
  });
  const mirror = new BillingMirror(db);
  const reconcile = {
    mirror,
    payments: createPaymentsGateway(stripe),
    subscriptions: createSubscriptionGateway(stripe),
    clock: systemClock,
  };
  return new SubscriptionService({
    db,
    accounts: new AccountsRepository(db),
    subscriptions: new SubscriptionsRepository(queryOf(db)),
    gateway: createSubscriptionGateway(stripe),
    docsUrl: "http://localhost:3000/docs",
    mirror,
    mirrorWrites: new BillingMirrorService({ repository: mirror, reconcile, clock: systemClock, onError: () => {} }),
    payments: createPaymentsGateway(stripe),
    trialRouters,
  });
};

/** A router service on its own tunnel network (tests sharing the database never share addresses) and clock. */
const service = (options: { cidr?: string; trialRouters?: number; quarantineDays?: number } = {}) => {
  const clock = new ManualClock(T0);
  const cidr = options.cidr ?? "100.64.0.0/10";
  const adoption = new AdoptionService({
    store: new AdoptionsRepository(queryOf(db)),
    db,
    clock,
    logger,
    feed: feed.feed,
    apiPublicUrl: () => "http://127.0.0.1:3000",
    heartbeatPublicUrl: () => "http://127.0.0.1:3001",
    agentPublicKey: () => undefined,
    intervalMs: 30_000,
    sshUser: "fleet",
    tunnelNetwork: cidr,
  });
  const routers = new RouterService({
    routers: new RoutersRepository(db),
    db,
    jobs: engine,
    clearance: clearance(options.trialRouters ?? 1_000),
    feed: feed.feed,
    clock,
    logger,
    oem: new OemRepository(queryOf(db)),
    adoption,
    tunnelNetwork: network(cidr),
    ...(options.quarantineDays === undefined ? {} : { quarantineDays: options.quarantineDays }),
  });
  return { routers, clock };
};

type Owner = Awaited<ReturnType<typeof makeUser>>;

const claims = (owner: Owner, scopes: string[] = ["routers:write"]): AuthClaims => ({
  userId: owner.userId,
  organizationId: owner.organizationId,
  teamId: owner.teamId,
  scopes: new Set(scopes),
  timezone: undefined,
  exp: Math.floor(T0.getTime() / 1000) + 3600,
  credential: { type: "token", id: owner.userId },
});
const operator = (owner: Owner) => claims(owner, ["routers:write", "tunnel:assign"]);

/** A user whose organization has a billing account (no card: the trial decides). */
const billedOwner = async () => {
  const owner = await makeUser(db);
  await makeAccount(db, owner.organizationId);
  return owner;
};

/** The SDK on the emulator, as the clearance's gateways use it. */
const billingStripe = () =>
  createStripeClient({
    secretKey: "sk_test_routers",
    publishableKey: "pk_test_routers",
    apiBase: new URL(emulator.url),
  });

/** A billing account whose processor customer has `paymentMethod` as its default card, mirrored; its customer id. */
const cardOnFile = async (owner: Owner, paymentMethod: string): Promise<string> => {
  const stripe = billingStripe();
  const customer = await stripe.customers.create({ email: `${crypto.randomUUID()}@example.com` });
  const account = await makeAccount(db, owner.organizationId, { stripeCustomerId: customer.id });
  const card = await stripe.paymentMethods.attach(paymentMethod, { customer: customer.id });
  await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: card.id } });
  const mirror = new BillingMirror(db);
  const reconcile = {
    mirror,
    payments: createPaymentsGateway(stripe),
    subscriptions: createSubscriptionGateway(stripe),
    clock: systemClock,
  };
  await new BillingMirrorService({ repository: mirror, reconcile, clock: systemClock, onError: () => {} }).reconcile([
    { id: account?.id ?? "", organizationId: owner.organizationId, stripeCustomerId: customer.id },
  ]);
  return customer.id;
};

const auditActions = async (routerId: string) =>
  (
    await db.query<{ action: string }>("select action from audit_log where target_id = $1 order by occurred_at", [
      routerId,
    ])
  ).map((row) => row.action);

describe("RouterService.enroll (service tier)", () => {
  it("stores the router in the team with only the hash of its heartbeat token, an assigned address and its audit entry", async () => {
    const { routers } = service();
    const owner = await billedOwner();
    const enrolled = await routers.enroll(claims(owner), owner.teamId, { name: "Office" }, SYSTEM_ORIGIN);
    expect(enrolled.router).toMatchObject({ has_pulse: false, last_seen: "never" });
    expect(enrolled.heartbeat_token).toMatch(/^hb_[A-Za-z0-9_-]{43}$/);
    const stored = await new RoutersRepository(db).findInTeam(owner.teamId, enrolled.router.id);
    expect(stored).toMatchObject({
      name: "Office",
      organizationId: owner.organizationId,
      tunnelIp: enrolled.tunnel_ip,
      createdAt: T0,
    });
    const [row] = await db.query<{ heartbeat_token_hash: string }>(
      "select heartbeat_token_hash from routers where id = $1",
      [enrolled.router.id],
    );
    expect(row?.heartbeat_token_hash).toBe(createHash("sha256").update(enrolled.heartbeat_token).digest("hex"));
    expect(enrolled.tunnel_ip).toMatch(/^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.\d{1,3}\.\d{1,3}$/);
    expect(await auditActions(enrolled.router.id)).toEqual(["router.enrolled"]);
  });

  it("refuses without a billing account at the billing root, naming the root for a child organization, changing nothing", async () => {
    const { routers } = service();
    const alone = await makeUser(db);
    const orphanRoot = await makeUser(db);
    const orphan = await makeChildOrganization(db, orphanRoot.organizationId);
    const before = await databaseFingerprint(db);
    const refused = await rejection(routers.enroll(claims(alone), alone.teamId, {}, SYSTEM_ORIGIN));
    expect(refused).toMatchObject({ code: "payment_required", message: expect.stringMatching(/billing account/) });

    const orphanClaims = { ...claims(orphanRoot), organizationId: orphan.organizationId, teamId: orphan.teamId };
    const child = await rejection(routers.enroll(orphanClaims, orphan.teamId, {}, SYSTEM_ORIGIN));
    expect(child).toMatchObject({
      code: "payment_required",
      message: expect.stringMatching(/top of this organization tree/),
    });
    expect(await databaseFingerprint(db)).toBe(before);

    // The same child under a billed root is cleared through the root's account.
    const root = await billedOwner();
    const billedChild = await makeChildOrganization(db, root.organizationId);
    const enrolled = await routers.enroll(
      { ...claims(root), organizationId: billedChild.organizationId, teamId: billedChild.teamId },
      billedChild.teamId,
      {},
      SYSTEM_ORIGIN,
    );
    expect(enrolled.router.id).toBeTruthy();
  });

  it("enrolls trial routers up to TRIAL_ROUTERS without a card and refuses the next, changing nothing", async () => {
    const { routers } = service({ trialRouters: 2 });
    const owner = await billedOwner();
    await routers.enroll(claims(owner), owner.teamId, {}, SYSTEM_ORIGIN);
    await routers.enroll(claims(owner), owner.teamId, {}, SYSTEM_ORIGIN);
    const before = await databaseFingerprint(db);
    const third = await rejection(routers.enroll(claims(owner), owner.teamId, {}, SYSTEM_ORIGIN));
    expect(third).toMatchObject({ code: "payment_required", extra: { trial_routers: 2 } });
    expect(await databaseFingerprint(db)).toBe(before);
    expect((await routers.list(owner.teamId)).data).toHaveLength(2);
  });

  it("enrolls nothing when the subscription's first charge fails (docs/billing.md, Failed payments)", async () => {
    const { routers } = service({ trialRouters: 0 });
    const owner = await makeUser(db);
    // pm_card_chargeCustomerFail attaches but declines every charge.
    await cardOnFile(owner, "pm_card_chargeCustomerFail");
    const refused = await rejection(routers.enroll(claims(owner), owner.teamId, { name: "edge" }, SYSTEM_ORIGIN));
    expect(refused).toMatchObject({ code: "payment_required", extra: { subscription_status: "incomplete" } });
    expect(refused.message).toMatch(/^The first charge of the subscription failed/);
    expect((await routers.list(owner.teamId)).data).toEqual([]);
    const rows = await db.query("select id from routers where organization_id = $1", [owner.organizationId]);
    expect(rows).toEqual([]);
  });

  it("bills every enrolled router, and a removal lowers the subscription's quantity", async () => {
    const { routers } = service({ trialRouters: 0 });
    const owner = await makeUser(db);
    const customerId = await cardOnFile(owner, "pm_card_visa");
    const first = await routers.enroll(claims(owner), owner.teamId, {}, SYSTEM_ORIGIN);
    await routers.enroll(claims(owner), owner.teamId, {}, SYSTEM_ORIGIN);
    const quantity = async () =>
      (await billingStripe().subscriptions.list({ customer: customerId })).data.map((s) => s.items.data[0]?.quantity);
    expect(await quantity()).toEqual([2]);
    await routers.remove(owner.teamId, first.router.id, SYSTEM_ORIGIN);
    expect(await quantity()).toEqual([1]);
  });

  it("lets only tunnel:assign choose tunnel_ip: inside the network, not the network or broadcast address, not a held one", async () => {
    const { routers } = service({ cidr: "10.77.0.0/28" });
    const owner = await billedOwner();
    const before = await databaseFingerprint(db);
    // The scope is judged first, even for an address outside the network.
    for (const tunnelIp of ["10.77.0.9", "1.2.3.4"]) {
      const forbidden = await rejection(
        routers.enroll(claims(owner), owner.teamId, { tunnel_ip: tunnelIp }, SYSTEM_ORIGIN),
      );
      expect(forbidden).toMatchObject({ code: "forbidden", message: expect.stringMatching(/tunnel:assign/) });
    }
    for (const tunnelIp of ["10.77.0.16", "127.0.0.1", "10.77.0.0", "10.77.0.15", "100.64.0.1"]) {
      const outside = await rejection(
        routers.enroll(operator(owner), owner.teamId, { tunnel_ip: tunnelIp }, SYSTEM_ORIGIN),
      );
      expect(outside.code, tunnelIp).toBe("validation_failed");
      expect(Object.keys(outside.fields ?? {}), tunnelIp).toEqual(["tunnel_ip"]);
    }
    expect(await databaseFingerprint(db)).toBe(before);
    // The first and last host addresses are inside (n), the broadcast above was not (n+1).
    const first = await routers.enroll(operator(owner), owner.teamId, { tunnel_ip: "10.77.0.1" }, SYSTEM_ORIGIN);
    const last = await routers.enroll(operator(owner), owner.teamId, { tunnel_ip: "10.77.0.14" }, SYSTEM_ORIGIN);
    expect([first.tunnel_ip, last.tunnel_ip]).toEqual(["10.77.0.1", "10.77.0.14"]);
    expect((await routers.metadata(owner.teamId, first.router.id)).tunnel_ip).toBe("10.77.0.1");
    // Held by a router of another organization: the address is still one router's.
    const other = await billedOwner();
    const held = await rejection(
      routers.enroll(operator(other), other.teamId, { tunnel_ip: "10.77.0.1" }, SYSTEM_ORIGIN),
    );
    expect(held).toMatchObject({ code: "conflict", message: expect.stringMatching(/10\.77\.0\.1 .*another router/) });
  });

  it("allocates a unique address to every router under concurrent enrollments, then answers capacity_exhausted", async () => {
    const { routers } = service({ cidr: "10.79.0.0/28" });
    const owner = await billedOwner();
    const hosts = Array.from({ length: 14 }, (_, i) => `10.79.0.${i + 1}`);
    const enrolled = await Promise.all(
      hosts.map((_, i) => routers.enroll(claims(owner), owner.teamId, { name: `r${i}` }, SYSTEM_ORIGIN)),
    );
    expect(new Set(enrolled.map((e) => e.tunnel_ip))).toEqual(new Set(hosts));
    const before = await databaseFingerprint(db);
    expect((await rejection(routers.enroll(claims(owner), owner.teamId, {}, SYSTEM_ORIGIN))).code).toBe(
      "capacity_exhausted",
    );
    expect(await databaseFingerprint(db)).toBe(before);
  });
});

describe("RouterService.remove (service tier)", () => {
  it("deletes the router with its audit entry and offboarding job, announces it, and answers not_found to another team", async () => {
    const { routers } = service();
    const owner = await billedOwner();
    const stranger = await billedOwner();
    const { router } = await routers.enroll(claims(owner), owner.teamId, {}, SYSTEM_ORIGIN);
    const before = await databaseFingerprint(db);
    for (const [teamId, routerId] of [
      [stranger.teamId, router.id],
      [owner.teamId, crypto.randomUUID()],
      [owner.teamId, "not-a-uuid"],
    ] as const) {
      expect((await rejection(routers.remove(teamId, routerId, SYSTEM_ORIGIN))).code).toBe("not_found");
    }
    expect(await databaseFingerprint(db)).toBe(before);

    const events: TRouterStatusEvent[] = [];
    const unsubscribe = feed.feed.subscribe((event) => {
      if (event.router_id === router.id) events.push(event);
    });
    try {
      await routers.remove(owner.teamId, router.id, SYSTEM_ORIGIN);
      await eventually(() => events.some((e) => e.type === "removed"), "the removal announced");
    } finally {
      unsubscribe();
    }
    expect((await routers.list(owner.teamId)).data).toEqual([]);
    expect(await auditActions(router.id)).toEqual(["router.enrolled", "router.removed"]);
    expect(await listRouterJobs(db, { routerId: router.id })).toMatchObject([
      { kind: "router.offboard", routerId: router.id, state: "created" },
    ]);
    expect((await rejection(routers.remove(owner.teamId, router.id, SYSTEM_ORIGIN))).code).toBe("not_found");
  });

  it("quarantines the removed router's address for exactly TUNNEL_ADDRESS_QUARANTINE_DAYS: refused to the operator, never allocated", async () => {
    const { routers, clock } = service({ cidr: "10.78.0.0/29", quarantineDays: 30 });
    const owner = await billedOwner();
    const removedAt = clock.now().getTime();
    const gone = await routers.enroll(operator(owner), owner.teamId, { tunnel_ip: "10.78.0.1" }, SYSTEM_ORIGIN);
    await routers.remove(owner.teamId, gone.router.id, SYSTEM_ORIGIN);
    const [row] = await db.query<{ quarantined_until: Date }>(
      "select quarantined_until from tunnel_addresses where tunnel_ip = '10.78.0.1'",
    );
    expect(new Date(row?.quarantined_until ?? 0).getTime()).toBe(removedAt + 30 * DAY_MS);

    // One millisecond before the end (n-1): still held, whoever asks; the allocator fills the other five.
    clock.set(new Date(removedAt + 30 * DAY_MS - 1));
    expect(
      (await rejection(routers.enroll(operator(owner), owner.teamId, { tunnel_ip: "10.78.0.1" }, SYSTEM_ORIGIN))).code,
    ).toBe("conflict");
    const allocated: string[] = [];
    for (let i = 0; i < 5; i++)
      allocated.push((await routers.enroll(claims(owner), owner.teamId, {}, SYSTEM_ORIGIN)).tunnel_ip);
    expect(allocated.sort()).toEqual(["10.78.0.2", "10.78.0.3", "10.78.0.4", "10.78.0.5", "10.78.0.6"]);
    expect((await rejection(routers.enroll(claims(owner), owner.teamId, {}, SYSTEM_ORIGIN))).code).toBe(
      "capacity_exhausted",
    );

    // At the end of the quarantine (n) the address is assignable again.
    clock.set(new Date(removedAt + 30 * DAY_MS));
    expect(
      (await routers.enroll(operator(owner), owner.teamId, { tunnel_ip: "10.78.0.1" }, SYSTEM_ORIGIN)).tunnel_ip,
    ).toBe("10.78.0.1");
  });

  it("frees the address at once when the offboarding job confirmed the device was cleaned", async () => {
    const { routers, clock } = service({ cidr: "10.76.0.0/29" });
    const owner = await billedOwner();
    const mine = await routers.enroll(operator(owner), owner.teamId, { tunnel_ip: "10.76.0.3" }, SYSTEM_ORIGIN);
    await routers.remove(owner.teamId, mine.router.id, SYSTEM_ORIGIN);
    expect(
      (await rejection(routers.enroll(operator(owner), owner.teamId, { tunnel_ip: "10.76.0.3" }, SYSTEM_ORIGIN))).code,
    ).toBe("conflict");
    // What the agent records when offboarding succeeded (test/routers/address-reuse.e2e.test.ts does it over SSH).
    expect(
      await new TunnelAddressesRepository(db).markOffboarded(queryOf(db), mine.router.id, clock.now()),
    ).not.toBeNull();
    expect(
      (await routers.enroll(operator(owner), owner.teamId, { tunnel_ip: "10.76.0.3" }, SYSTEM_ORIGIN)).tunnel_ip,
    ).toBe("10.76.0.3");
  });
});

describe("RouterService metadata and reads (service tier)", () => {
  it("fills slug and image URLs from the OEM catalogue for a known model; a user's image wins; an unknown model has none", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    const known = await makeRouter(db, owner, { model: "RB5009UG+S+", boardName: "RB5009UG+S+" });
    const product = await new OemRepository(queryOf(db)).findForRouter("RB5009UG+S+", "RB5009UG+S+");
    expect(product).not.toBeNull();
    const meta = await routers.metadata(owner.teamId, known.id);
    expect(meta).toMatchObject({ slug: product?.slug, model: "RB5009UG+S+" });
    if (product?.banner) expect(meta.banner_img).toBe(product.banner);
    if (product?.thumbnail) expect(meta.thumbnail_img).toBe(product.thumbnail);
    const own = "https://images.example.com/rack-7.png";
    expect(await routers.updateMetadata(owner.teamId, { router_id: known.id, banner_img: own })).toMatchObject({
      banner_img: own,
      slug: product?.slug,
    });

    const mystery = await makeRouter(db, owner, { model: "Mystery 9000", boardName: "" });
    const unknown = await routers.metadata(owner.teamId, mystery.id);
    expect(unknown).not.toHaveProperty("slug");
    expect(unknown).not.toHaveProperty("banner_img");
  });

  it("merges metadata keys, null removes one, `name` renames the router", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner, { name: "Branch" });
    await routers.updateMetadata(owner.teamId, {
      router_id: router.id,
      name: "Branch 7",
      floor: 3,
      lat: 52.5,
      lng: 13.4,
    });
    const after = await routers.updateMetadata(owner.teamId, { router_id: router.id, floor: null, lat: null });
    expect(after).toMatchObject({ name: "Branch 7", lng: 13.4 });
    expect(after).not.toHaveProperty("floor");
    expect(after).not.toHaveProperty("lat");
    expect((await new RoutersRepository(db).findInTeam(owner.teamId, router.id))?.name).toBe("Branch 7");
  });

  it("keeps at most 50 metadata keys after merging (n) and refuses the 51st (n+1), changing nothing", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    const keys = (prefix: string, count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}${i}`, i]));
    await routers.updateMetadata(owner.teamId, { router_id: router.id, ...keys("a", ROUTER_LIMITS.metadataKeys - 1) });
    await routers.updateMetadata(owner.teamId, { router_id: router.id, ...keys("b", 1) });
    const before = await databaseFingerprint(db);
    const tooMany = await rejection(routers.updateMetadata(owner.teamId, { router_id: router.id, ...keys("c", 1) }));
    expect(tooMany).toMatchObject({
      code: "validation_failed",
      fields: { body: [expect.stringMatching(/at most 50 keys/)] },
    });
    expect(await databaseFingerprint(db)).toBe(before);
    // Replacing a key and removing one stay within the limit.
    await routers.updateMetadata(owner.teamId, { router_id: router.id, a0: "x", a1: null, c0: 1 });
  });

  it("keeps at most 16384 bytes of metadata JSON after merging (n) and refuses a byte more (n+1), changing nothing", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    // Eight values of 1900 bytes, then one key that leaves exactly `room` bytes to the limit.
    const stored: Record<string, unknown> = {};
    for (let i = 0; i < 8; i++) {
      stored[`b${i}`] = "x".repeat(1_900);
      await routers.updateMetadata(owner.teamId, { router_id: router.id, [`b${i}`]: stored[`b${i}`] });
    }
    const room = ROUTER_LIMITS.metadataTotalBytes - metadataBytes({ ...stored, f: "" });
    expect(room).toBeGreaterThan(0);
    expect(room).toBeLessThan(ROUTER_LIMITS.metadataValueBytes);
    const before = await databaseFingerprint(db);
    const over = await rejection(
      routers.updateMetadata(owner.teamId, { router_id: router.id, f: "x".repeat(room + 1) }),
    );
    expect(over).toMatchObject({
      code: "validation_failed",
      fields: { body: [expect.stringMatching(/16384 bytes/)] },
    });
    expect(await databaseFingerprint(db)).toBe(before);
    await routers.updateMetadata(owner.teamId, { router_id: router.id, f: "x".repeat(room) });
  });

  it("answers not_found for another team's, an unknown and a malformed router id on every read and write, changing nothing", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    const stranger = await makeUser(db);
    const router = await makeRouter(db, owner);
    const before = await databaseFingerprint(db);
    for (const [teamId, routerId] of [
      [stranger.teamId, router.id],
      [owner.teamId, crypto.randomUUID()],
      [owner.teamId, "not-a-uuid"],
    ] as const) {
      for (const call of [
        () => routers.metadata(teamId, routerId),
        () => routers.updateMetadata(teamId, { router_id: routerId, name: "x" }),
        () => routers.metrics(teamId, routerId),
        () => routers.faults(teamId, routerId),
      ]) {
        expect(await rejection(call())).toMatchObject({ code: "not_found", message: "Router not found." });
      }
    }
    expect(await databaseFingerprint(db)).toBe(before);
    expect((await routers.list(stranger.teamId)).data.map((r) => r.id)).not.toContain(router.id);
  });
});

describe('RouterService list and get (docs/api.md "Listing a fleet")', () => {
  /** Every page of `input` at `limit`, following next_cursor to the end. */
  const allPages = async (
    routers: RouterService,
    teamId: string,
    limit: number,
    input: Omit<TListRoutersInput & object, "limit" | "cursor"> = {},
  ) => {
    const pages: string[][] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await routers.list(teamId, { ...input, limit, ...(cursor === undefined ? {} : { cursor }) });
      pages.push(page.data.map((r) => r.name));
      if (page.next_cursor === null) return pages;
      expect(page.next_cursor).toEqual(expect.any(String));
      cursor = page.next_cursor ?? undefined;
    }
  };

  /** `count` routers named `prefix-00001`... in one statement (enough rows to page without a slow setup). */
  const manyRouters = async (owner: Owner, count: number, prefix: string) => {
    await db.query(
      `with r as (
         insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
         select gen_random_uuid(), $1, $2, $3 || '-' || lpad(i::text, 5, '0'), md5(random()::text || i::text) || md5(i::text), now()
         from generate_series(1, $4::int) i returning id
       )
       insert into router_liveness (router_id, has_pulse) select id, false from r`,
      [owner.organizationId, owner.teamId, prefix, count],
    );
  };

  it("answers the whole team without limit, by name case-insensitively, carrying the enrollment name", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    for (const name of ["delta", "Bravo", "alpha", "", "Charlie"]) await makeRouter(db, owner, { name });
    const all = await routers.list(owner.teamId);
    expect(all).not.toHaveProperty("next_cursor");
    expect(all.data.map((r) => r.name)).toEqual(["", "alpha", "Bravo", "Charlie", "delta"]);
  });

  it("pages by name through ties, the last page's next_cursor null, the pages together the whole list", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    for (const name of ["e", "a", "c", "c", "C", "b", "d"]) await makeRouter(db, owner, { name });
    const whole = (await routers.list(owner.teamId)).data.map((r) => r.name);
    const pages = await allPages(routers, owner.teamId, 3);
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual(whole);
    const ids = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await routers.list(owner.teamId, { limit: 2, ...(cursor === undefined ? {} : { cursor }) });
      for (const r of page.data) ids.add(r.id);
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(ids.size).toBe(7);
    // A page that ends exactly at the last router says so.
    expect((await routers.list(owner.teamId, { limit: 7 })).next_cursor).toBeNull();
    expect((await routers.list(owner.teamId, { limit: 6 })).next_cursor).toEqual(expect.any(String));
  });

  it("pages 501 routers as 500 and 1 at limit 500", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    await manyRouters(owner, 501, "fleet");
    const first = await routers.list(owner.teamId, { limit: 500 });
    expect(first.data).toHaveLength(500);
    expect(first.data.at(-1)?.name).toBe("fleet-00500");
    const second = await routers.list(owner.teamId, { limit: 500, cursor: first.next_cursor ?? "" });
    expect(second.data.map((r) => r.name)).toEqual(["fleet-00501"]);
    expect(second.next_cursor).toBeNull();
    expect((await routers.list(owner.teamId)).data).toHaveLength(501);
  });

  it("searches identity, name, serial number, model and last-seen address as case-insensitive substrings", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    const byIdentity = await makeRouter(db, owner, { name: "r1", identity: "Core-GW" });
    const byName = await makeRouter(db, owner, { name: "Branch office" });
    const bySerial = await makeRouter(db, owner, { name: "r3", serialNumber: "HF2090SN" });
    const byModel = await makeRouter(db, owner, { name: "r4", model: "RB5009UG+S+IN" });
    const byAddress = await makeRouter(db, owner, { name: "r5", lastSeenFrom: "203.0.113.77" });
    const literal = await makeRouter(db, owner, { name: "100%_off" });
    const ids = async (q: string) => (await routers.list(owner.teamId, { q })).data.map((r) => r.id);
    expect(await ids("core-gw")).toEqual([byIdentity.id]);
    expect(await ids("BRANCH")).toEqual([byName.id]);
    expect(await ids("2090sn")).toEqual([bySerial.id]);
    expect(await ids("5009ug")).toEqual([byModel.id]);
    expect(await ids("113.77")).toEqual([byAddress.id]);
    // LIKE's wildcards are literal characters in q.
    expect(await ids("%_")).toEqual([literal.id]);
    expect(await ids("0_o")).toEqual([]);
    expect(await ids("nothing-like-it")).toEqual([]);
    const paged = await routers.list(owner.teamId, { q: "r", limit: 2 });
    expect(paged.data.map((r) => r.name)).toEqual(["Branch office", "r1"]);
  });

  it("filters by status online and offline", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    const up = await makeRouter(db, owner, { name: "up", hasPulse: true });
    const down = await makeRouter(db, owner, { name: "down", hasPulse: false });
    // A router that never sent a heartbeat has no liveness row: offline.
    const enrolled = await makeRouter(db, owner, { name: "new" });
    await db.query("delete from router_liveness where router_id = $1", [enrolled.id]);
    expect(await routers.counts(owner.teamId)).toEqual({ total: 3, online: 1, offline: 2 });
    expect((await routers.list(owner.teamId, { status: "online" })).data.map((r) => r.id)).toEqual([up.id]);
    expect((await routers.list(owner.teamId, { status: "offline" })).data.map((r) => r.id)).toEqual([
      down.id,
      enrolled.id,
    ]);
  });

  it("sorts by last_seen, most recent first and never seen last, paging through equal times", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    const at = (ms: number) => new Date(T0.getTime() - ms);
    await makeRouter(db, owner, { name: "old", lastSeenAt: at(60_000) });
    await makeRouter(db, owner, { name: "never-1", lastSeenAt: null });
    await makeRouter(db, owner, { name: "recent", lastSeenAt: at(1_000) });
    await makeRouter(db, owner, { name: "same-a", lastSeenAt: at(5_000) });
    await makeRouter(db, owner, { name: "same-b", lastSeenAt: at(5_000) });
    await makeRouter(db, owner, { name: "never-2", lastSeenAt: null });
    const whole = (await routers.list(owner.teamId, { sort: "last_seen" })).data.map((r) => r.name);
    expect(whole.slice(0, 1)).toEqual(["recent"]);
    expect(new Set(whole.slice(1, 3))).toEqual(new Set(["same-a", "same-b"]));
    expect(whole.slice(3, 4)).toEqual(["old"]);
    expect(new Set(whole.slice(4))).toEqual(new Set(["never-1", "never-2"]));
    for (const limit of [1, 2, 4]) {
      expect((await allPages(routers, owner.teamId, limit, { sort: "last_seen" })).flat()).toEqual(whole);
    }
    // Times a microsecond apart: a cursor rounded to the millisecond would skip or repeat one.
    const micro = await makeUser(db);
    for (const name of ["m0", "m1", "m2"]) await makeRouter(db, micro, { name, lastSeenAt: at(2_000) });
    await db.query(
      `update router_liveness l set last_seen_at = l.last_seen_at + (right(r.name, 1)::int * interval '1 microsecond')
       from routers r where r.id = l.router_id and r.team_id = $1`,
      [micro.teamId],
    );
    expect((await allPages(routers, micro.teamId, 1, { sort: "last_seen" })).flat()).toEqual(["m2", "m1", "m0"]);
  });

  it("refuses a cursor it did not hand out, or one of another sort, naming cursor", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    for (const name of ["a", "b", "c"]) await makeRouter(db, owner, { name });
    const byName = await routers.list(owner.teamId, { limit: 1 });
    const nul = Buffer.from(JSON.stringify(["name", "a\u0000", crypto.randomUUID()])).toString("base64url");
    const badId = Buffer.from(JSON.stringify(["name", "a", "not-a-uuid"])).toString("base64url");
    const badTime = Buffer.from(JSON.stringify(["last_seen", "1e9", crypto.randomUUID()])).toString("base64url");
    for (const [cursor, sort] of [
      ["garbage", undefined],
      ["", undefined],
      [nul, undefined],
      [badId, undefined],
      [badTime, "last_seen"],
      [byName.next_cursor ?? "", "last_seen"],
    ] as const) {
      const refused = await rejection(routers.list(owner.teamId, { limit: 1, cursor, ...(sort ? { sort } : {}) }));
      expect(refused).toMatchObject({ code: "validation_failed", fields: { cursor: [expect.any(String)] } });
    }
  });

  it("never shows another team's routers, and get answers one router of the team or not_found", async () => {
    const { routers } = service();
    const owner = await makeUser(db);
    const stranger = await makeUser(db);
    const mine = await makeRouter(db, owner, { name: "shared-name", identity: "gw" });
    const theirs = await makeRouter(db, stranger, { name: "shared-name", identity: "gw" });
    expect((await routers.list(owner.teamId, { q: "shared" })).data.map((r) => r.id)).toEqual([mine.id]);
    // A cursor only names a position: followed in another team it pages that team alone.
    const page = await routers.list(stranger.teamId, { limit: 1 });
    expect(page.data.map((r) => r.id)).toEqual([theirs.id]);
    expect(page.next_cursor).toBeNull();
    const cursor = Buffer.from(JSON.stringify(["name", "", crypto.randomUUID()])).toString("base64url");
    expect((await routers.list(stranger.teamId, { limit: 5, cursor })).data.map((r) => r.id)).toEqual([theirs.id]);
    expect(await routers.get(owner.teamId, mine.id)).toMatchObject({
      id: mine.id,
      name: "shared-name",
      identity: "gw",
    });
    for (const [teamId, routerId] of [
      [owner.teamId, theirs.id],
      [owner.teamId, crypto.randomUUID()],
      [owner.teamId, "not-a-uuid"],
    ] as const) {
      expect(await rejection(routers.get(teamId, routerId))).toMatchObject({ code: "not_found" });
    }
  });
});
