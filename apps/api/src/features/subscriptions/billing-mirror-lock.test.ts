import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MirrorCard } from "@fleet/db";
import { createTestDatabase, lockWaiters, makeAccount, makeUser, type TestDatabase } from "@fleet/db/testing";
import { BillingMirror } from "./billing-mirror.ts";

// The mirror's writers of one account: the API's own write after a card is saved and the
// processor's events about that same change arrive together (docs/billing.md "Billing mirror").

let db: TestDatabase;
let mirror: BillingMirror;

beforeAll(async () => {
  db = await createTestDatabase();
  mirror = new BillingMirror(db);
});
afterAll(async () => {
  await db?.close();
});

const card = (id: string, createdMs: number): MirrorCard => ({
  id,
  type: "card",
  brand: "visa",
  last4: "4242",
  expMonth: 12,
  expYear: 2031,
  created: new Date(createdMs),
});

/** An organization with a billing account. */
const accountHolder = async () => {
  const user = await makeUser(db);
  const account = await makeAccount(db, user.organizationId);
  if (!account) throw new Error("the account was not created");
  return { user, account };
};

const defaults = async (accountId: string) =>
  (
    await db.query<{ id: string }>(
      "select id from billing_payment_methods where account_id = $1 and is_default order by id",
      [accountId],
    )
  ).map((r) => r.id);

describe("writers of one account's mirror", () => {
  it("an account transaction and an event's transaction both find their account", async () => {
    const { user, account } = await accountHolder();
    const first = card(`pm_${crypto.randomUUID()}`, 1_000);
    await mirror.accountTransaction(account.id, async (writer) => {
      await writer.upsertCard(account.id, first, new Date());
      await writer.setDefaultCard(account.id, first.id);
    });
    const found = await mirror.transaction((writer) => writer.accountByCustomer(account.stripeCustomerId));
    expect(found).toEqual({
      id: account.id,
      organizationId: user.organizationId,
      stripeCustomerId: account.stripeCustomerId,
    });
    expect(await defaults(account.id)).toEqual([first.id]);
  });

  // Two connections at once: PostgreSQL only (PGlite has one, so nothing can interleave there).
  it.runIf(process.env.DATABASE_URL)(
    "a saved card's write and the processor's event of the new default run one after the other, without a deadlock",
    async () => {
      const { account } = await accountHolder();
      const first = card(`pm_a_${crypto.randomUUID()}`, 1_000);
      const second = card(`pm_b_${crypto.randomUUID()}`, 2_000);
      await mirror.accountTransaction(account.id, async (writer) => {
        for (const c of [first, second]) await writer.upsertCard(account.id, c, new Date());
        await writer.setDefaultCard(account.id, first.id);
      });

      // The API's write: the second card's row first, then the default moves to it.
      let upserted = false;
      let proceed = () => {};
      const held = new Promise<void>((resolve) => {
        proceed = resolve;
      });
      const save = mirror.accountTransaction(account.id, async (writer) => {
        await writer.upsertCard(account.id, second, new Date());
        upserted = true;
        await held;
        await writer.setDefaultCard(account.id, second.id);
      });
      await eventually(() => upserted, "the save's card write");
      // The processor's customer.updated about the same change: it would lock the first card, then
      // wait for the second, while the save waits for the first.
      const event = mirror.transaction(async (writer) => {
        const found = await writer.accountByCustomer(account.stripeCustomerId);
        if (!found) throw new Error("no account");
        await writer.setDefaultCard(found.id, second.id);
      });
      await eventually(async () => (await lockWaiters(db)) === 1, "the event's transaction waiting");
      proceed();
      await expect(save).resolves.toBeUndefined();
      await expect(event).resolves.toBeUndefined();
      expect(await defaults(account.id)).toEqual([second.id]);
    },
  );
});
